import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/cluster/**', 'test/conformance/**', '**/node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The server and the operator CLI bundled once for the child processes tests start (test/support/processes.ts).
    globalSetup: ['test/support/process-bundle.ts'],
    // Most of a test's time is spent waiting on sockets, databases and child processes, so more
    // files run at once than there are cores (2 here). Tests wait for conditions, never for a
    // fixed time (test/unit/no-fixed-waits.test.ts), so load does not make them fail.
    maxWorkers: 4,
    // A worker keeps the modules it loaded for its next file: loading the server's modules took
    // ~1.8 s of CPU per file. Files share no state: each makes its own database, Redis prefix,
    // users and clients (docs/testing.md).
    isolate: false,
  },
});
