// The embedded database answers delete(), update() and increment() with the number of rows, as
// PostgreSQL does: code that reads `removed > 0` (a disconnected app's grant.revoked event, a
// replaced webhook secret) must work on both.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDb, type Db } from '../../src/storage/db.ts';

let db: Db;
let dir: string;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-counts-'));
  db = connectDb({ databaseUrl: undefined, dataDir: dir });
  await db.schema.createTable('rows', (t) => {
    t.integer('id');
    t.integer('n').defaultTo(0);
  });
  await db('rows').insert([{ id: 1 }, { id: 2 }, { id: 3 }]);
});
afterAll(async () => {
  await db?.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('counts the rows a delete, an update and an increment touched', async () => {
  expect(await db('rows').where('id', '>', 1).update({ n: 5 })).toBe(2);
  expect(await db('rows').where('id', 3).increment('n', 1)).toBe(1);
  expect(await db('rows').where('id', '<', 3).delete()).toBe(2);
  expect(await db('rows').where('id', 9).delete()).toBe(0);
  expect(await db('rows').select('id', 'n')).toEqual([{ id: 3, n: 6 }]);
});
