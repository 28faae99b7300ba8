import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time: most files wait on servers, timers and child processes, not on the CPU.
    // Vitest's default on 2 cores is one (cores - 1), which ran the suite one file after another
    // in 22.5 min; two took 13.1 min in the same clone.
    maxWorkers: 2,
    setupFiles: ['test/harness/guard.ts'],
  },
});
