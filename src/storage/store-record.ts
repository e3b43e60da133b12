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

/** The Redis a server keeps its artifacts in, as recorded. */
export interface RecordedRedis {
  client: RedisClient;
  mode: RedisMode;
  prefix: string;
}

const markKey = (prefix: string) => `${prefix}store-mark`;
const newMark = () => randomBytes(16).toString('base64url');

async function writeRecord(db: Db, redis: RecordedRedis | undefined, mark: string | null): Promise<void> {
  const row = redis ? { kind: 'redis', redis_mode: redis.mode, redis_prefix: redis.prefix, redis_mark: mark } : { kind: 'sql', redis_mode: null, redis_prefix: null, redis_mark: null };
  await db('artifact_store')
    .insert({ id: 1, ...row, recorded_at: db.fn.now() })
    .onConflict('id')
    .merge();
}

/**
 * Puts `mark` in Redis unless a mark is there (instances on one Redis agree on one mark: the first
 * to set it wins) and answers the mark Redis holds: one round trip (SET NX and GET in a MULTI,
 * one key, so a Cluster takes it too).
 */
async function placeMark(redis: RecordedRedis, mark: string): Promise<string> {
  const key = markKey(redis.prefix);
  const replies = await redis.client.multi().set(key, mark, 'NX').get(key).exec();
  const [error, held] = replies?.[1] ?? [new Error('the mark could not be placed (transaction aborted)'), null];
  if (error) throw error;
  return held as string;
}

export interface StoreRecordKeeper {
  stop(): void;
}

/**
 * Records this server's store on start and keeps its mark in Redis: a Redis that lost its data
 * (restarted without persistence, a replaced node, a failover to an empty replica) gets the mark
 * back on the reconnection ('ready') and at the latest within `markIntervalMs`, so the operator
 * scripts work again within seconds. Each check is one command round trip; the database row is
 * written only when the mark changed, and every `recordIntervalMs` in any case.
 */
export async function keepArtifactStoreRecorded(
  db: Db,
  redis: RecordedRedis | undefined,
  { markIntervalMs, recordIntervalMs, onError }: { markIntervalMs: number; recordIntervalMs: number; onError: (err: Error) => void },
): Promise<StoreRecordKeeper> {
  // What this process last wrote to the database (undefined: nothing yet).
  let recorded: string | null | undefined;
  const record = async (force: boolean) => {
    const mark = redis ? await placeMark(redis, recorded ?? newMark()) : null;
    if (!force && mark === recorded) return;
    await writeRecord(db, redis, mark);
    recorded = mark;
  };
  // While Redis is down every check fails: said once, until one succeeds again.
  let failing = false;
  const run = (force: boolean) => () =>
    record(force).then(
      () => void (failing = false),
      (err: Error) => {
        if (!failing) onError(err);
        failing = true;
      },
    );

  // A Redis down at start does not stop the start (it answers 503 until Redis is back): the
  // reconnection or the next check records it.
  await run(true)();
  const timers = [setInterval(run(true), recordIntervalMs)];
  const onReady = run(false);
  if (redis) {
    timers.push(setInterval(onReady, markIntervalMs));
    redis.client.on('ready', onReady);
  }
  for (const timer of timers) timer.unref();
  return {
    stop() {
      for (const timer of timers) clearInterval(timer);
      redis?.client.off('ready', onReady);
    },
  };
}

/** What the servers recorded; undefined when none has since migration 019 (or it is not applied). */
export async function readArtifactStore(db: Db): Promise<StoreRecord | undefined> {
  if (!(await db.schema.hasTable('artifact_store'))) return undefined;
  const row = await db('artifact_store').where('id', 1).first();
  return row ? { kind: row.kind, redisMode: row.redis_mode, redisPrefix: row.redis_prefix, redisMark: row.redis_mark } : undefined;
}

/**
 * Whether this Redis holds the recorded mark (it is the servers' Redis, under their prefix):
 * 'held'; 'missing' (no mark at all: another Redis, or the servers' one after losing its data
 * with no server running to put it back); 'other' (a different mark: another deployment's Redis).
 */
export async function markState(redis: RedisClient, record: StoreRecord): Promise<'held' | 'missing' | 'other'> {
  const found = await redis.get(markKey(record.redisPrefix ?? ''));
  if (found === null) return 'missing';
  return record.redisMark !== null && found === record.redisMark ? 'held' : 'other';
}
