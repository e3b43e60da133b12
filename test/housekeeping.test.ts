// What runs behind the requests: expired artifacts purged from SQL storage, and the "last used" of
// secrets and grants written at most once a minute each, together (one statement for many token
// requests), never on every token request. The minute is the system's clock's: the server runs on
// a test clock (test/support/clock.ts) moved a minute on instead of waiting. An artifact's expiry
// is the store's own (SQL expires_at against now(), proven on real time in
// test/adapters.contract.test.ts): here its row is made expired.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startInstance, startTestServer, type TestServer } from './support/server.ts';
import { createTestDatabase } from './support/services.ts';
import { approvedClient, newUser, tokensFor } from './support/fixtures.ts';
import { tokenRequest } from './support/oauth.ts';
import { testClock } from './support/clock.ts';
import { SqlAdapter, purgeExpiredArtifacts } from '../src/storage/sql-adapter.ts';
import { artifactKey } from '../src/storage/artifact-key.ts';

let server: TestServer;
const clock = testClock();

beforeAll(async () => {
  server = await startTestServer('sql', {}, { clock });
});

/** The UPDATE statements of `table` sent while `run` runs. */
async function updatesOf(table: string, run: () => Promise<unknown>): Promise<string[]> {
  const db = server.system.db;
  const writes: string[] = [];
  const count = (q: { sql: string }) => new RegExp(`update "?${table}"?`, 'i').test(q.sql) && writes.push(q.sql);
  db.on('query', count);
  try {
    await run();
  } finally {
    db.off('query', count);
  }
  return writes;
}
afterAll(() => server?.close());

