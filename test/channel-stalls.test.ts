// A change channel that stalls without a signal (a hung proxy, a half-open connection): the
// PostgreSQL change feed's LISTEN connection and the Redis revocation subscriber each go through a
// TCP relay that is paused — sockets open, nothing passing — while the rest of the instance
// reaches its stores directly. Within the heartbeat's deadline the instance stops serving from
// memory, says so in /ready and the metrics, and serves from memory again once the channel is back.
// The deadline is the instance's clock's (a test clock, test/support/clock.ts), which the tests move
// past it while the beats themselves go on real time; on real time alone it is never reached here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis, type RedisOptions } from 'ioredis';
import { connectDb, type Db } from '../src/storage/db.ts';
import { artifactKey } from '../src/storage/artifact-key.ts';
import { announceRevocation } from '../src/storage/token-cache.ts';
import { clientArtifacts } from '../src/storage/client-artifacts.ts';
import { webhookOutbox } from '../src/webhooks/outbox.ts';
import { uncachedRecords } from '../src/storage/record-cache.ts';
import { clientsSetStatus, type AdminContext } from '../src/admin/commands.ts';
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from './support/services.ts';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.ts';
import { startInstance, type AppInstance, type TestServer } from './support/server.ts';
import { approvedClient, newUser, tokensFor, type TestClient } from './support/fixtures.ts';
import { tokenRequest } from './support/oauth.ts';
import { testClock } from './support/clock.ts';
import { eventually } from './support/eventually.ts';

const HEARTBEAT = { intervalMs: 100, deadlineMs: 60_000 };
const clock = testClock();

/**
 * Runs `check` until it passes while time goes by on the instance's clock, a third of the deadline
 * at a time: a channel that delivers hears a beat (every 100 ms of real time) between two steps and
 * never misses its deadline, one that stalls misses it after three.
 */
const whileTimePasses = <T>(check: () => Promise<T>) =>
  eventually(
    async () => {
      clock.advance(HEARTBEAT.deadlineMs / 3);
      return check();
    },
    { interval: 150 },
  );

let pg: TestDatabase;
let redis: TestRedis;
let pgRelay: TcpProxy;
let redisRelay: TcpProxy;
let db: Db;
let appRedis: Redis;
let app: AppInstance;
let server: TestServer; // the instance, for the fixtures
let ops: AdminContext; // the operator's own pool: its changes reach the instance only through the feed

