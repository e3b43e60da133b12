// Scale-out: three stateless app instances sharing a real 3-master Redis Cluster and PostgreSQL.
// Any instance serves any step; replays and reuse are detected across instances; revocations and
// rate limits are shared; a killed master means clean 503s, then recovery with nothing issued twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDb, migrateLatest } from '../../src/storage/db.ts';
import { migrationSource } from '../../migrations/index.ts';
import { clientsCreate, clientsSetRateLimit, clientsSetStatus, secretsGenerate, secretsRevoke, usersCreate, type AdminContext } from '../../src/admin/commands.ts';
import { clientArtifacts } from '../../src/storage/client-artifacts.ts';
import { webhookOutbox } from '../../src/webhooks/outbox.ts';
import { uncachedRecords } from '../../src/storage/record-cache.ts';
import { connectRedis, type RedisClient } from '../../src/storage/redis.ts';
import { createTestDatabase, type TestDatabase } from '../support/services.ts';
import { Browser, type Page } from '../support/browser.ts';
import { authorizeUrl, getMe, tokenRequest } from '../support/oauth.ts';
import { REDIRECT } from '../support/fixtures.ts';
import { startInstance, type AppInstance } from '../support/server.ts';
import { startRedisCluster, type TestRedisCluster } from './redis-cluster.ts';
import { eventually } from '../support/eventually.ts';

let pg: TestDatabase;
let cluster: TestRedisCluster;
let instances: AppInstance[];
let ops: AdminContext;
let opsRedis: RedisClient;
const user = { email: 'scale@example.com', password: 'scale-out-password' };
let client: { client_id: string; client_secret: string };


/** An instance with its own PostgreSQL pool and Redis Cluster connection. */
function startClusterInstance(publicUrl?: string): Promise<AppInstance> {
  return startInstance({
    ...(publicUrl ? { APP_URL: publicUrl } : {}), // one public address for all, as behind a load balancer
    DATABASE_URL: pg.url,
    REDIS_CLUSTER_NODES: cluster.env,
    RATE_LIMIT_AUTH_FAILURES: '3',
    RATE_LIMIT_AUTH_WINDOW_SECONDS: '60',
    COOKIE_KEYS: 'scale-out-cookie-key-shared-by-every-instance',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
  });
}

beforeAll(async () => {
  [pg, cluster] = await Promise.all([createTestDatabase(), startRedisCluster()]);
  const first = await startClusterInstance();
  instances = [first, await startClusterInstance(first.url), await startClusterInstance(first.url)];
  // The operator scripts' own connection to the cluster, as src/admin/program.ts makes it.
  opsRedis = connectRedis({ mode: 'cluster', nodes: cluster.env.split(',').map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) })) });
  ops = { db: pg.db, artifacts: clientArtifacts(pg.db, opsRedis), outbox: webhookOutbox(pg.db), records: uncachedRecords(), by: { actor: 'operator:test' } };
  await usersCreate({ db: pg.db, passwords: first.system.passwords }, user);
  const created = await clientsCreate(ops, { name: 'Scaled App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
  await clientsSetStatus(ops, created.client_id, 'approved');
  client = { client_id: created.client_id, client_secret: created.client_secret! };
}, 120_000);

afterAll(async () => {
  await Promise.all((instances ?? []).map((i) => i.close()));
  opsRedis?.disconnect();
  await cluster?.stop();
  await pg?.drop();
});

const at = (i: number, url: string) => {
  const u = new URL(url);
  return `${instances[i]!.url}${u.pathname}${u.search}`;
};
const on = (i: number, page: Page): Page => ({ ...page, url: at(i, page.url) });

