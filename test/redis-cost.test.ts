// What the fast path's two plain cases cost Redis, counted by a redis-server of the test's own
// (INFO commandstats, commands run by scripts included; total_reads_processed, its network reads:
// commands written together are one): a rotating refresh and an introspection, in steady state.
// These are the figures `npm run bench` reports per request (docs/benchmark.md); a change that
// adds a command or a round trip to either shows here first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startInstance, type AppInstance, type TestServer } from './support/server.ts';
import { createTestDatabase, type TestDatabase } from './support/services.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';
import { approvedClient, newUser, tokensFor, type TestClient } from './support/fixtures.ts';

let own: OwnRedis;
let pg: TestDatabase;
let instance: AppInstance;
let counter: Redis;
let app: TestClient;
let tokens: { access_token: string; refresh_token: string };

beforeAll(async () => {
  [own, pg] = await Promise.all([startOwnRedis(), createTestDatabase()]);
  // The fast path on whatever the run's FAST_PATHS (CI runs this file once more with it off).
  instance = await startInstance({ DATABASE_URL: pg.url, REDIS_URL: own.url, FAST_PATHS: 'on' }, { db: pg.db });
  const server = { ...instance, pg } as TestServer;
  app = await approvedClient(server, ['PROFILE_READ']);
  tokens = await tokensFor(server, app, await newUser(server), 'PROFILE_READ');
  counter = new Redis(own.url);
});
afterAll(async () => {
  counter?.disconnect();
  await instance?.close();
  await Promise.all([own?.stop(), pg?.drop()]);
});

/** Commands (by name) and network reads Redis counted since the last call, less the INFO asking. */
async function counted(): Promise<{ commands: Record<string, number>; total: number; reads: number }> {
  const text = (await counter.call('INFO', 'stats', 'commandstats')) as string;
  await counter.call('CONFIG', 'RESETSTAT');
  const commands = Object.fromEntries([...text.matchAll(/^cmdstat_(\S+):calls=(\d+)/gm)].filter(([, name]) => !['info', 'config|resetstat'].includes(name!)).map(([, name, calls]) => [name!, Number(calls)]));
  const total = Object.values(commands).reduce((a, b) => a + b, 0);
  // Counted since the last CONFIG RESETSTAT (whose own read went before it reset); the INFO's read is one.
  return { commands, total, reads: Number(/^total_reads_processed:(\d+)/m.exec(text)![1]) - 1 };
}

/**
 * The least a request cost of five sent one at a time (after one that warmed the caches and
 * opened the counters' windows): the server's own background work (its mark on Redis, a counter's
 * window ending) can only add to a request's count, never take from it.
 */
async function leastCost(send: () => Promise<void>) {
  await send();
  const costs = [];
  for (let i = 0; i < 5; i++) {
    await counted();
    await send();
    costs.push(await counted());
  }
  return costs.reduce((least, cost) => (cost.total < least.total || (cost.total === least.total && cost.reads < least.reads) ? cost : least));
}

async function post(path: string, fields: Record<string, string>) {
  const res = await fetch(`${instance.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('Redis per request on the fast path (a server with its own redis-server)', () => {
  it('a rotating refresh: 31 commands in 2 round trips (the token with the secret mark; the rotation with both budgets)', async () => {
    let refreshToken = tokens.refresh_token;
    const cost = await leastCost(async () => {
      const res = await post('/v2/auth/oauth2/token', { grant_type: 'refresh_token', refresh_token: refreshToken, ...app });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      refreshToken = (res.body as { refresh_token: string }).refresh_token;
    });
    // The client's budget and the (client, user) refresh budget are counted in one script, 2
    // commands each inside it (INCRBY, PTTL): with rate-limiter-flexible's own script, a script
    // each with a SET NX first.
    expect({ total: cost.total, reads: cost.reads }, JSON.stringify(cost.commands)).toEqual({ total: 31, reads: 2 });
    expect(cost.commands).toMatchObject({ evalsha: 3, incrby: 2, pttl: 2 });
    // Each counter still ends with its minute: INCRBY made it, the script gave it the window.
    const counters = await counter.keys('oauth:rl:*');
    for (const name of ['client-budget-6000', 'refresh-user']) expect(counters.filter((key) => key.startsWith(`oauth:rl:${name}:`)), name).toHaveLength(1);
    for (const key of counters) expect(await counter.pttl(key), key).toSatisfy((ms: number) => ms > 0 && ms <= 60_000);
  });

  it('an introspection: 5 commands in 2 round trips (the secret mark with the grant; the budget)', async () => {
    const cost = await leastCost(async () => {
      const res = await post('/v2/auth/oauth2/introspect', { token: tokens.access_token, ...app });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ active: true });
    });
    expect({ total: cost.total, reads: cost.reads }, JSON.stringify(cost.commands)).toEqual({ total: 5, reads: 2 });
    expect(cost.commands).toEqual({ exists: 1, hgetall: 1, evalsha: 1, incrby: 1, pttl: 1 });
  });
});
