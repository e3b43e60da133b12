// `npm start` as people type it: it serves, and stops on a signal; in production on development
// defaults, a clear message and a non-zero exit. (Other tests start the server bundled:
// test/support/processes.ts.)
import { afterAll, beforeAll, describe, it, expect } from 'vitest';
import { SERVER, startServerProcess } from './support/processes.ts';
import { createTestDatabase, type TestDatabase } from './support/services.ts';

describe('configuration at start', () => {
  let pg: TestDatabase;
  beforeAll(async () => {
    pg = await createTestDatabase();
  });
  afterAll(() => pg?.drop());

  it('`npm start` serves, and stops on SIGTERM with every process it started', async () => {
    const server = await startServerProcess({ DATABASE_URL: pg.url, LOG_LEVEL: 'info' }, 60_000, undefined, SERVER.npm);
    expect(server.output()).toMatch(/^> tsx src\/main\.ts$/m); // the script people run, not the bundle
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    await server.stop(); // resolves once the output pipes close: no process of npm's is left holding them
    expect(server.output()).toMatch(/shutting down: finishing in-flight requests/);
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  }, 60_000);

  it('makes `npm start` in production exit with a clear message instead of starting on defaults', async () => {
    const failed = await startServerProcess({ NODE_ENV: 'production' }).then(
      () => 'started',
      (err: Error) => err.message,
    );
    expect(failed).toMatch(/exited with 1/);
    expect(failed).toMatch(/Configuration error: NODE_ENV=production refuses development defaults; set DATABASE_URL .* and COOKIE_KEYS/);
  });
});
