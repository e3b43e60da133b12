// The record cache drops a changed record twice: when the change is announced (inside its
// transaction) and again at commit. Between the two, a read outside the transaction still sees
// the old row and may cache it; only the drop at commit keeps that copy from being served as
// current afterwards. Real PostgreSQL, a transaction whose commit the test holds back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordCache, type RecordCache } from '../src/storage/record-cache.ts';
import { createTestDatabase, type TestDatabase } from './support/services.ts';

let pg: TestDatabase;
let records: RecordCache;

beforeAll(async () => {
  pg = await createTestDatabase({ migrate: false });
  await pg.db.raw('create table late_commit (id text primary key, name text not null)');
  // No database URL: no LISTEN connection, so the only drops are this process's own (as on the
  // embedded PGlite, where this process is the only writer).
  records = await startRecordCache(pg.db, undefined);
});
afterAll(async () => {
  await records?.close();
  await pg?.drop();
});

const read = (id: string) => records.read('client', id, async () => ((await pg.db('late_commit').where('id', id).first('name')) as { name: string }).name);

describe('the record cache and a commit that completes late', () => {
  it('serves the committed record after the commit, though the old one was read and cached between the change and its commit', async () => {
    await pg.db('late_commit').insert({ id: 'c1', name: 'old' });
    expect(await read('c1')).toBe('old'); // cached

    let changed!: () => void;
    const announced = new Promise<void>((resolve) => (changed = resolve));
    let commit!: () => void;
    const mayCommit = new Promise<void>((resolve) => (commit = resolve));
    const transaction = pg.db.transaction(async (trx) => {
      await trx('late_commit').where('id', 'c1').update({ name: 'new' });
      await records.announce(trx, 'client', 'c1'); // drops the cached copy now
      changed();
      await mayCommit; // the commit is late
    });

    await announced;
    // A read between the change and its commit sees the old row (not yet committed) and caches it.
    expect(await read('c1')).toBe('old');
    commit();
    await transaction;
    // The next read after the commit: the committed record, not the copy read before it.
    expect(await read('c1')).toBe('new');
  });

});
