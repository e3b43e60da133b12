// Shared setup of the operator-script tests: a per-file PostgreSQL database, the scripts run
// in-process against it with --json, and the CONTRACT 5 refusal shape.
import { afterAll, beforeAll, expect } from 'vitest';
import { admin as runAdmin, type CliResult } from './processes.ts';
import { createTestDatabase, type TestDatabase } from './services.ts';
import { escapeUnsafeText } from '../../src/text.ts';

export interface AdminCli {
  /** The test database (available inside tests). */
  readonly pg: TestDatabase;
  /** The environment the scripts run with. */
  readonly env: Record<string, string>;
  /** `npm run --silent admin -- --json …`, in this process. */
  json(...args: string[]): Promise<CliResult>;
}

export function useAdminCli(): AdminCli {
  let pg: TestDatabase;
  beforeAll(async () => {
    pg = await createTestDatabase();
  });
  afterAll(() => pg?.drop());
  return {
    get pg() {
      return pg;
    },
    get env() {
      return { DATABASE_URL: pg.url };
    },
    json: (...args) => runAdmin(['--json', ...args], { DATABASE_URL: pg.url }),
  };
}

/**
 * A refusal: non-zero exit, one line on stderr giving the reason and, with --json, the same
 * reason as the one document on stdout ({"error": {"message"}}); without --json, nothing there.
 */
export function expectRefusal(result: CliResult, reason: RegExp): void {
  expect(result.code).not.toBe(0);
  const lines = result.stderr.trim().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(reason);
  if (result.stdout !== '') {
    const { message } = JSON.parse(result.stdout).error;
    expect(JSON.parse(result.stdout)).toEqual({ error: { message: expect.any(String) } });
    expect(lines[0]).toBe(`error: ${escapeUnsafeText(message)}`);
  }
}
