// A suspension sweeps the client's codes, tokens and grants once, after it commits. A request that
// read the client as approved before the suspension reached its instance may still save a grant
// and tokens after that sweep. Those must be refused on every path once the instance knows of the
// suspension — also a token whose facts the instance already keeps in memory (the token cache).
// The instance's change feed goes through a relay that the test pauses: the suspension reaches it
// only when the test says so, which makes "before" and "after" an order, not a race.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDb, type Db } from '../src/storage/db.ts';
import { clientArtifacts } from '../src/storage/client-artifacts.ts';
import { webhookOutbox } from '../src/webhooks/outbox.ts';
import { uncachedRecords } from '../src/storage/record-cache.ts';
import { clientsSetStatus, type AdminContext } from '../src/admin/commands.ts';
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from './support/services.ts';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.ts';
import { startInstance, type AppInstance, type TestServer } from './support/server.ts';
import { approvedClient, newUser, tokensFor, type TestClient } from './support/fixtures.ts';
import { getMe, tokenRequest } from './support/oauth.ts';

let pg: TestDatabase;
let redis: TestRedis;
let feedRelay: TcpProxy;
let db: Db;
let app: AppInstance;
let server: TestServer; // the instance, for the fixtures
let ops: AdminContext; // the operator's own pool: its changes reach the instance only through the feed

beforeAll(async () => {
  [pg, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  feedRelay = await startTcpProxy(Number(new URL(pg.url).port || 5432));
  const feedUrl = new URL(pg.url);
  feedUrl.port = String(feedRelay.port);
  // The pool reaches PostgreSQL directly; the change feed listens on DATABASE_URL, through the relay.
  db = connectDb({ databaseUrl: pg.url, dataDir: '' });
  app = await startInstance({ DATABASE_URL: feedUrl.toString(), REDIS_URL: redis.url }, { db, redis: redis.redis, redisPrefix: redis.prefix });
  server = { ...app, pg, redis };
  ops = { db: pg.db, artifacts: clientArtifacts(pg.db, redis.redis, redis.prefix), outbox: webhookOutbox(pg.db), records: uncachedRecords(), by: { actor: 'operator:test' } };
});
afterAll(async () => {
  feedRelay?.resume();
  await app?.close();
  await db?.destroy();
  await feedRelay?.close();
  await Promise.all([pg?.drop(), redis?.cleanup()]);
});

const check = async (token: string) =>
  (await fetch(`${app.url}/v2/auth/check`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/me' } })).status;

/** A token request that authenticates the client and fails only on the junk refresh token (400), or the status. */
const authenticate = async (client: TestClient) => (await tokenRequest(app.url, { grant_type: 'refresh_token', refresh_token: 'junk', ...client })).status;

describe('a suspension and a request that saves after its sweep', () => {
  it('refuses the grant and tokens saved after the sweep once the instance knows of the suspension, though it kept their facts in memory', async () => {
    expect(app.system.tokenCache?.serving).toBe(true);
    const client = await approvedClient(server, ['PROFILE_READ']);
    const user = await newUser(server);
    const before = await tokensFor(server, client, user, 'PROFILE_READ');
    expect(await check(before.access_token)).toBe(200);

    feedRelay.pause(); // from here the instance hears of no change: it still holds the client as approved
    await clientsSetStatus(ops, client.client_id, 'suspended'); // committed, then swept (and the sweep announced)
    expect(await check(before.access_token)).toBe(401); // what the sweep reached

    // The request that read the client before the suspension reached this instance: a grant and
    // tokens saved after the sweep, and a use of them that this instance keeps in memory.
    const after = await tokensFor(server, client, user, 'PROFILE_READ');
    expect(await check(after.access_token)).toBe(200);

    feedRelay.resume(); // the suspension reaches the instance
    for (let heard = false; !heard; ) heard = (await authenticate(client)) === 401;

    // From the first request after the instance refuses the client, its tokens are refused too.
    expect(await check(after.access_token)).toBe(401);
    expect((await getMe(app.url, after.access_token)).status).toBe(401);
    const refreshed = await tokenRequest(app.url, { grant_type: 'refresh_token', refresh_token: after.refresh_token, ...client });
    expect(refreshed.status).toBe(401);
  });
});
