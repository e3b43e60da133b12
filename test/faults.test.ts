// Failures of the real services: Redis or PostgreSQL unreachable (a cut TCP proxy in front of the
// real server) → 503s and /ready 503, no crash, then recovery by itself; and an app restart between
// authorization and code exchange loses nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis } from '../src/storage/redis.ts';
import { connectDb } from '../src/storage/db.ts';
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from './support/services.ts';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.ts';
import { getMe, tokenRequest } from './support/oauth.ts';
import { codeFor, newUser, REDIRECT, tokensFor, approvedClient, type TestClient } from './support/fixtures.ts';
import { startInstance, type TestServer } from './support/server.ts';
import { eventually } from './support/eventually.ts';

/** Until `check` holds (an error counts as not yet): the service is back, or gone. */
const until = (check: () => Promise<boolean>, timeout = 15_000) =>
  eventually(async () => expect(await check().catch(() => false), 'the service did not recover in time').toBe(true), { timeout, interval: 200 });

/** `promise`'s value, or undefined when it has not settled within `ms`: a deadline, ended by the answer. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      resolve(undefined);
    }, ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

let pg: TestDatabase;
let redis: TestRedis;
let pgProxy: TcpProxy;
let redisProxy: TcpProxy;
let server: TestServer;

/** Our app whose PostgreSQL and Redis connections both go through cuttable proxies. */
async function start(): Promise<TestServer> {
  const pgUrl = new URL(pg.url);
  pgUrl.port = String(pgProxy.port);
  const redisUrl = `redis://127.0.0.1:${redisProxy.port}`;
  const db = connectDb({ databaseUrl: pgUrl.toString(), dataDir: '' });
  const appRedis = connectRedis(redisUrl);
  const instance = await startInstance({ DATABASE_URL: pgUrl.toString(), REDIS_URL: redisUrl }, { db, redis: appRedis, redisPrefix: redis.prefix });
  return {
    ...instance,
    pg,
    redis,
    async close() {
      await instance.close();
      appRedis.disconnect();
      await db.destroy();
    },
  };
}

