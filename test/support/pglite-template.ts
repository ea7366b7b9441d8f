// vitest globalSetup: makes the PGlite template (src/server/store/pglite-template.ts) in the test
// run's cache directory once, before any test file starts, so that files starting at once do not
// each make it. It is made as any first in-memory database makes it, in a process of its own (the
// PGlite memory it takes stays out of vitest's). Test files then start their databases from it, as
// a user's later databases do; test/integration/store.test.ts covers making it with an empty cache.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { schemaTemplateFile } from '../../src/server/store/db.js';

export default function setup(): void {
  if (existsSync(schemaTemplateFile())) return;
  const code = "const { openStore } = await import('./src/server/store/db.ts'); await (await openStore({})).close();";
  execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: 'inherit', env: process.env });
}
