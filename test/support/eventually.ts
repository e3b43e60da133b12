// Waiting for a condition, never for a fixed time: a test that sleeps is slow where the machine is
// fast and flaky where it is slow. test/unit/no-fixed-waits.test.ts keeps fixed waits out.
import { vi } from 'vitest';

export interface EventuallyOptions {
  /** How long the condition may take before the test fails with the check's last error (ms). */
  timeout?: number;
  /** Pause between two checks (ms). */
  interval?: number;
}

/**
 * Runs `check` until it returns without throwing (an `expect` that passes, or a value), then
 * returns what it returned; after `timeout` the test fails with the check's last error. Real time
 * (vitest's `vi.waitFor`), so it works beside a test clock too.
 */
export function eventually<T>(check: () => T | Promise<T>, { timeout = 10_000, interval = 20 }: EventuallyOptions = {}): Promise<T> {
  return vi.waitFor(check, { timeout, interval });
}

/**
 * `read()` once `ok` holds for it; after `timeout` an error naming `what` and the last value read.
 * An error thrown by `read()` itself ends the wait at once.
 */
export async function until<T>(what: string, read: () => T | Promise<T>, ok: (value: T) => boolean, timeout = 15_000): Promise<T> {
  let last: T | undefined;
  let failed: { error: unknown } | undefined;
  try {
    await eventually(async () => {
      try {
        last = await read();
      } catch (error) {
        failed = { error };
        return;
      }
      if (!ok(last)) throw new Error('not yet');
    }, { timeout, interval: 50 });
  } catch {
    throw new Error(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
  }
  if (failed) throw failed.error;
  return last as T;
}
