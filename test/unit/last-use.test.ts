// "Last used" is written once a minute per key: also with more distinct keys in a minute than a
// small memory would hold (10,000 clients' secrets and grants), a key written is not written again.
import { describe, expect, it } from 'vitest';
import { lastUseRecorder } from '../../src/storage/last-use.ts';
import type { Db } from '../../src/storage/db.ts';

describe('last use', () => {
  it('writes each key once a minute, in batches, with 20,000 distinct keys', async () => {
    const written: string[] = [];
    const recorder = lastUseRecorder<number>(async (_db, uses) => void written.push(...uses.keys()));
    const db = {} as Db; // only a key here: the write function above never touches it
    const keys = Array.from({ length: 20_000 }, (_, i) => `grant-${i}`);
    for (const key of keys) void recorder.record(db, key, 1);
    await recorder.flush(db);
    expect(written).toHaveLength(20_000);
    for (const key of keys) void recorder.record(db, key, 2); // within the minute: nothing to write
    await recorder.flush(db);
    expect(written).toHaveLength(20_000);
  });
});
