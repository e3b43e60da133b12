// The record cache keeps records, not the requests that read them: a promise made inside a request
// carries the request's async context (oidc-provider runs every request in an AsyncLocalStorage),
// and a cached promise kept that whole request alive for as long as the record stayed cached.
import { AsyncLocalStorage } from 'node:async_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import knex from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordCache, type RecordCache } from '../../src/storage/record-cache.ts';
import type { Db } from '../../src/storage/db.ts';
import { eventually } from '../support/eventually.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

// Never connects: the reads here are the test's own. Without a database URL the feed is live at once.
const db = knex({ client: 'pg' }) as unknown as Db;
let records: RecordCache;
beforeAll(async () => {
  records = await startRecordCache(db, undefined);
});
afterAll(async () => {
  await records.close();
  await db.destroy();
});

const requests = new AsyncLocalStorage<object>();

/** Reads `id` inside a request of its own; a weak reference to that request. */
async function readInRequest(id: string, record: object): Promise<{ request: WeakRef<object>; read: unknown }> {
  const request = { body: Buffer.alloc(1 << 20) };
  const read = await requests.run(request, () => records.read('client', id, async () => record));
  return { request: new WeakRef(request), read };
}

/** Whether the referenced object is collected within a second (a WeakRef holds it to the end of the job that made it). */
const collected = (ref: WeakRef<object>): Promise<boolean> =>
  eventually(() => {
    gc();
    // Not expect(ref.deref()): a failed check's error would hold the object.
    if (ref.deref() !== undefined) throw new Error('not collected yet');
  }, { timeout: 1000 }).then(() => true, () => false);

describe('the record cache', () => {
  it('keeps the record, not the request that read it', async () => {
    const record = { clientId: 'c1' };
    const { request, read } = await readInRequest('c1', record);
    expect(read).toBe(record);
    expect(await collected(request)).toBe(true);
    // Still cached: the same object, without a read.
    expect(await records.read('client', 'c1', async () => ({ clientId: 'read again' }))).toBe(record);
  });

  it('shares a read on its way with the callers that come meanwhile, then serves the record', async () => {
    let reads = 0;
    let finishRead = () => {};
    const onItsWay = new Promise<void>((resolve) => (finishRead = resolve));
    const load = async () => {
      reads += 1;
      await onItsWay;
      return { clientId: 'c2' };
    };
    const both = Promise.all([records.read('client', 'c2', load), records.read('client', 'c2', load)]);
    finishRead();
    const [first, second] = await both;
    expect(second).toBe(first);
    expect(await records.read('client', 'c2', load)).toBe(first);
    expect(reads).toBe(1);
  });

  it('does not keep a failed read', async () => {
    await expect(records.read('client', 'c3', async () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(await records.read('client', 'c3', async () => ({ clientId: 'c3' }))).toEqual({ clientId: 'c3' });
  });
});
