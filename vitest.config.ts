import os from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/cluster/**', '**/node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is one file per core less one: a single file at a time on the 2-core build
    // machines, where most files spend their time waiting on real servers and timers. Two at a time
    // there took the suite from 648 s to 415 s (three: 431 s). Each file has its own database and
    // Redis prefix (docs/testing.md), so files may run side by side.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
  },
});
