// `npm run test:conformance`: the MCP conformance suite against our server (test/conformance/),
// under Node 22 or later with the suite installed; .ci/run provides both.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/conformance/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
