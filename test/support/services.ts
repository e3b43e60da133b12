// Real PostgreSQL and Redis for tests. Each test file gets its own database and key prefix,
// so files run in parallel without seeing each other's data. A missing service fails the
// test run with a message saying how to start it (never a silent skip).
import { randomBytes } from 'node:crypto';
import knexFactory from 'knex';
import { Redis } from 'ioredis';
import { connectDb, migrateLatest, type Db } from '../../src/storage/db.ts';

export const TEST_PG_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

export interface TestDatabase {
  db: Db;
  url: string;
  drop(): Promise<void>;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** A fresh PostgreSQL database that only this test file uses, migrated unless asked not to. */
export async function createTestDatabase({ migrate = true } = {}): Promise<TestDatabase> {
  const name = `oauth_test_${randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: TEST_PG_URL, pool: { min: 0, max: 1 } });
  try {
    await admin.raw(`create database ${name}`);
  } catch (err) {
    await admin.destroy();
    throw new Error(
      `PostgreSQL is needed for the tests at ${TEST_PG_URL} (set TEST_DATABASE_URL, or start it: see .ci/run): ${(err as Error).message}`,
    );
  }
  const url = withDatabase(TEST_PG_URL, name);
  const db = connectDb({ databaseUrl: url, dataDir: '' });
  if (migrate) await migrateLatest(db);
  return {
    db,
    url,
    async drop() {
      await db.destroy();
      await admin.raw(`drop database if exists ${name} with (force)`);
      await admin.destroy();
    },
  };
}

export interface TestRedis {
  redis: Redis;
  url: string;
  prefix: string;
  cleanup(): Promise<void>;
}

/** A Redis connection and a key prefix that only this test file uses. */
export async function createTestRedis(): Promise<TestRedis> {
  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    throw new Error(`Redis is needed for the tests at ${TEST_REDIS_URL} (set TEST_REDIS_URL, or start it: see .ci/run): ${(err as Error).message}`);
  }
  const prefix = `oauth_test_${randomBytes(6).toString('hex')}:`;
  return {
    redis,
    url: TEST_REDIS_URL,
    prefix,
    async cleanup() {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    },
  };
}
