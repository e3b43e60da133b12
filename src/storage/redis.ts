// The Redis connection (ioredis): a single node, a Cluster, or a Sentinel-managed master.
import { Cluster, Redis } from 'ioredis';
import type { RedisConfig } from '../config.ts';
import { failFastOnceConnected } from '../seams/ioredis.ts';

/** What the storage code needs; both a single connection and a Cluster provide it. */
export type RedisClient = Redis | Cluster;

// While Redis is down, a command fails at once (→ 503 with Retry-After) instead of waiting: one
// sent when the connection drops fails with it (no retry), and once the first connection was made,
// one sent while it is down is not queued (failFastOnceConnected, src/seams/ioredis.ts). Queued, each command of a
// request waited for a reconnection attempt (up to 2 s each), and a refresh, which sends several
// one after another, waited for several of them (docs/benchmark.md). ioredis keeps reconnecting in the background,
// so service resumes by itself.
const COMMON = {
  maxRetriesPerRequest: 0,
  connectTimeout: 2000,
  retryStrategy: (attempt: number) => Math.min(attempt * 200, 2000),
  // Each command is written at once, not batched to the end of the tick (auto-pipelining): Redis
  // then works while this process goes on with the next request. Batched, requests moved through
  // their round trips in waves, and under load the server sat idle while Redis worked through a
  // wave (docs/benchmark.md, "After the Redis client stopped batching").
  enableAutoPipelining: false,
};

/** Connection errors are expected while Redis is down; they go to `onError` (by default nowhere). */
export function connectRedis(config: RedisConfig | string, onError: (err: Error) => void = () => {}): RedisClient {
  const target: RedisConfig = typeof config === 'string' ? { mode: 'single', url: config } : config;
  let client: RedisClient;
  if (target.mode === 'cluster') {
    client = new Cluster(target.nodes, {
      redisOptions: { ...COMMON, password: target.password },
      // A Cluster keeps batching (per node, as before): the bench above measures a single node.
      enableAutoPipelining: true,
      clusterRetryStrategy: COMMON.retryStrategy,
      // Keep trying while a master fails over or restarts, then fail the command (→ 503).
      retryDelayOnClusterDown: 200,
      retryDelayOnFailover: 200,
    });
  } else if (target.mode === 'sentinel') {
    client = new Redis({ ...COMMON, sentinels: target.sentinels, name: target.name, password: target.password, sentinelRetryStrategy: COMMON.retryStrategy });
  } else {
    client = new Redis(target.url, COMMON);
  }
  client.on('error', onError);
  // Commands sent before the first connection wait for it (a start does not fail because Redis
  // answers a moment later); after it, one sent while the connection is not ready fails at once.
  failFastOnceConnected(client);
  return client;
}

/** Readiness: a single node answers PING; a cluster must also report that every slot is served. */
export async function pingRedis(client: RedisClient): Promise<void> {
  if (client instanceof Cluster) {
    const info = (await client.cluster('INFO')) as string;
    if (!/cluster_state:ok/.test(info)) throw Object.assign(new Error('CLUSTERDOWN the cluster is not serving every slot'), { code: 'ECONNREFUSED' });
    return;
  }
  await client.ping();
}

/**
 * A Lua script sent by its SHA1 (EVALSHA), not its text, on every call: ioredis loads it once
 * where Redis does not know it yet (after a restart too). Its first argument is the number of keys.
 */
export function redisScript(client: RedisClient, name: string, lua: string): (...args: Array<string | number>) => Promise<unknown> {
  // On a Cluster, ioredis's command batching routes a defined command by its first argument (the
  // key count), not its first key: sent there as text (EVAL), as before.
  if (client.isCluster) return (...args) => client.eval(lua, ...(args as [number, ...Array<string | number>]));
  const commands = client as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>;
  if (typeof commands[name] !== 'function') client.defineCommand(name, { lua });
  return (...args) => commands[name]!(...args);
}