/** The authorization flow with every step on another instance; returns the code. */
async function hoppingCode(): Promise<string> {
  const browser = new Browser();
  const start = await browser.get(authorizeUrl(instances[0]!.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 'hop' }));
  const login = await browser.get(at(1, start.location!));
  expect(login.$('input[name=password]')).toHaveLength(1);
  const signedIn = await browser.submit(on(2, login), 'form:has(input[name=password])', user);
  expect(signedIn.status).toBe(303);
  const resumed = await browser.get(at(0, signedIn.location!));
  const consent = await browser.get(at(1, resumed.location!));
  expect(consent.$('button:contains("Allow")')).toHaveLength(1);
  const allowed = await browser.submit(on(2, consent), 'button:contains("Allow")');
  const back = await browser.get(at(0, allowed.location!));
  const redirect = new URL(back.location!);
  expect(`${redirect.origin}${redirect.pathname}`).toBe(REDIRECT);
  expect(redirect.searchParams.get('state')).toBe('hop');
  return redirect.searchParams.get('code')!;
}

const exchange = (i: number, code: string, secret = client.client_secret) =>
  tokenRequest(instances[i]!.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: client.client_id, client_secret: secret });
const refresh = (i: number, refreshToken: string) => tokenRequest(instances[i]!.url, { grant_type: 'refresh_token', refresh_token: refreshToken, ...client });

