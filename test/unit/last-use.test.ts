// "Last used" is written once a minute per key: also with more distinct keys in a minute than a
// small memory would hold (10,000 clients' secrets and grants), a key written is not written again.
import { describe, expect, it } from 'vitest';
import { lastUseRecorder } from '../../src/storage/last-use.ts';
import type { Db } from '../../src/storage/db.ts';
import { systemClock } from '../../src/clock.ts';

describe('last use', () => {
  it('writes each key once a minute, in batches, with 20,000 distinct keys', async () => {
    const written: string[] = [];
    const db = {} as Db; // handed to the write function below, which never touches it
    const recorder = lastUseRecorder<number>(db, async (_db, uses) => void written.push(...uses.keys()), systemClock);
    const keys = Array.from({ length: 20_000 }, (_, i) => `grant-${i}`);
    for (const key of keys) void recorder.record(key, 1);
    await recorder.flush();
    expect(written).toHaveLength(20_000);
    for (const key of keys) void recorder.record(key, 2); // within the minute: nothing to write
    await recorder.flush();
    expect(written).toHaveLength(20_000);
  });
});
