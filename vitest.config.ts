import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One file at a time (vitest's default on 2 cores, said here on purpose). Two at a time took
    // 13 min instead of 22.5, but each of two such runs failed a test that waits on timing under
    // load (a terminal --wait test, since mended; a MariaDB semi-synchronous replication test):
    // the suite goes parallel once those are made robust to it.
    maxWorkers: 1,
    setupFiles: ['test/harness/guard.ts'],
  },
});
