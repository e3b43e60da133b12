// Storage and data for a run, made with the project's own code: a fresh PostgreSQL database and a
// flushed Redis logical database; users and approved clients through the operator functions; and
// tokens minted by our provider's own models (createProvider, the Redis adapter), as the anchor's
// /__bench/mint does for it: one Grant per token, then the token, as a code exchange would store them.
import { randomBytes } from 'node:crypto';
import knexFactory from 'knex';
import { Redis } from 'ioredis';
import type { Client } from 'oidc-provider';
import { loadConfig } from '../../src/config.ts';
import { buildSystem, type System } from '../../src/system.ts';
import { clientsCreate, clientsSetRateLimit, clientsSetStatus, usersCreate, type AdminContext } from '../../src/admin/commands.ts';
import { RedisAdapter } from '../../src/storage/redis-adapter.ts';
import { DEFAULT_REDIS_PREFIX } from '../../src/storage/redis-keys.ts';
import { ACCESS_TOKEN_TTL } from '../../src/oauth/provider.ts';
import { onCleanup } from './procs.ts';

export const SCOPE = 'PROFILE_READ PROFILE_WRITE BOOKING_READ';
const REDIRECT_URI = 'https://app.example.com/callback';

const alive = (pid: number) => {
  try {
    return process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** A fresh database `bench_<pid>_<hex>`, dropped at cleanup (as are those of runs that died first). */
export async function createDatabase(adminUrl: string): Promise<{ url: string; name: string }> {
  const admin = () => knexFactory({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
  const drop = async (name: string) => {
    const k = admin();
    await k.raw(`drop database if exists ${name} with (force)`).finally(() => k.destroy());
  };
  const k = admin();
  try {
    const { rows } = await k.raw(`select datname from pg_database where datname like 'bench\\_%'`);
    for (const { datname } of rows as { datname: string }[]) if (!alive(Number(/^bench_(\d+)_[0-9a-f]+$/.exec(datname)?.[1] ?? process.pid))) await drop(datname);
    const name = `bench_${process.pid}_${randomBytes(4).toString('hex')}`;
    await k.raw(`create database ${name}`);
    onCleanup(`drop database ${name}`, () => drop(name));
    return { url: Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString(), name };
  } catch (err) {
    throw new Error(`PostgreSQL at ${adminUrl} (a user that may create databases) is needed: ${(err as Error).message}`);
  } finally {
    await k.destroy();
  }
}

/** The reserved Redis logical database: flushed now and at cleanup. */
export async function flushRedis(url: string): Promise<void> {
  const flush = async () => {
    const redis = new Redis(url, { maxRetriesPerRequest: 1 });
    await redis.flushdb().finally(() => redis.disconnect());
  };
  await flush();
  onCleanup(`flush ${url}`, flush);
}

// One per bench run: servers sharing a database must decrypt each other's stored signing keys.
const DATA_ENCRYPTION_KEY = randomBytes(32).toString('hex');

/**
 * Our server's environment, as deployed: production mode, log level info, rate limits on (defaults),
 * but for the per-user refresh budget: the bench's 100 users refresh thousands of times a minute
 * each, which that budget exists to stop (it is still counted on every refresh).
 */
export function ourEnv(databaseUrl: string, redisUrl: string, port: number): Record<string, string> {
  const base = `http://127.0.0.1:${port}`;
  return {
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    COOKIE_KEYS: randomBytes(32).toString('hex'),
    DATA_ENCRYPTION_KEYS: DATA_ENCRYPTION_KEY,
    PORT: String(port),
    HOST: '127.0.0.1',
    APP_URL: base,
    LOG_LEVEL: 'info',
    RATE_LIMIT_REFRESH_PER_MINUTE_PER_USER: '100000000',
  };
}

/** `task(i)` for every i < n, at most `width` at a time. */
async function parallel(n: number, width: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, n) }, async () => {
    for (let i = next++; i < n; i = next++) await task(i);
  }));
}

export interface BenchClient {
  id: string;
  secret: string;
}

/**
 * The bench's own instance of our system on the server's stores (not listening): it migrates the
 * database, and its provider mints tokens. Its logs are silenced.
 */