beforeAll(async () => {
  [pg, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  [pgRelay, redisRelay] = await Promise.all([startTcpProxy(Number(new URL(pg.url).port || 5432)), startTcpProxy(Number(new URL(redis.url).port || 6379))]);
  const feedUrl = new URL(pg.url);
  feedUrl.port = String(pgRelay.port);
  // The pool reaches PostgreSQL directly; the change feed listens on DATABASE_URL, through the relay.
  db = connectDb({ databaseUrl: pg.url, dataDir: '' });
  // Commands reach Redis directly; the token cache's subscriber (a duplicate) goes through the relay.
  const relayPort = redisRelay.port;
  appRedis = new (class extends Redis {
    override duplicate(override?: Partial<RedisOptions>) {
      return new Redis({ ...this.options, ...override, port: relayPort });
    }
  })(redis.url, { maxRetriesPerRequest: 0 });
  app = await startInstance({ DATABASE_URL: feedUrl.toString(), REDIS_URL: redis.url }, { db, redis: appRedis, redisPrefix: redis.prefix, heartbeat: HEARTBEAT, clock });
  server = { ...app, pg, redis };
  ops = { db: pg.db, artifacts: clientArtifacts(pg.db, redis.redis, redis.prefix), outbox: webhookOutbox(pg.db), records: uncachedRecords(), by: { actor: 'operator:test' } };
});
afterAll(async () => {
  await app?.close();
  appRedis?.disconnect();
  await db?.destroy();
  await Promise.all([pgRelay?.close(), redisRelay?.close()]);
  await Promise.all([pg?.drop(), redis?.cleanup()]);
});

async function ready() {
  const res = await fetch(`${app.url}/ready`);
  return { status: res.status, body: (await res.json()) as { memory?: Record<string, string> } };
}

async function metric(line: string): Promise<string | undefined> {
  const text = await (await fetch(`${app.metricsUrl}/metrics`)).text();
  return text.split('\n').find((l) => l.startsWith(line));
}

/** A token request that authenticates the client and fails only on the junk refresh token (400), or the status. */
const authenticate = async (client: TestClient) => (await tokenRequest(app.url, { grant_type: 'refresh_token', refresh_token: 'junk', ...client })).status;

const check = async (token: string) =>
  (await fetch(`${app.url}/v2/auth/check`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/me' } })).status;

describe('a silently stalled change channel', () => {
  let client: TestClient;
  let user: Awaited<ReturnType<typeof newUser>>;

  beforeAll(async () => {
    client = await approvedClient(server, ['PROFILE_READ']);
    user = await newUser(server);
  });

  it('the change feed: client records are read from the database past the deadline, and cached again once it is back', async () => {
    expect(await authenticate(client)).toBe(400); // the record is now in memory
    pgRelay.pause();
    // The operator suspends the client: the notification goes out, but this instance's feed hears nothing.
    await clientsSetStatus(ops, client.client_id, 'suspended');
    expect(await authenticate(client)).toBe(400); // from memory, stale: the feed stalls
    await whileTimePasses(async () => expect(await authenticate(client)).toBe(401));
    expect(await ready()).toMatchObject({ status: 200, body: { memory: { records: 'bypassed', tokens: 'serving' } } });
    expect(await metric('oauth_memory_cache_serving{cache="records"}')).toMatch(/ 0$/);
    expect(await metric('oauth_channel_heartbeats_missed_total{channel="record_changes"}')).toMatch(/ [1-9]\d*$/);

    pgRelay.resume();
    await eventually(async () => expect((await ready()).body.memory?.records).toBe('serving'));
    expect(await metric('oauth_memory_cache_serving{cache="records"}')).toMatch(/ 1$/);
    await clientsSetStatus(ops, client.client_id, 'approved');
    await eventually(async () => expect(await authenticate(client)).toBe(400), { timeout: 2000 }); // the approval is heard
  });

  it("the change feed lost: what the token cache kept of a token's client goes with the record cache", async () => {
    const other = await approvedClient(server, ['PROFILE_READ'], 'Feed Lost App');
    const { access_token } = await tokensFor(server, other, user, 'PROFILE_READ');
    expect(await check(access_token)).toBe(200); // its facts, client usable, now in memory
    pgRelay.pause();
    try {
      // Suspended by hand in SQL: no announcement, no sweep; only the feed's loss can make it seen.
      await pg.db('oauth_clients').where('id', other.client_id).update({ status: 'suspended' });
      expect(await check(access_token)).toBe(200); // from memory, stale: the feed stalls
      await whileTimePasses(async () => expect((await ready()).body.memory?.records).toBe('bypassed'));
      expect(await check(access_token)).toBe(401); // from the first request once the feed is lost
    } finally {
      pgRelay.resume();
    }
    await eventually(async () => expect((await ready()).body.memory?.records).toBe('serving'));
  });

  it('the revocation channel: a revoked token is refused past the deadline, and tokens are cached again once it is back', async () => {
    const { access_token } = await tokensFor(server, client, user, 'PROFILE_READ');
    expect(await check(access_token)).toBe(200); // now in memory
    redisRelay.pause();
    // Another instance revokes it: the key deleted, the revocation announced; this subscriber hears nothing.
    await redis.redis.del(`${redis.prefix}AccessToken:${artifactKey(access_token)}`);
    await announceRevocation(redis.redis, redis.prefix, { token: artifactKey(access_token) });
    expect(await check(access_token)).toBe(200); // from memory, stale: the revocation is not heard
    await whileTimePasses(async () => expect(await check(access_token)).toBe(401));
    expect(await ready()).toMatchObject({ status: 200, body: { memory: { records: 'serving', tokens: 'bypassed' } } });
    expect(await metric('oauth_memory_cache_serving{cache="tokens"}')).toMatch(/ 0$/);
    expect(await metric('oauth_channel_heartbeats_missed_total{channel="revocations"}')).toMatch(/ [1-9]\d*$/);

    redisRelay.resume();
    await eventually(async () => expect((await ready()).body.memory?.tokens).toBe('serving'));
    // Served from memory again: a token deleted behind its back (no announcement) is still accepted.
    const next = await tokensFor(server, client, user, 'PROFILE_READ');
    expect(await check(next.access_token)).toBe(200);
    await redis.redis.del(`${redis.prefix}AccessToken:${artifactKey(next.access_token)}`);
    expect(await check(next.access_token)).toBe(200);
  });
});
