// vitest globalSetup: `npm test` on a fresh clone builds what the tests run (the CLI binary, the
// ADK bundle agents import) once, before any test file starts, instead of racing to build it.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export default function setup(): void {
  if (existsSync('dist/agentctl.js') && existsSync('dist/adk/index.js')) return;
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
}