beforeAll(async () => {
  [pg, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
  [pgProxy, redisProxy] = await Promise.all([startTcpProxy(Number(new URL(pg.url).port || 5432)), startTcpProxy(Number(new URL(redis.url).port || 6379))]);
  server = await start();
});
afterAll(async () => {
  await server?.close();
  await Promise.all([pgProxy?.close(), redisProxy?.close()]);
  await Promise.all([pg?.drop(), redis?.cleanup()]);
});

async function ready() {
  const res = await fetch(`${server.url}/ready`);
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

describe('dependency failures', () => {
  let client: TestClient;
  let user: Awaited<ReturnType<typeof newUser>>;

  beforeAll(async () => {
    client = await approvedClient(server, ['PROFILE_READ']);
    user = await newUser(server);
  });

  it('answers 503 while Redis is unreachable, and recovers by itself', async () => {
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    await redisProxy.cut();

    const started = Date.now();
    // Revocations are not heard meanwhile: access tokens are not served from memory.
    expect(await ready()).toEqual({ status: 503, body: { status: 'unavailable', database: 'ok', redis: 'unavailable', memory: { records: 'serving', tokens: 'bypassed' } } });
    expect(Date.now() - started).toBeLessThan(5000); // prompt, even on a loaded machine

    const me = await getMe(server.url, tokens.access_token);
    expect(me.status).toBe(503);
    expect(me.body).toEqual({ status: 'error', error: { code: 'temporarily_unavailable', message: expect.any(String) } });
    const refresh = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client });
    expect(refresh.status).toBe(503);
    expect(refresh.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
    expect(refresh.headers.get('retry-after')).toBe('5');
    const page = await fetch(`${server.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: client.client_id, redirect_uri: REDIRECT, response_type: 'code', scope: 'PROFILE_READ' })}`, { redirect: 'manual' });
    expect(page.status).toBe(503);

    await redisProxy.restore();
    await until(async () => (await ready()).status === 200);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);
    // The refresh token was not spent by the failed attempt.
    expect((await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client })).status).toBe(200);
  });

  it('answers every request that needs Redis 503 at once while it is down, and recovers by itself', async () => {
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    const code = await codeFor(server, client, user, 'PROFILE_READ');
    const form = (fields: Record<string, string>) => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
    const requests = {
      code: () => fetch(`${server.url}/v2/auth/oauth2/token`, form({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...client })),
      refresh: () => fetch(`${server.url}/v2/auth/oauth2/token`, form({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client })),
      refreshJson: () =>
        fetch(`${server.url}/v2/auth/oauth2/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client }),
        }),
      junkRefresh: () => fetch(`${server.url}/v2/auth/oauth2/token`, form({ grant_type: 'refresh_token', refresh_token: 'no-such-token', ...client })),
      introspection: () => fetch(`${server.url}/v2/auth/oauth2/introspect`, form({ token: tokens.access_token, ...client })),
      me: () => fetch(`${server.url}/v2/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } }),
      check: () => fetch(`${server.url}/v2/auth/check`, { headers: { authorization: `Bearer ${tokens.access_token}`, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/me' } }),
    };
    await redisProxy.cut();
    await until(async () => (await ready()).body.redis === 'unavailable');

    // Across several reconnection attempts (their delays grow to 2 s), each request on its own:
    // a round, then the client's next attempt, then the next round.
    let attempts = 0;
    const attempted = () => attempts++;
    server.system.redis!.on('reconnecting', attempted);
    const answers: string[] = [];
    try {
      for (let round = 0; round < 3; round += 1) {
        for (const [name, send] of Object.entries(requests)) {
          const started = Date.now();
          const res = await within(send(), 3000);
          const ms = Date.now() - started;
          answers.push(res ? `${name} ${res.status} ${res.headers.get('retry-after')} ${ms < 1000 ? 'prompt' : `after ${ms} ms`}` : `${name}: no answer within 3 s`);
        }
        const seen = attempts;
        await eventually(() => expect(attempts, 'another reconnection attempt').toBeGreaterThan(seen), { timeout: 10_000 });
      }
    } finally {
      server.system.redis!.off('reconnecting', attempted);
    }
    expect(answers).toEqual([0, 1, 2].flatMap(() => Object.keys(requests).map((name) => `${name} 503 5 prompt`)));

    await redisProxy.restore();
    await until(async () => (await ready()).status === 200);
    expect((await requests.me()).status).toBe(200);
    expect((await requests.check()).status).toBe(200);
    expect(((await (await requests.introspection()).json()) as { active: boolean }).active).toBe(true);
    expect((await requests.code()).status).toBe(200);
    // The refresh token was not spent by the failed attempts.
    expect((await requests.refresh()).status).toBe(200);
  }, 120_000);

  it('answers 503 while PostgreSQL is unreachable, and recovers by itself', async () => {
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    await pgProxy.cut();

    const started = Date.now();
    // Record changes are not heard meanwhile: client and user records are not served from memory.
    expect(await ready()).toEqual({ status: 503, body: { status: 'unavailable', database: 'unavailable', redis: 'ok', memory: { records: 'bypassed', tokens: 'serving' } } });
    expect(Date.now() - started).toBeLessThan(5000); // prompt, even on a loaded machine
    // The token lookup is in Redis, but the profile is in PostgreSQL.
    const me = await getMe(server.url, tokens.access_token);
    expect(me.status).toBe(503);
    expect(me.body.error.code).toBe('temporarily_unavailable');
    // Client authentication reads the client registry.
    const refresh = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client });
    expect(refresh.status).toBe(503);
    expect(refresh.body.error).toBe('temporarily_unavailable');

    await pgProxy.restore();
    await until(async () => (await ready()).status === 200);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);
    expect((await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client })).status).toBe(200);
  });

  it('loses nothing when the app restarts between authorization and code exchange', async () => {
    const code = await codeFor(server, client, user, 'PROFILE_READ');
    await server.close();
    server = await start();
    const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...client });
    expect(res.status).toBe(200);
    expect((await getMe(server.url, res.body.access_token as string)).status).toBe(200);
  });
});