export class Seeder {
  private found = new Map<string, Client>();
  private constructor(readonly system: System) {}

  static async open(env: Record<string, string>): Promise<Seeder> {
    const system = await buildSystem(loadConfig({ ...env, LOG_LEVEL: 'silent' }));
    const seeder = new Seeder(system);
    onCleanup('close the seeding system', () => system.close());
    return seeder;
  }

  private get admin(): AdminContext {
    return { db: this.system.db, artifacts: this.system.artifacts, outbox: this.system.outbox, records: this.system.records, by: { actor: 'bench' } };
  }

  async users(n: number): Promise<string[]> {
    const users = [];
    for (let i = 0; i < n; i++) {
      const email = `bench-${i}-${randomBytes(3).toString('hex')}@example.com`;
      users.push(String((await usersCreate(this.system, { email, password: randomBytes(12).toString('base64url'), name: `Bench ${i}` })).id));
    }
    return users;
  }

  /** `n` approved confidential clients; `perMinute`: their token-endpoint budget (`clients set-rate-limit`). */
  async clients(n: number, perMinute?: number): Promise<BenchClient[]> {
    const out: BenchClient[] = new Array(n);
    await parallel(n, 8, async (i) => {
      const c = await clientsCreate(this.admin, { name: `Bench ${i}`, redirectUri: [REDIRECT_URI], scope: SCOPE.split(' ') });
      await clientsSetStatus(this.admin, c.client_id, 'approved');
      if (perMinute) await clientsSetRateLimit(this.admin, c.client_id, String(perMinute));
      out[i] = { id: c.client_id, secret: c.client_secret! };
    });
    return out;
  }

  /** `n` tokens, spread over `clients` and `users` in turn; each with its own Grant; `jkt`: bound to that DPoP key. */
  async mint(kind: 'access' | 'refresh', clients: BenchClient[], users: string[], n: number, jkt?: string): Promise<{ token: string; client: BenchClient }[]> {
    const { provider } = this.system;
    const out: { token: string; client: BenchClient }[] = new Array(n);
    await parallel(n, 500, async (i) => {
      const bc = clients[i % clients.length]!;
      let client = this.found.get(bc.id);
      if (!client) this.found.set(bc.id, (client = (await provider.Client.find(bc.id))!)); // read once: no SQL while minting later
      const accountId = users[i % users.length]!;
      const grant = new provider.Grant({ accountId, clientId: bc.id });
      grant.addOIDCScope(SCOPE);
      const grantId = await grant.save();
      const Model = kind === 'access' ? provider.AccessToken : provider.RefreshToken;
      const token = new Model({ accountId, client, grantId, scope: SCOPE, gty: 'authorization_code' });
      // Bound to a DPoP key's thumbprint (RFC 9449 6), as a token request with a proof makes it.
      if (jkt) (token as InstanceType<typeof provider.AccessToken>).setThumbprint('jkt', jkt);
      out[i] = { token: await token.save(), client: bc };
    });
    return out;
  }
}

/**
 * `count` more access tokens, written straight into Redis by the project's adapter (one script per
 * token, pipelined) in the format of a minted one (`template`), each with its own grant id: enough
 * tokens for the scale figures in a minute. Returns their ids and Redis's used_memory growth.
 */
export async function fillAccessTokens(redisUrl: string, template: string, count: number): Promise<{ ids: string[]; bytes: number }> {
  const redis = new Redis(redisUrl, { enableAutoPipelining: true });
  try {
    const adapter = new RedisAdapter(redis, 'AccessToken', DEFAULT_REDIS_PREFIX);
    const payload = (await adapter.find(template))!;
    const used = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
    const before = await used();
    const ids = Array.from({ length: count }, () => randomBytes(32).toString('base64url'));
    await parallel(count, 5000, (i) => adapter.upsert(ids[i]!, { ...payload, jti: ids[i], grantId: randomBytes(32).toString('base64url') }, ACCESS_TOKEN_TTL));
    return { ids, bytes: (await used()) - before };
  } finally {
    redis.disconnect();
  }
}
