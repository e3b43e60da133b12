// Waiting for a server's change feed to catch up. A process hears its own announcements twice: at
// once, and again when PostgreSQL delivers the notification at commit. A test that counts reads
// after a change must wait for the second, or the late echo drops the cache it is measuring.
import { expect } from 'vitest';
import type { Db } from '../../src/storage/db.ts';
import type { RecordCache } from '../../src/storage/record-cache.ts';
import { eventually } from './eventually.ts';

const CHANNEL = 'oauth_record_changes';

/**
 * Until `records` has heard every change notified so far: a notification of a client that does
 * not exist, sent now, is delivered after them (one channel, in commit order).
 */
export async function feedCaughtUp(db: Db, records: Pick<RecordCache, 'onChange'>): Promise<void> {
  const marker = `marker-${Math.random().toString(36).slice(2)}`;
  let heard = false;
  records.onChange((kind, id) => void (kind === 'client' && id === marker && (heard = true)));
  await db.raw('select pg_notify(?, ?)', [CHANNEL, `client:${marker}`]);
  await eventually(() => expect(heard, 'the change feed delivers its marker').toBe(true), { interval: 5 });
}
