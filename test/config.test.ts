// `npm start` in production on development defaults: a clear message and a non-zero exit.
import { describe, it, expect } from 'vitest';
import { startServerProcess } from './support/processes.ts';

describe('configuration at start', () => {
  it('makes `npm start` in production exit with a clear message instead of starting on defaults', async () => {
    const failed = await startServerProcess({ NODE_ENV: 'production' }).then(
      () => 'started',
      (err: Error) => err.message,
    );
    expect(failed).toMatch(/exited with 1/);
    expect(failed).toMatch(/Configuration error: NODE_ENV=production refuses development defaults; set DATABASE_URL .* and COOKIE_KEYS/);
  });
});
