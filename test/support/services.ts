// Real PostgreSQL and Redis for tests. Each test file gets its own database and key prefix,
// so files run in parallel without seeing each other's data. A missing service fails the
// test run with a message saying how to start it (never a silent skip).
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import knexFactory, { type Knex } from 'knex';
import { Redis } from 'ioredis';
import { connectDb, migrateLatest, type Db } from '../../src/storage/db.ts';
import { startWebhookQueue } from '../../src/webhooks/queue.ts';
import { loadSigningKeys } from '../../src/oauth/signing-keys.ts';
import { createDataCipher } from '../../src/storage/data-encryption.ts';
import { DEV_DATA_KEYS, loadConfig } from '../../src/config.ts';

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

/**
 * The migrated databases that test databases are copied from (`CREATE DATABASE … TEMPLATE`): a copy
 * takes milliseconds where migrating takes seconds. Named after what shapes them (the migrations,
 * the webhook queue's schema, the signing keys' code), so a change makes new ones; built once, by
 * whichever process needs one first, under an advisory lock, and published by a rename, so no
 * process ever copies a half-built one.
 * - `bare`: every migration and pg-boss's schema with the webhook queue;
 * - `keyed`: the same and a token-signing key sealed under the development DATA_ENCRYPTION_KEYS
 *   (the RSA key a fresh server would generate at its first start).
 */
type Template = 'bare' | 'keyed';
const TEMPLATE_LOCK_KEY = 727_210_099;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const templateSources = () => [
  ...readdirSync(join(ROOT, 'migrations')).sort().map((f) => join('migrations', f)),
  'src/webhooks/queue.ts',
  'src/oauth/signing-keys.ts',
  'src/storage/data-encryption.ts',
  'package-lock.json',
];
let templateNames: Record<Template, string> | undefined;
function templateName(kind: Template): string {
  if (!templateNames) {
    const hash = createHash('sha256');
    for (const file of templateSources()) hash.update(file).update(readFileSync(join(ROOT, file)));
    const digest = hash.digest('hex').slice(0, 12);
    templateNames = { bare: `oauth_tmpl_${digest}_bare`, keyed: `oauth_tmpl_${digest}_keyed` };
  }
  return templateNames[kind];
}

const ready = new Set<Template>();
async function ensureTemplates(admin: Knex): Promise<void> {
  if (ready.size === 2) return;
  const exists = async (name: string) => (await admin.raw('select 1 from pg_database where datname = ?', [name])).rows.length > 0;
  if ((await exists(templateName('bare'))) && (await exists(templateName('keyed')))) {
    ready.add('bare').add('keyed');
    return;
  }
  // Session-level advisory locks belong to a connection: a connection of its own holds this one.
  const lock = knexFactory({ client: 'pg', connection: TEST_PG_URL, pool: { min: 0, max: 1 } });
  try {
    await lock.raw('select pg_advisory_lock(?)', [TEMPLATE_LOCK_KEY]);
    for (const kind of ['bare', 'keyed'] as const) {
      const name = templateName(kind);
      if (await exists(name)) continue;
      const building = `${name}_building_${randomBytes(3).toString('hex')}`;
      await admin.raw(kind === 'bare' ? `create database ${building}` : `create database ${building} template ${templateName('bare')}`);
      const db = connectDb({ databaseUrl: withDatabase(TEST_PG_URL, building), dataDir: '' });
      try {
        if (kind === 'bare') {
          await migrateLatest(db);
          const queue = await startWebhookQueue(db, { supervise: false, retryBaseSeconds: loadConfig({ NODE_ENV: 'test' }).webhookRetryBaseSeconds, onError: () => {} });
          await queue.stop({ graceful: false });
        } else {
          await loadSigningKeys(db, createDataCipher(DEV_DATA_KEYS));
        }
      } finally {
        await db.destroy();
      }
      await admin.raw(`alter database ${building} rename to ${name}`);
      await admin.raw(`alter database ${name} is_template true`);
      await admin.raw(`comment on database ${name} is '${Date.now()}'`);
    }
  } finally {
    await lock.destroy(); // the lock goes with its connection
  }
  ready.add('bare').add('keyed');
  // Templates of other versions of the code are left by earlier runs, and another checkout on this
  // machine may be using one right now: those made more than a day ago go (their COMMENT is when).
  const stale = await admin.raw(
    "select datname, shobj_description(oid, 'pg_database') as made from pg_database where datname like 'oauth\\_tmpl\\_%' and datname not in (?, ?)",
    [templateName('bare'), templateName('keyed')],
  );
  for (const { datname, made } of stale.rows as Array<{ datname: string; made: string | null }>) {
    if (Number(made) > Date.now() - 24 * 3600_000) continue;
    await admin.raw(`alter database ${datname} is_template false`).catch(() => {});
    await admin.raw(`drop database if exists ${datname}`).catch(() => {});
  }
}

export interface TestDatabaseOptions {
  /**
   * `false`: an empty database, for tests of migrating itself. Otherwise a copy of a migrated
   * template; `'bare'` without the token-signing key, for servers started with DATA_ENCRYPTION_KEYS
   * of their own (the keyed template's key is sealed under the development key).
   */
  migrate?: boolean | Template;
}

/** A fresh PostgreSQL database that only this test file uses, migrated unless asked not to. */
export async function createTestDatabase({ migrate = true }: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const name = `oauth_test_${randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: TEST_PG_URL, pool: { min: 0, max: 1 } });
  const template = migrate === false ? undefined : migrate === true ? 'keyed' : migrate;
  try {
    if (template) await ensureTemplates(admin);
    const create = () => admin.raw(template ? `create database ${name} template ${templateName(template)}` : `create database ${name}`);
    await create().catch(async (err: Error) => {
      // Removed meanwhile by a run of an older version of this file: made again.
      if (!template || !/template database .* does not exist/.test(err.message)) throw err;
      ready.clear();
      await ensureTemplates(admin);
      await create();
    });
  } catch (err) {
    await admin.destroy();
    throw new Error(
      `PostgreSQL is needed for the tests at ${TEST_PG_URL} (set TEST_DATABASE_URL, or start it: see .ci/run): ${(err as Error).message}`,
    );
  }
  const url = withDatabase(TEST_PG_URL, name);
  const db = connectDb({ databaseUrl: url, dataDir: '' });
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
