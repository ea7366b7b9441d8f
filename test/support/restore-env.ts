// vitest setupFile: test files share a worker process (isolate: false in vitest.config.ts), so what
// a file changes in process.env or the working directory is undone when it ends, before the next.
import { afterAll, vi } from 'vitest';

const env = { ...process.env };
const cwd = process.cwd();

afterAll(() => {
  vi.unstubAllEnvs();
  for (const name of Object.keys(process.env)) if (!(name in env)) delete process.env[name];
  Object.assign(process.env, env);
  if (process.cwd() !== cwd) process.chdir(cwd);
});