describe('many instances on a Redis Cluster and PostgreSQL', () => {
  it('serves one flow across instances: each step of sign-in and consent on another, exchange on B, API on C, refresh on A', async () => {
    const tokens = await exchange(1, await hoppingCode());
    expect(tokens.status).toBe(200);
    expect((await getMe(instances[2]!.url, tokens.body.access_token as string)).status).toBe(200);
    const refreshed = await refresh(0, tokens.body.refresh_token as string);
    expect(refreshed.status).toBe(200);
    expect((await getMe(instances[1]!.url, refreshed.body.access_token as string)).status).toBe(200);
  });

  it('detects a code replayed on another instance and revokes what it issued', async () => {
    const code = await hoppingCode();
    const first = await exchange(0, code);
    expect(first.status).toBe(200);
    expect((await exchange(1, code)).body.error).toBe('invalid_grant');
    expect((await getMe(instances[2]!.url, first.body.access_token as string)).status).toBe(401);
  });

  it('answers a retried refresh on another instance the same, and detects reuse across instances once the successor was used', async () => {
    const tokens = (await exchange(0, await hoppingCode())).body;
    const results = await Promise.all([0, 1, 2].map((i) => refresh(i, tokens.refresh_token as string)));
    const answered = results.filter((r) => r.status === 200);
    expect(new Set(answered.map((r) => JSON.stringify(r.body))).size).toBe(1);
    const rotated = answered[0]!;
    const successor = await refresh(1, rotated.body.refresh_token as string);
    expect(successor.status).toBe(200);
    expect((await refresh(2, tokens.refresh_token as string)).body.error).toBe('invalid_grant');
    expect((await getMe(instances[0]!.url, successor.body.access_token as string)).status).toBe(401);
    expect((await refresh(0, successor.body.refresh_token as string)).body.error).toBe('invalid_grant');
  });

  it('refuses a secret revoked through one instance on every other at once', async () => {
    const second = await secretsGenerate(ops, client.client_id);
    const code = await hoppingCode();
    await secretsRevoke(ops, client.client_id, String(second.secret_id));
    expect(await ops.artifacts.secretMarkedRevoked!(second.secret_id)).toBe(true); // on the cluster, for every instance
    for (const i of [0, 1, 2]) {
      const res = await exchange(i, code, second.client_secret);
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('invalid_client');
    }
  });

  it('shares rate limits: failures on A and B hold back the same caller on C, whose right secret still works', async () => {
    const fresh = await clientsCreate(ops, { name: 'Limited App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    await clientsSetStatus(ops, fresh.client_id, 'approved');
    const refresh = (i: number, secret: string) => tokenRequest(instances[i]!.url, { grant_type: 'refresh_token', refresh_token: 'x', client_id: fresh.client_id, client_secret: secret });
    expect((await refresh(0, 'wrong')).status).toBe(401);
    expect((await refresh(1, 'wrong')).status).toBe(401);
    expect((await refresh(0, 'wrong')).status).toBe(401);
    const held = await refresh(2, 'wrong');
    expect(held.status).toBe(429);
    expect(held.body.error).toBe('slow_down');
    // Authenticated (the refresh token itself is junk): never held back by failures.
    expect((await refresh(2, fresh.client_secret!)).body.error).toBe('invalid_grant');
  });

  it("shares a client's own budget: over it on every instance after at most one extra request each", async () => {
    const fresh = await clientsCreate(ops, { name: 'Budget App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    await clientsSetStatus(ops, fresh.client_id, 'approved');
    await clientsSetRateLimit(ops, fresh.client_id, '3');
    const refresh = (i: number) => tokenRequest(instances[i]!.url, { grant_type: 'refresh_token', refresh_token: 'x', client_id: fresh.client_id, client_secret: fresh.client_secret! });
    const statuses = [];
    for (const i of [0, 1, 2, 0, 1, 2, 0, 1, 2]) statuses.push((await refresh(i)).status);
    expect(statuses.slice(0, 3)).toEqual([400, 400, 400]);
    expect(statuses.filter((s) => s === 400).length).toBeLessThanOrEqual(3 + instances.length);
    expect(statuses.slice(-3)).toEqual([429, 429, 429]);
  });
});

describe('a Redis master killed mid-run', () => {
  it('fails cleanly with 503, recovers after the master restarts, and issues no token twice', async () => {
    // Rate limits from the previous test must not interfere: a fresh client.
    const created = await clientsCreate(ops, { name: 'Outage App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    await clientsSetStatus(ops, created.client_id, 'approved');
    client = { client_id: created.client_id, client_secret: created.client_secret! };
    const tokens = (await exchange(0, await hoppingCode())).body;
    const pendingCode = await hoppingCode();

    const victim = cluster.nodes[0]!;
    await cluster.kill(victim);
    const ready = async (i: number) => (await fetch(`${instances[i]!.url}/ready`)).status;
    await eventually(async () => expect(await ready(0)).toBe(503), { timeout: 10_000, interval: 100 });

    const during = await exchange(1, pendingCode);
    expect(during.status).toBe(503);
    expect(during.body.error).toBe('temporarily_unavailable');
    const api = await getMe(instances[2]!.url, tokens.access_token as string);
    expect(api.status).toBe(503);
    expect(api.body.error.code).toBe('temporarily_unavailable');

    await cluster.restart(victim);
    await cluster.waitUntilHealthy();
    for (const i of [0, 1, 2]) await eventually(async () => expect(await ready(i), `instance ${i}`).toBe(200), { timeout: 10_000, interval: 100 });
    // The code was not spent by the failed attempt: it redeems exactly once.
    const results = await Promise.all([0, 1, 2].map((i) => exchange(i, pendingCode)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect((await getMe(instances[2]!.url, tokens.access_token as string)).status).toBe(200);
  }, 60_000);
});

describe('the operator scripts\' mark in a Redis Cluster', () => {
  it('is recorded as the cluster\'s and put back by the instances once lost (src/storage/store-record.ts)', async () => {
    const row = await pg.db('artifact_store').first();
    expect(row).toMatchObject({ kind: 'redis', redis_mode: 'cluster', redis_mark: expect.any(String) });
    expect(await opsRedis.get('oauth:store-mark')).toBe(row.redis_mark);
    await opsRedis.del('oauth:store-mark'); // as a master's data lost
    await eventually(async () => expect(await opsRedis.get('oauth:store-mark')).toBe((await pg.db('artifact_store').first()).redis_mark), { timeout: 15_000, interval: 200 });
  });
});

describe('PostgreSQL for many instances', () => {
  it('lets several instances run migrations at once on a fresh database', async () => {
    for (let round = 0; round < 3; round++) await raceMigrations();
  });

  async function raceMigrations() {
    const fresh = await createTestDatabase({ migrate: false });
    const pools = [0, 1, 2].map(() => connectDb({ databaseUrl: fresh.url, dataDir: '' }));
    // knex's migration lock serialises them; the losers wait and find nothing left to apply.
    const applied = await Promise.all(pools.map((db) => migrateLatest(db)));
    expect(applied.map((a) => a.length).filter((n) => n > 0)).toHaveLength(1);
    const all = await migrationSource.getMigrations([]);
    expect(await pools[0]!('knex_migrations').pluck('name')).toEqual(all);
    await Promise.all(pools.map((db) => db.destroy()));
    await fresh.drop();
  }
});
