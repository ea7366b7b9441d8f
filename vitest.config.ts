import path from 'node:path';
import { defineConfig } from 'vitest/config';

// New PGlite databases start as a copy of a template kept here (src/server/store/pglite-template.ts),
// made once per checkout (test/support/pglite-template.ts), rather than in the user's cache. Set in
// this process so that the workers and every process a test starts inherit it.
process.env.AGENTCTL_CACHE_DIR ??= path.resolve('node_modules/.cache/agentctl');

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/build-once.ts', 'test/support/pglite-template.ts'],
    // Files run one after another in each worker, sharing what is loaded (PGlite's compiled
    // WebAssembly above all): ~1.9 s of CPU a file less than a fresh process each. A file's changes
    // to process.env and the working directory are undone after it (restore-env.ts).
    isolate: false,
    setupFiles: ['test/support/restore-env.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // PGlite takes ~1 GiB while opening: two files at a time on the 2-core machines.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
