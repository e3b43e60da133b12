// Our real app on a real port, on a per-file PostgreSQL database and (optionally) Redis.
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config.ts';
import { metricsListener } from '../../src/http/metrics.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { buildSystem, type Subsystems, type System, type SystemOverrides } from '../../src/system.ts';
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from './services.ts';

export type Storage = 'redis' | 'sql';

/** Tests hash passwords at N=2^10 unless they ask for the real cost (PASSWORD_HASH_LOG_N: '17'). */
const FAST_PASSWORD_HASHING = '10';
/**
 * Sign-in challenges take 10 PBKDF2 iterations a counter value here, not 1000: the work asked (the
 * counter) and every rule about it are unchanged, solving costs a hundredth. Solving at the real
 * cost was a fifth of the suite's CPU. A test that needs the real cost passes challengeIterations.
 */
const CHEAP_CHALLENGES = 10;

/** What a test instance runs in the background: nothing (its tests call the sweeps they need). */
const QUIET: Subsystems = { webhookDelivery: false, sweeps: false };
/** For the tests of webhook deliveries: the delivery worker runs (the sweeps are still called by the tests). */
export const DELIVERING: Pick<SystemOverrides, 'run'> = { run: { webhookDelivery: true, sweeps: false } };

export interface TestServer {
  url: string;
  /** The separate metrics listener (as METRICS_PORT in main.ts): `${metricsUrl}/metrics`. */
  metricsUrl: string;
  system: System;
  pg: TestDatabase;
  redis?: TestRedis;
  close(): Promise<void>;
}

export interface AppInstance {
  url: string;
  metricsUrl: string;
  system: System;
  close(): Promise<void>;
}

/**
 * One instance of the app on a free loopback port. `env` is its configuration (APP_URL defaults
 * to its own address); `overrides` hand it existing connections (see buildSystem).
 */
export async function startInstance(env: Record<string, string>, overrides: SystemOverrides = {}): Promise<AppInstance> {
  const listener = createHttpServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  // Production refuses the fast cost: an instance started as production hashes as production does.
  const hashing = env.NODE_ENV === 'production' ? {} : { PASSWORD_HASH_LOG_N: FAST_PASSWORD_HASHING };
  // FAST_PATHS=off in the test run's environment (CI runs the suite so once) reaches every instance.
  const fastPaths = process.env.FAST_PATHS ? { FAST_PATHS: process.env.FAST_PATHS } : {};
  // Tests refresh one user's tokens far more often than people do: the per-user refresh budget is
  // raised, except where a test sets it (test/rate-limits.test.ts).
  const refreshes = { RATE_LIMIT_REFRESH_PER_MINUTE_PER_USER: '100000' };
  // A failed metadata-document fetch is answered no sooner than the fetch timeout (3 s) after it
  // began; tests that meet many such refusals get theirs at once, except where a test asks for the
  // real wait (test/cimd-fetch-limits.test.ts).
  // An idle webhook worker polls its queue twice a second (pg-boss's floor) rather than once: one
  // client's events go one at a time, each found by a poll.
  // No background work unless a test asks for it (`run: DELIVERING`): a test instance queues its
  // events (the outbox) but delivers none, and sweeps only when a test calls them. The worker's
  // polling and pg-boss's maintenance cost CPU and database round trips for every file otherwise.
  const system = await buildSystem(loadConfig({ NODE_ENV: 'test', APP_URL: url, ...hashing, ...fastPaths, ...refreshes, ...env }), { cimdFailedAnswerMs: 0, challengeIterations: CHEAP_CHALLENGES, webhookPollingSeconds: 0.5, run: QUIET, ...overrides }).catch((err: Error) => {
    if (env.DATA_ENCRYPTION_KEYS && /encrypted under key/.test(err.message)) {
      err.message += " (test: a database of createTestDatabase() holds a signing key sealed under the development key; start a server with DATA_ENCRYPTION_KEYS of its own on createTestDatabase({ migrate: 'bare' }))";
    }
    throw err;
  });
  listener.on('request', system.listener);
  const metrics = metricsListener(system.metrics);
  await new Promise<void>((resolve) => metrics.listen(0, '127.0.0.1', resolve));
  return {
    url,
    metricsUrl: `http://127.0.0.1:${(metrics.address() as AddressInfo).port}`,
    system,
    async close() {
      listener.closeAllConnections();
      metrics.closeAllConnections();
      await Promise.all([new Promise((resolve) => listener.close(resolve)), new Promise((resolve) => metrics.close(resolve))]);
      await system.close();
    },
  };
}

/** A second instance of `server`'s system: the same database and Redis (key prefix too), its own listener and caches. */
export function anotherInstance(server: TestServer, env: Record<string, string> = {}, overrides: SystemOverrides = {}): Promise<AppInstance> {
  return startInstance(
    { DATABASE_URL: server.pg.url, APP_URL: server.url, ...env, ...(server.redis ? { REDIS_URL: server.redis.url } : {}) },
    { db: server.pg.db, ...(server.redis ? { redis: server.redis.redis, redisPrefix: server.redis.prefix } : {}), ...overrides },
  );
}

/**
 * An instance on a per-file PostgreSQL database (a copy of the migrated template) and, for 'redis',
 * a per-file Redis key prefix. `options.clock`: a clock the test moves (test/support/clock.ts).
 */
export async function startTestServer(storage: Storage, env: Record<string, string> = {}, options: Pick<SystemOverrides, 'log' | 'cimdResolve' | 'cimdFailedAnswerMs' | 'challengeIterations' | 'clock' | 'run'> = {}): Promise<TestServer> {
  // A server with DATA_ENCRYPTION_KEYS of its own makes its signing key under them (the keyed template's is sealed under the development key).
  const [pg, redis] = await Promise.all([createTestDatabase({ migrate: env.DATA_ENCRYPTION_KEYS ? 'bare' : true }), storage === 'redis' ? createTestRedis() : undefined]);
  const instance = await startInstance(
    { DATABASE_URL: pg.url, ...(redis ? { REDIS_URL: redis.url } : {}), ...env },
    { db: pg.db, ...(redis ? { redis: redis.redis, redisPrefix: redis.prefix } : {}), ...options },
  );
  return {
    ...instance,
    pg,
    ...(redis ? { redis } : {}),
    async close() {
      await instance.close();
      await Promise.all([pg.drop(), redis?.cleanup()]);
    },
  };
}
