// Which store holds the provider's artifacts, recorded in the database by the servers (migration
// 019) for the operator scripts: a script that changes a client's status or revokes a secret must
// reach the store the servers use, or it reports success and leaves their tokens alive.
import { randomBytes } from 'node:crypto';
import type { Db } from './db.ts';
import type { RedisClient } from './redis.ts';

export type RedisMode = 'single' | 'cluster' | 'sentinel';

export interface StoreRecord {
  kind: 'sql' | 'redis';
  redisMode: RedisMode | null;
  redisPrefix: string | null;
  /** A random value the servers' Redis holds under markKey(prefix): proof a script reached it. */
  redisMark: string | null;
}

const markKey = (prefix: string) => `${prefix}store-mark`;

/**
 * Records this server's store (on start, and again now and then: a Redis that lost its mark gets
 * it back). Instances on one Redis agree on one mark: the first to set it wins (SET NX).
 */
export async function recordArtifactStore(db: Db, redis: { client: RedisClient; mode: RedisMode; prefix: string } | undefined): Promise<void> {
  let row: Record<string, unknown> = { kind: 'sql', redis_mode: null, redis_prefix: null, redis_mark: null };
  if (redis) {
    await redis.client.set(markKey(redis.prefix), randomBytes(16).toString('base64url'), 'NX');
    row = { kind: 'redis', redis_mode: redis.mode, redis_prefix: redis.prefix, redis_mark: await redis.client.get(markKey(redis.prefix)) };
  }
  await db('artifact_store')
    .insert({ id: 1, ...row, recorded_at: db.fn.now() })
    .onConflict('id')
    .merge();
}

/** What the servers recorded; undefined when none has since migration 019 (or it is not applied). */
export async function readArtifactStore(db: Db): Promise<StoreRecord | undefined> {
  if (!(await db.schema.hasTable('artifact_store'))) return undefined;
  const row = await db('artifact_store').where('id', 1).first();
  return row ? { kind: row.kind, redisMode: row.redis_mode, redisPrefix: row.redis_prefix, redisMark: row.redis_mark } : undefined;
}

/** Whether this Redis holds the recorded mark: it is the servers' Redis, under their prefix. */
export async function holdsMark(redis: RedisClient, record: StoreRecord): Promise<boolean> {
  return record.redisMark !== null && (await redis.get(markKey(record.redisPrefix ?? ''))) === record.redisMark;
}
