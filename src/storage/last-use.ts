// "Last used" times — of a grant, of a client secret — are informational, so recording them costs
// the token endpoint next to nothing: this process skips keys it recorded within the minute, and
// the uses it does record are written together, one statement for all of them at most every
// FLUSH_MS (the statement also skips rows another instance wrote within the minute). Nobody waits
// for the write. A crash loses at most those few hundred milliseconds of "last used".
import type { Db } from './db.ts';
import type { Clock } from '../clock.ts';
import { POLICY } from '../settings.ts';

const INTERVAL_MS = 60_000;
const FLUSH_MS = 250;
// Keys remembered as written within the minute: beyond this many (a minute with more distinct
// grants or secrets than that), the oldest are forgotten first and may be written again. Each
// recorder keeps its own (about 100 bytes a key).
const MAX_REMEMBERED = POLICY.LAST_USE_REMEMBERED.value;

export interface LastUse<T> {
  /** Records a use of `key`; resolves once it is written with the others of its batch. */
  record(key: string, use: T): Promise<void>;
  /** Writes what is waiting now (at shutdown). */
  flush(): Promise<void>;
}

/**
 * A recorder for one database (system.ts builds one per kind of use). `write` stores one batch:
 * the uses by key, each the first of its key in its minute here; `clock` tells the minute. The
 * batch's short wait stays on real time: it only gathers the uses of the same moment.
 */
export function lastUseRecorder<T>(db: Db, write: (db: Db, uses: Map<string, T>) => Promise<void>, clock: Clock): LastUse<T> {
  const lastWritten = new Map<string, number>();
  let batch: { uses: Map<string, T>; written: Promise<void> } | undefined;

  // The map is in the order of writing (a key is deleted before it is set again): the oldest first.
  function forgetOld(now: number): void {
    for (const [key, at] of lastWritten) {
      if (now - at < INTERVAL_MS && lastWritten.size < MAX_REMEMBERED) break;
      lastWritten.delete(key);
    }
  }

  return {
    record(key, use) {
      const now = clock.now();
      if (now - (lastWritten.get(key) ?? 0) < INTERVAL_MS) return Promise.resolve();
      lastWritten.delete(key);
      if (lastWritten.size >= MAX_REMEMBERED) forgetOld(now);
      lastWritten.set(key, now);
      if (!batch) {
        const uses = new Map<string, T>();
        const written = new Promise<void>((resolve) => setTimeout(resolve, FLUSH_MS).unref()).then(() => {
          if (batch?.uses === uses) batch = undefined;
          return uses.size ? write(db, uses) : undefined;
        });
        batch = { uses, written };
      }
      batch.uses.set(key, use);
      return batch.written;
    },

    async flush() {
      if (!batch) return;
      const uses = new Map(batch.uses);
      batch.uses.clear(); // the timer's write then finds nothing
      batch = undefined;
      if (uses.size) await write(db, uses);
    },
  };
}
