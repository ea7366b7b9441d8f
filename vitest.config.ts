import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/build-once.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // PGlite takes ~1 GiB while opening: two files at a time on the 2-core machines.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