describe('housekeeping', () => {
  it('purges expired artifacts from SQL storage and keeps live ones', async () => {
    const adapter = new SqlAdapter(server.system.db, 'AccessToken');
    await adapter.upsert('expiring-token', { jti: 'expiring-token', kind: 'AccessToken' }, 1);
    await adapter.upsert('live-token', { jti: 'live-token', kind: 'AccessToken' }, 3600);
    // Its second passed, by the database's time.
    await server.pg.db('oidc_models').where({ model: 'AccessToken', id: artifactKey('expiring-token') }).update({ expires_at: server.pg.db.raw(`now() - interval '1 millisecond'`) });
    const count = () => server.pg.db('oidc_models').where('model', 'AccessToken').count<{ count: string }[]>('* as count');
    expect(Number((await count())[0]!.count)).toBeGreaterThanOrEqual(2);
    expect(await purgeExpiredArtifacts(server.system.db)).toBeGreaterThanOrEqual(1);
    expect(await adapter.find('expiring-token')).toBeUndefined();
    expect(await adapter.find('live-token')).toMatchObject({ jti: 'live-token' });
    expect(await purgeExpiredArtifacts(server.system.db)).toBe(0);
  });

  it("writes a secret's last_used_at on its first use, then at most once a minute", async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const lastUsed = async () => (await server.pg.db('oauth_client_secrets').where('client_id', client.client_id).first('last_used_at')).last_used_at as Date | null;
    expect(await lastUsed()).toBeNull();
    const authenticate = async () => expect((await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: 'junk', ...client })).body.error).toBe('invalid_grant');
    await authenticate();
    await expect.poll(lastUsed).toBeInstanceOf(Date); // written after the answer, in a batch
    const first = await lastUsed();
    // Within the minute: nothing to write, not even with what waits written at once (flush).
    const within = await updatesOf('oauth_client_secrets', async () => {
      for (let i = 0; i < 3; i++) await authenticate();
      await server.system.secretUses.flush();
    });
    expect(within).toEqual([]);
    expect((await lastUsed())!.getTime()).toBe(first!.getTime());
    // A minute on, by this process's clock: written again (the statement's own minute, on the database's time, keeps the row).
    clock.advance(61_000);
    const later = await updatesOf('oauth_client_secrets', async () => {
      await authenticate();
      await server.system.secretUses.flush();
    });
    expect(later).toHaveLength(1);
  });

  it("writes the secrets' last use in batches: one statement for many clients", async () => {
    const clients = await Promise.all(Array.from({ length: 6 }, () => approvedClient(server, ['PROFILE_READ'])));
    const db = server.system.db;
    const writes = await updatesOf('oauth_client_secrets', async () => {
      const answers = await Promise.all(clients.map((c) => tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: 'junk', ...c })));
      expect(answers.map((a) => a.body.error)).toEqual(clients.map(() => 'invalid_grant'));
      const used = () => db('oauth_client_secrets').whereIn('client_id', clients.map((c) => c.client_id)).pluck('last_used_at');
      await expect.poll(async () => (await used()).every(Boolean)).toBe(true);
    });
    expect(writes.length).toBeGreaterThanOrEqual(1);
    expect(writes.length).toBeLessThan(clients.length);
  });

  it('writes the grants\' last use in batches: one statement for many refreshes', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    // One sign-in at a time: several at once from one address, on a loaded machine, meet the
    // sign-in's proof of work (src/web/sign-in.ts), which is not this test's subject.
    const grants: Array<Awaited<ReturnType<typeof tokensFor>>> = [];
    for (let i = 0; i < 6; i++) grants.push(await tokensFor(server, client, await newUser(server), 'PROFILE_READ'));
    const db = server.system.db;
    const lastUsed = () => db('user_grants').where('client_id', client.client_id).pluck('last_used_at');
    await expect.poll(async () => (await lastUsed()).every(Boolean)).toBe(true); // the code exchanges
    await db('user_grants').where('client_id', client.client_id).update({ last_used_at: null });
    // A minute on, as far as this process's throttle can tell (the SQL's own minute is reset above).
    clock.advance(61_000);
    const writes = await updatesOf('user_grants', async () => {
      const refreshed = await Promise.all(grants.map((t) => tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: t.refresh_token, ...client })));
      expect(refreshed.map((r) => r.status)).toEqual(grants.map(() => 200));
      await expect.poll(async () => (await lastUsed()).every(Boolean)).toBe(true);
    });
    expect(writes.length).toBeGreaterThanOrEqual(1);
    expect(writes.length).toBeLessThan(grants.length);
  });
});

describe('background work started only when asked (SystemOverrides.run)', () => {
  it('sets the sweeps\' timers only with sweeps on: secret expiry, registrations, the SQL purge', async () => {
    const pg = await createTestDatabase();
    const env = { DATABASE_URL: pg.url, DYNAMIC_REGISTRATION: 'open', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent' };
    // The intervals src/system.ts sets itself (its sweeps): the first frame past the spy is in it.
    const caller = () => (new Error().stack ?? '').split('\n').slice(1).find((frame) => !/housekeeping\.test\.ts|node_modules/.test(frame)) ?? '';
    const real = globalThis.setInterval;
    const fromSystem: number[] = [];
    const intervals = vi.spyOn(globalThis, 'setInterval').mockImplementation(((task: () => void, ms: number) => {
      if (/src\/system\.ts/.test(caller())) fromSystem.push(ms);
      return real(task, ms);
    }) as typeof setInterval);
    const started = [];
    try {
      const off = await startInstance(env, { db: pg.db, run: {} });
      started.push(off);
      expect(off.system.running()).toEqual([]);
      expect(fromSystem).toEqual([]);
      const on = await startInstance(env, { db: pg.db, run: { sweeps: true } });
      started.push(on);
      expect(on.system.running().sort()).toEqual(['purge of expired artifacts', 'registration sweep', 'secret expiry sweep']);
      expect(fromSystem.sort()).toEqual([60_000, 600_000, 600_000]);
    } finally {
      intervals.mockRestore();
      for (const instance of started) await instance.close();
      await pg.drop();
    }
  });
});
