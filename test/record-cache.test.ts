// Client and user records cached in memory, on two instances with their own database pools: the
// cache is really used, every change made anywhere reaches both by its notification (PostgreSQL
// LISTEN/NOTIFY: each test waits until both have heard it, then looks once), token revocations
// and the operator's secret revocations are immediate everywhere, and while the change feed is
// down nothing is served from memory.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from './support/services.ts';
import { startInstance, type AppInstance } from './support/server.ts';
import { authorize, getMe, tokenRequest } from './support/oauth.ts';
import { Browser } from './support/browser.ts';
import { REDIRECT } from './support/fixtures.ts';
import { clientArtifacts } from '../src/storage/client-artifacts.ts';
import { webhookOutbox } from '../src/webhooks/outbox.ts';
import { uncachedRecords } from '../src/storage/record-cache.ts';
import { artifactKey } from '../src/storage/artifact-key.ts';
import { revokeAppAccess } from '../src/apps-with-access/user-grants.ts';
import { clientsCreate, clientsSetRateLimit, clientsSetStatus, secretsGenerate, secretsRevoke, usersCreate, type AdminContext } from '../src/admin/commands.ts';
import { eventually } from './support/eventually.ts';

let pg: TestDatabase;
let redis: TestRedis;
let a: AppInstance;
let b: AppInstance;
let ops: AdminContext; // the operator's own pool: its changes reach the instances only by NOTIFY
const user = { email: 'cache@example.com', password: 'cache-test-password' };
let userId: number;

/** What each instance's change feed told it, in order: 'client:<id>', 'user:<id>', 'reset' (a and b). */
const heard: [string[], string[]] = [[], []];

beforeAll(async () => {
  [pg, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  const env = { DATABASE_URL: pg.url, REDIS_URL: redis.url, COOKIE_KEYS: 'record-cache-cookie-key-shared-by-instances' };
  const shared = { redis: redis.redis, redisPrefix: redis.prefix };
  a = await startInstance(env, shared);
  b = await startInstance({ ...env, APP_URL: a.url }, shared);
  ops = { db: pg.db, artifacts: clientArtifacts(pg.db, redis.redis, redis.prefix), outbox: webhookOutbox(pg.db), records: uncachedRecords(), by: { actor: 'operator:test' } };
  userId = (await usersCreate({ db: pg.db, passwords: a.system.passwords }, user)).id;
  for (const [i, instance] of [a, b].entries()) {
    instance.system.records.onChange((kind, id) => heard[i]!.push(`${kind}:${id}`));
    instance.system.records.onReset(() => heard[i]!.push('reset'));
  }
});

/** Makes `change`, then waits until both instances' change feeds have told them `what`. */
async function bothHear(what: string, change: () => Promise<unknown>): Promise<void> {
  const from = heard.map((events) => events.length);
  await change();
  await eventually(() => heard.forEach((events, i) => expect(events.slice(from[i]), `${i ? 'b' : 'a'} hears ${what}`).toContain(what)), { interval: 5 });
}

/**
 * Until both instances have heard every change notified so far: a notification of a record that
 * does not exist, sent now, is heard after them (one channel, in commit order).
 */
const allHeard = () => {
  const marker = `client:marker-${Math.random().toString(36).slice(2)}`;
  return bothHear(marker, () => pg.db.raw('select pg_notify(?, ?)', ['oauth_record_changes', marker]));
};
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await Promise.all([pg?.drop(), redis?.cleanup()]);
});

/**
 * An approved client, whose approval both instances have heard: a notification arriving after a
 * test read the client would drop it from their caches.
 */
async function newClient(name: string) {
  const created = await clientsCreate(ops, { name, redirectUri: [REDIRECT], scope: ['PROFILE_READ', 'PROFILE_WRITE'] });
  await bothHear(`client:${created.client_id}`, () => clientsSetStatus(ops, created.client_id, 'approved'));
  return { client_id: created.client_id, client_secret: created.client_secret! };
}

async function tokens(client: { client_id: string; client_secret: string }) {
  const back = await authorize(new Browser(), a.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ PROFILE_WRITE', state: 's' }, user);
  const res = await tokenRequest(b.url, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, ...client });
  expect(res.status).toBe(200);
  return res.body as { access_token: string; refresh_token: string };
}

/** A token request that authenticates the client and fails only on the junk refresh token. */
const authenticates = async (base: string, client: { client_id: string }, secret: string) =>
  (await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: 'junk', client_id: client.client_id, client_secret: secret })).status === 400;

