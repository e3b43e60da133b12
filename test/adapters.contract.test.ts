// One contract, two adapters: the SQL adapter (on PostgreSQL) and the Redis adapter must behave alike.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import type { Adapter } from 'oidc-provider';
import { SqlAdapter } from '../src/storage/sql-adapter.ts';
import { RedisAdapter } from '../src/storage/redis-adapter.ts';
import { artifactStorage, type ArtifactStorage } from '../src/storage/artifacts.ts';
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from './support/services.ts';

let pg: TestDatabase;
let redis: TestRedis;

beforeAll(async () => {
  [pg, redis] = await Promise.all([createTestDatabase(), createTestRedis()]);
});
afterAll(async () => {
  await Promise.all([pg?.drop(), redis?.cleanup()]);
});

const backends: Array<[string, (model: string) => Adapter, () => ArtifactStorage]> = [
  ['SQL (PostgreSQL)', (model) => new SqlAdapter(pg.db, model), () => artifactStorage(pg.db)],
  ['Redis', (model) => new RedisAdapter(redis.redis, model, redis.prefix), () => artifactStorage(pg.db, redis.redis, redis.prefix)],
];

const id = () => randomBytes(16).toString('base64url');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(backends)('%s adapter', (_name, make, storage) => {
  it('stores and finds a payload, returning its id as jti', async () => {
    const a = make('AccessToken');
    const jti = id();
    await a.upsert(jti, { jti, kind: 'AccessToken', accountId: '1', scope: 'PROFILE_READ', grantId: 'g1' }, 60);
    expect(await a.find(jti)).toMatchObject({ jti, accountId: '1', scope: 'PROFILE_READ', grantId: 'g1' });
    expect(await a.find(id())).toBeUndefined();
  });

  it('keeps models apart', async () => {
    const jti = id();
    await make('AccessToken').upsert(jti, { jti, kind: 'AccessToken' }, 60);
    expect(await make('RefreshToken').find(jti)).toBeUndefined();
  });

  it('upsert replaces the payload', async () => {
    const a = make('Grant');
    const jti = id();
    await a.upsert(jti, { jti, kind: 'Grant', accountId: '1' }, 60);
    await a.upsert(jti, { jti, kind: 'Grant', accountId: '2' }, 60);
    expect(await a.find(jti)).toMatchObject({ accountId: '2' });
  });

  // The store's own expiry (a Redis TTL; SQL's expires_at against now()), on real time: proven
  // here once per store, for the artifacts and for the single flights (the refresh grace window's
  // store side; its rule is proven with a moved clock in test/refresh-grace.test.ts).
  it('honours expiresIn, and a single flight ends with its seconds', async () => {
    const a = make('AuthorizationCode');
    const jti = id();
    await a.upsert(jti, { jti, kind: 'AuthorizationCode' }, 1);
    // Through the provider's storage a code outlives its expiry (KEPT_PAST_EXPIRY_SECONDS), so that
    // a late exchange is told "expired"; an access token does not.
    const [keptCode, token] = [storage().adapterFor('AuthorizationCode'), storage().adapterFor('AccessToken')];
    const [late, gone] = [id(), id()];
    await keptCode.upsert(late, { jti: late, kind: 'AuthorizationCode', exp: Math.floor(Date.now() / 1000) + 1 }, 1);
    await token.upsert(gone, { jti: gone, kind: 'AccessToken' }, 1);
    const { flights } = storage();
    const flight = id();
    expect(await flights.claim(flight, 1)).toBe(true);
    await flights.settle(flight, 'answer', 1);
    expect(await a.find(jti)).toBeDefined();
    expect(await flights.read(flight)).toBe('answer');
    expect(await flights.claim(flight, 1)).toBe(false);
    await sleep(2100);
    expect(await a.find(jti)).toBeUndefined();
    expect(await token.find(gone)).toBeUndefined();
    expect(await keptCode.find(late)).toMatchObject({ jti: late });
    expect(await flights.read(flight)).toBeUndefined();
    expect(await flights.claim(flight, 1)).toBe(true);
  });

  it('consume marks the artifact consumed, once', async () => {
    const a = make('AuthorizationCode');
    const jti = id();
    await a.upsert(jti, { jti, kind: 'AuthorizationCode', grantId: 'g' }, 60);
    expect((await a.find(jti))?.consumed).toBeFalsy();
    await a.consume(jti);
    const found = await a.find(jti);
    expect(found?.consumed).toBeTruthy();
    expect(typeof found?.consumed).toBe('number');
    await expect(a.consume(jti)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('lets exactly one of many concurrent consumes win', async () => {
    const a = make('RefreshToken');
    const jti = id();
    await a.upsert(jti, { jti, kind: 'RefreshToken' }, 60);
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => a.consume(jti)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('consume of a missing artifact does not create it', async () => {
    const a = make('RefreshToken');
    const jti = id();
    await expect(a.consume(jti)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await a.find(jti)).toBeUndefined();
  });

  it('destroy removes the artifact', async () => {
    const a = make('AccessToken');
    const jti = id();
    await a.upsert(jti, { jti, kind: 'AccessToken' }, 60);
    await a.destroy(jti);
    expect(await a.find(jti)).toBeUndefined();
  });

  it('revokeByGrantId removes every artifact of the grant for that model, and nothing else', async () => {
    const at = make('AccessToken');
    const rt = make('RefreshToken');
    const [grant, other] = [id(), id()];
    const [a1, a2, a3, r1] = [id(), id(), id(), id()];
    await at.upsert(a1, { jti: a1, kind: 'AccessToken', grantId: grant }, 60);
    await at.upsert(a2, { jti: a2, kind: 'AccessToken', grantId: grant }, 120);
    await at.upsert(a3, { jti: a3, kind: 'AccessToken', grantId: other }, 60);
    await rt.upsert(r1, { jti: r1, kind: 'RefreshToken', grantId: grant }, 60);
    await at.revokeByGrantId(grant);
    expect(await at.find(a1)).toBeUndefined();
    expect(await at.find(a2)).toBeUndefined();
    expect(await at.find(a3)).toBeDefined();
    expect(await rt.find(r1)).toBeDefined();
    await rt.revokeByGrantId(grant);
    expect(await rt.find(r1)).toBeUndefined();
  });

  it('findByUid finds a session by its uid', async () => {
    const a = make('Session');
    const [jti, uid] = [id(), id()];
    await a.upsert(jti, { jti, uid, kind: 'Session', accountId: '7' }, 60);
    expect(await a.findByUid(uid)).toMatchObject({ jti, uid, accountId: '7' });
    expect(await a.findByUid(id())).toBeUndefined();
    await a.destroy(jti);
    expect(await a.findByUid(uid)).toBeUndefined();
  });

  it('revokeClient removes every artifact of one client, across models, and nothing else', async () => {
    const [mine, theirs] = [id(), id()];
    const made: Array<[string, string, string]> = [];
    for (const model of ['AccessToken', 'RefreshToken', 'AuthorizationCode', 'Grant']) {
      for (const clientId of [mine, theirs]) {
        const jti = id();
        await make(model).upsert(jti, { jti, kind: model, clientId, grantId: id() }, 60);
        made.push([model, jti, clientId]);
      }
    }
    await storage().revokeClient(mine);
    for (const [model, jti, clientId] of made) {
      const found = await make(model).find(jti);
      if (clientId === mine) expect(found, model).toBeUndefined();
      else expect(found, model).toBeDefined();
    }
  });

  // What the organization changes and the operator scripts revoke without a provider
  // (src/orgs/installations.ts): the HTTP tests of those run on Redis only.
  it('revokeGrant removes the grant and every code and token issued from it, and nothing of another grant', async () => {
    const [mine, theirs] = [id(), id()];
    await make('Grant').upsert(mine, { jti: mine, kind: 'Grant' }, 60);
    await make('Grant').upsert(theirs, { jti: theirs, kind: 'Grant' }, 60);
    const made: Array<[string, string, string]> = [];
    for (const model of ['AccessToken', 'RefreshToken', 'AuthorizationCode']) {
      for (const grantId of [mine, theirs]) {
        const jti = id();
        await make(model).upsert(jti, { jti, kind: model, clientId: 'c', grantId }, 60);
        made.push([model, jti, grantId]);
      }
    }
    await storage().revokeGrant(mine);
    expect(await make('Grant').find(mine)).toBeUndefined();
    expect(await make('Grant').find(theirs)).toBeDefined();
    for (const [model, jti, grantId] of made) {
      const found = await make(model).find(jti);
      if (grantId === mine) expect(found, model).toBeUndefined();
      else expect(found, model).toBeDefined();
    }
  });

  // The refresh grace window's single flights (src/oauth/refresh-grace.ts): the HTTP tests of a
  // window per client run on Redis only.
  it('flights: one of many concurrent claims wins; others read it unsettled, then its value', async () => {
    const { flights } = storage();
    const key = id();
    expect(await flights.read(key)).toBeUndefined();
    const claims = await Promise.all(Array.from({ length: 10 }, () => flights.claim(key, 60)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await flights.read(key)).toBe('');
    await flights.settle(key, 'answered', 60);
    expect(await flights.read(key)).toBe('answered');
    expect(await flights.claim(key, 60)).toBe(false);
    expect(await flights.read(id())).toBeUndefined();
  });
});

describe('Redis adapter: index sets', () => {
  const grantIndex = (grantId: string) => `${redis.prefix}AccessToken:grant:${grantId}`;
  const save = (grantId: string, expiresIn?: number) => {
    const jti = id();
    return new RedisAdapter(redis.redis, 'AccessToken', redis.prefix).upsert(jti, { jti, kind: 'AccessToken', grantId }, expiresIn);
  };

  it("live as long as the longest-lived member, never shorter", async () => {
    const grantId = id();
    await save(grantId, 100);
    await save(grantId, 50);
    expect(await redis.redis.ttl(grantIndex(grantId))).toBeGreaterThan(90);
    await save(grantId, 300);
    expect(await redis.redis.ttl(grantIndex(grantId))).toBeGreaterThan(290);
    expect(await redis.redis.scard(grantIndex(grantId))).toBe(3);
  });

  it('stay for good once a member never expires, even if later members do', async () => {
    const grantId = id();
    await save(grantId, 100);
    await save(grantId, undefined);
    await save(grantId, 100);
    expect(await redis.redis.ttl(grantIndex(grantId))).toBe(-1);
  });

  it('sends its scripts by SHA1 (EVALSHA), and still saves and consumes after Redis forgot them', async () => {
    const adapter = new RedisAdapter(redis.redis, 'RefreshToken', redis.prefix);
    const calls = async () => {
      const stats = String(await redis.redis.info('commandstats'));
      return Object.fromEntries(['eval', 'evalsha'].map((name) => [name, Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0)]));
    };
    await adapter.upsert(id(), { kind: 'RefreshToken', grantId: id() }, 60); // loads the scripts once, if needed
    const before = await calls();
    const jti = id();
    await adapter.upsert(jti, { jti, kind: 'RefreshToken', grantId: id() }, 60);
    await adapter.consume(jti);
    const after = await calls();
    expect(after.evalsha! - before.evalsha!).toBeGreaterThanOrEqual(2);
    await redis.redis.script('FLUSH');
    const again = id();
    await adapter.upsert(again, { jti: again, kind: 'RefreshToken', grantId: id() }, 60);
    await adapter.consume(again);
    expect((await adapter.find(again))?.consumed).toEqual(expect.any(Number));
  });

  it('rejects a save that Redis refuses in part, rather than leave an unindexed token unnoticed', async () => {
    const grantId = id();
    // The grant's index is not a set: its SADD fails with WRONGTYPE, and the artifact is not written.
    await redis.redis.set(`${redis.prefix}AccessToken:grant:${grantId}`, 'not a set');
    const jti = id();
    const adapter = new RedisAdapter(redis.redis, 'AccessToken', redis.prefix);
    await expect(adapter.upsert(jti, { jti, kind: 'AccessToken', grantId }, 60)).rejects.toThrow(/WRONGTYPE/);
    expect(await adapter.find(jti)).toBeUndefined();
  });
});