const check = async (base: string, token: string) =>
  (await fetch(`${base}/v2/auth/check`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/me' } })).status;

describe('the record cache', () => {
  it('serves clients and users from memory: a change behind its back is not seen', async () => {
    const client = await newClient('Cached App');
    const { access_token } = await tokens(client);
    for (const base of [a.url, b.url]) {
      expect(await authenticates(base, client, client.client_secret)).toBe(true);
      expect((await getMe(base, access_token)).body.data.name).not.toBe('Changed Behind Its Back');
    }
    // Written straight into the tables, with no announcement: the instances keep their copies.
    await pg.db('oauth_clients').where('id', client.client_id).update({ status: 'suspended' });
    await pg.db('users').where('id', userId).update({ name: 'Changed Behind Its Back' });
    for (const base of [a.url, b.url]) {
      expect(await authenticates(base, client, client.client_secret)).toBe(true);
      expect((await getMe(base, access_token)).body.data.name).not.toBe('Changed Behind Its Back');
    }
  });

  it("keeps a client cached when only its secret's last use is written", async () => {
    const client = await newClient('Busy App');
    for (const base of [a.url, b.url]) expect(await authenticates(base, client, client.client_secret)).toBe(true);
    // Suspended behind the cache's back (no notification): a client read again would be refused.
    await pg.db('oauth_clients').where('id', client.client_id).update({ status: 'suspended' });
    // As the last-use recorder writes it, about once a minute per secret in use.
    await pg.db('oauth_client_secrets').where('client_id', client.client_id).update({ last_used_at: pg.db.fn.now() });
    await allHeard(); // a notification of the last use would have come before
    for (const base of [a.url, b.url]) expect(await authenticates(base, client, client.client_secret)).toBe(true);
  });

  it('refuses a secret revoked by the operator everywhere at once, and one revoked behind its back once its notification is heard', async () => {
    const client = await newClient('Rotating App');
    const second = await secretsGenerate(ops, client.client_id);
    for (const base of [a.url, b.url]) expect(await authenticates(base, client, client.client_secret)).toBe(true);
    const [first] = (await pg.db('oauth_client_secrets').where('client_id', client.client_id).whereNot('id', second.secret_id).select('id')) as [{ id: number }];
    // The instances hold the client with both secrets in memory; the operator revokes one and,
    // with no wait at all, both refuse it (its mark in Redis), and take the other.
    await secretsRevoke(ops, client.client_id, String(first.id), { force: true }); // just used: confirmed
    for (const base of [a.url, b.url]) {
      expect(await authenticates(base, client, client.client_secret)).toBe(false);
      expect(await authenticates(base, client, second.client_secret)).toBe(true);
    }
    // Written straight into the table: the table's own notification reaches both at commit.
    await bothHear(`client:${client.client_id}`, () => pg.db('oauth_client_secrets').where('id', second.secret_id).update({ revoked_at: pg.db.fn.now() }));
    for (const base of [a.url, b.url]) expect(await authenticates(base, client, second.client_secret)).toBe(false);
  });

  it("refuses a secret marked revoked on every instance at once, though its row and the instances' copies still list it", async () => {
    const client = await newClient('Marked App');
    const { refresh_token } = await tokens(client);
    for (const base of [a.url, b.url]) expect(await authenticates(base, client, client.client_secret)).toBe(true);
    const [secret] = (await pg.db('oauth_client_secrets').where('client_id', client.client_id).select('id')) as [{ id: number }];
    // The mark alone, as a revocation sets it before it commits: no row changed, nothing notified.
    await ops.artifacts.markSecretRevoked(secret.id);
    for (const base of [a.url, b.url]) {
      expect(await authenticates(base, client, client.client_secret)).toBe(false); // the provider's check
      const refreshed = await tokenRequest(base, { grant_type: 'refresh_token', refresh_token, ...client }); // the hot path's
      expect([refreshed.status, refreshed.body.error]).toEqual([401, 'invalid_client']);
    }
  });

  it('shows a profile change made on one instance on the other once its notification is heard', async () => {
    const { access_token } = await tokens(await newClient('Profile App'));
    expect((await getMe(b.url, access_token)).status).toBe(200); // cached on b
    await bothHear(`user:${userId}`, async () => {
      const patched = await fetch(`${a.url}/v2/me`, { method: 'PATCH', headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Renamed On A' }) });
      expect(patched.status).toBe(200);
    });
    expect((await getMe(a.url, access_token)).body.data.name).toBe('Renamed On A');
    expect((await getMe(b.url, access_token)).body.data.name).toBe('Renamed On A');
  });

  it('stops a suspended client everywhere: its tokens at once, new tokens once its notification is heard', async () => {
    const client = await newClient('Suspended App');
    const { access_token } = await tokens(client);
    for (const base of [a.url, b.url]) {
      expect(await check(base, access_token)).toBe(200);
      expect(await authenticates(base, client, client.client_secret)).toBe(true);
    }
    await bothHear(`client:${client.client_id}`, async () => {
      await clientsSetStatus(ops, client.client_id, 'suspended');
      for (const base of [a.url, b.url]) expect(await check(base, access_token)).toBe(401);
    });
    for (const base of [a.url, b.url]) expect(await authenticates(base, client, client.client_secret)).toBe(false);
  });

  it('refuses a token revoked on one instance on both at once (revocation endpoint, refresh reuse)', async () => {
    const client = await newClient('Revoking App');
    const first = await tokens(client);
    const revoked = await fetch(`${a.url}/v2/auth/oauth2/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: first.access_token, ...client }) });
    expect(revoked.status).toBe(200);
    expect([await check(a.url, first.access_token), await check(b.url, first.access_token)]).toEqual([401, 401]);

    const second = await tokens(client);
    const rotated = await tokenRequest(a.url, { grant_type: 'refresh_token', refresh_token: second.refresh_token, ...client });
    expect(rotated.status).toBe(200);
    // Its successor used (on b), the spent one presented again: reuse, the grant revoked.
    const third = await tokenRequest(b.url, { grant_type: 'refresh_token', refresh_token: rotated.body.refresh_token as string, ...client });
    expect(third.status).toBe(200);
    const reuse = await tokenRequest(b.url, { grant_type: 'refresh_token', refresh_token: second.refresh_token, ...client });
    expect(reuse.body.error).toBe('invalid_grant');
    const fresh = third.body.access_token as string;
    expect([await check(a.url, fresh), await check(b.url, fresh)]).toEqual([401, 401]);
  });

  it('serves nothing from memory while the change feed is down, and caches again once it is back', async () => {
    const client = await newClient('Feed App');
    for (const base of [a.url, b.url]) expect(await authenticates(base, client, client.client_secret)).toBe(true);
    // Cut every instance's LISTEN connection, then suspend the client behind the cache's back.
    await bothHear('reset', () => pg.db.raw(`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query like 'LISTEN %'`));
    await pg.db('oauth_clients').where('id', client.client_id).update({ status: 'suspended' });
    for (const base of [a.url, b.url]) expect(await authenticates(base, client, client.client_secret)).toBe(false);
    // Back after a reconnect: the change made the operator's way reaches both, and the cache serves again.
    await eventually(() => expect([a.system.records.live, b.system.records.live], 'both listening again').toEqual([true, true]), { timeout: 15_000 });
    await bothHear(`client:${client.client_id}`, () => clientsSetStatus(ops, client.client_id, 'approved'));
    for (const base of [a.url, b.url]) expect(await authenticates(base, client, client.client_secret)).toBe(true);
  });
});

describe('built clients', () => {
  it('are kept for more clients than the library keeps (its last 100): a client in use is not rebuilt', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 150; i++) ids.push((await newClient(`Many Clients App ${i}`)).client_id);
    const { Client } = a.system.provider;
    const first = await Promise.all(ids.map((id) => Client.find(id)));
    const again = await Promise.all(ids.map((id) => Client.find(id)));
    expect(first.every((client) => client !== undefined)).toBe(true);
    expect(again.filter((client, i) => client !== first[i])).toHaveLength(0);
  });

  it('are built anew when the record changes, on every instance once its notification is heard: a new budget applies', async () => {
    const client = await newClient('Budget Change App');
    const built = await Promise.all([a, b].map((instance) => instance.system.provider.Client.find(client.client_id)));
    for (const base of [a.url, b.url]) expect(await authenticates(base, client, client.client_secret)).toBe(true);
    // The operator's own pool: the instances learn of it by the change notification only.
    await bothHear(`client:${client.client_id}`, () => clientsSetRateLimit(ops, client.client_id, '2'));
    for (const [i, instance] of [a, b].entries()) {
      const rebuilt = await instance.system.provider.Client.find(client.client_id);
      expect(rebuilt).not.toBe(built[i]);
      expect((rebuilt as unknown as { token_requests_per_minute?: number }).token_requests_per_minute).toBe(2);
    }
    // The new budget's counter is shared: each instance holds the client back once its own
    // count has reached 2 (the old budget, the server's default, would let all of these through).
    const statuses = [];
    for (const base of [a.url, b.url, a.url, b.url, a.url]) {
      statuses.push((await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: 'junk', ...client })).status);
    }
    expect(statuses).toEqual([400, 400, 400, 429, 429]);
  });
});

describe('the access token cache', () => {
  const tokenKey = (token: string) => `${redis.prefix}AccessToken:${artifactKey(token)}`;
  /**
   * Until `base` refuses the token: by the revocation message (a cached token is otherwise served
   * until it expires, an hour on).
   */
  const refusedThere = (base: string, token: string) => eventually(async () => expect(await check(base, token)).toBe(401), { interval: 5 });
  const cached = async (token: string) => {
    for (const base of [a.url, b.url]) expect(await check(base, token)).toBe(200);
  };

  it('serves tokens from memory: one deleted behind its back is still accepted where it was read', async () => {
    expect(a.system.tokenCache?.serving && b.system.tokenCache?.serving).toBe(true);
    const { access_token } = await tokens(await newClient('Token Cache App'));
    await cached(access_token);
    expect(await redis.redis.del(tokenKey(access_token))).toBe(1); // no announcement
    for (const base of [a.url, b.url]) expect(await check(base, access_token)).toBe(200);
    expect((await getMe(a.url, access_token)).status).toBe(200);
  });

  it('refuses a revoked token at once where it is revoked and, by the revocation message, everywhere else', async () => {
    const client = await newClient('Revoked Everywhere App');
    // The revocation endpoint: one token.
    const first = await tokens(client);
    await cached(first.access_token);
    const revoked = await fetch(`${a.url}/v2/auth/oauth2/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: first.access_token, ...client }) });
    expect(revoked.status).toBe(200);
    expect(await check(a.url, first.access_token)).toBe(401);
    await refusedThere(b.url, first.access_token);

    // Refresh token reuse on b: the whole grant.
    const second = await tokens(client);
    const rotated = await tokenRequest(a.url, { grant_type: 'refresh_token', refresh_token: second.refresh_token, ...client });
    const third = await tokenRequest(a.url, { grant_type: 'refresh_token', refresh_token: rotated.body.refresh_token as string, ...client });
    const live = third.body.access_token as string;
    await cached(live);
    expect((await tokenRequest(b.url, { grant_type: 'refresh_token', refresh_token: second.refresh_token, ...client })).body.error).toBe('invalid_grant');
    expect(await check(b.url, live)).toBe(401);
    await refusedThere(a.url, live);

    // The user disconnects the app in "apps with access" on a (what the page's Revoke runs): its grants.
    const granted = await tokens(client);
    await cached(granted.access_token);
    expect(await revokeAppAccess(a.system, a.system.provider, String(userId), client.client_id)).toBeGreaterThan(0);
    expect(await check(a.url, granted.access_token)).toBe(401);
    await refusedThere(b.url, granted.access_token);

    // The operator suspends the client (its own process): every instance, by the time the script returns.
    const fourth = await tokens(client);
    await cached(fourth.access_token);
    await clientsSetStatus(ops, client.client_id, 'suspended');
    for (const base of [a.url, b.url]) expect(await check(base, fourth.access_token)).toBe(401);
  });

  it('serves nothing from memory while the revocation channel is down, and serves again once it is back', async () => {
    const { access_token } = await tokens(await newClient('Channel Down App'));
    await cached(access_token);
    // Cut both instances' subscriber connections (and only theirs), then delete the token behind their back.
    const subscribers = String(await redis.redis.client('LIST'))
      .split('\n')
      .filter((line) => line.includes(`name=${redis.prefix}token-cache`))
      .map((line) => /\bid=(\d+)/.exec(line)![1]!);
    expect(subscribers).toHaveLength(2);
    for (const id of subscribers) await redis.redis.client('KILL', 'ID', id);
    await redis.redis.del(tokenKey(access_token));
    for (const base of [a.url, b.url]) expect(await check(base, access_token)).toBe(401);
    // Resubscribed by themselves: a new token is served from memory again.
    await eventually(() => expect([a.system.tokenCache?.serving, b.system.tokenCache?.serving], 'both serving again').toEqual([true, true]));
    const next = await tokens(await newClient('Channel Back App'));
    await cached(next.access_token);
    await redis.redis.del(tokenKey(next.access_token));
    for (const base of [a.url, b.url]) expect(await check(base, next.access_token)).toBe(200);
  });
});
