// The counters every limit of this server is made of (the token endpoints' budgets and abuse
// limits, src/oauth/rate-limits.ts; sign-in, src/web/sign-in-limits.ts; leak reports; document
// fetches): rate-limiter-flexible's, in Redis when configured, so every instance sees the same
// ones; otherwise in this process.
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { redisScript, type RedisClient } from '../storage/redis.ts';

type LimiterOptions = { keyPrefix: string; points: number; duration: number };

/**
 * A point counted in Redis, as rate-limiter-flexible's own script counts it (the key holds the
 * points used and expires with the window; the reply is those points and the milliseconds left)
 * but without its first command, a SET NX of 0 with the window's expiry: INCRBY makes a missing
 * key itself, and a key without an expiry gets the window's here, as there. One command fewer on
 * every counted request (each token request an authenticated client sends is one).
 */
const COUNT_SCRIPT = `local consumed = redis.call('incrby', KEYS[1], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then
  redis.call('expire', KEYS[1], ARGV[2])
  ttl = 1000 * ARGV[2]
end
return {consumed, ttl}`;

export function limiterFactory(redis: RedisClient | undefined, prefix: string) {
  return (options: LimiterOptions): RateLimiterAbstract =>
    redis
      ? new RateLimiterRedis({ storeClient: redis, ...options, keyPrefix: `${prefix}rl:${options.keyPrefix}`, customIncrTtlLuaScript: COUNT_SCRIPT })
      : new RateLimiterMemory(options);
}

/** A point counted under `key` of the limiter made with `keyPrefix` (the same Redis key), in a window of `seconds`. */
export interface PointToCount {
  keyPrefix: string;
  key: string;
  seconds: number;
}
/** What a counted point left: the points its key has used in the window, and the milliseconds before the window ends. */
export interface Counted {
  consumed: number;
  msLeft: number;
}

// COUNT_SCRIPT for each key in turn: the points of several counters in one command.
const COUNT_EACH_SCRIPT = `local counted = {}
for i = 1, #KEYS do
  local consumed = redis.call('incrby', KEYS[i], 1)
  local ttl = redis.call('pttl', KEYS[i])
  if ttl == -1 then
    redis.call('expire', KEYS[i], ARGV[i])
    ttl = 1000 * ARGV[i]
  end
  counted[2 * i - 1] = consumed
  counted[2 * i] = ttl
end
return counted`;

/**
 * Counts a point on each of several limiters' keys in one command, as each limiter would (the same
 * Redis keys, the same script): on a single node or Sentinel, where keys need not share a hash
 * slot; undefined elsewhere (a Cluster, or no Redis), where each limiter counts its own.
 */
export function pointsCounter(redis: RedisClient | undefined, prefix: string): ((points: PointToCount[]) => Promise<Counted[]>) | undefined {
  if (!redis || redis.isCluster) return undefined;
  const countEach = redisScript(redis, 'rateLimitCountEach', COUNT_EACH_SCRIPT);
  return async (points) => {
    const replies = (await countEach(points.length, ...points.map((p) => `${prefix}rl:${p.keyPrefix}:${p.key}`), ...points.map((p) => p.seconds))) as number[];
    return points.map((_, i) => ({ consumed: Number(replies[2 * i]), msLeft: Number(replies[2 * i + 1]) }));
  };
}

/** Consumes a point and says how many the key has used in its window (a refusal is an answer). */
export async function consume(limiter: RateLimiterAbstract, key: string): Promise<RateLimiterRes> {
  try {
    return await limiter.consume(key);
  } catch (err) {
    if (err instanceof RateLimiterRes) return err;
    throw err;
  }
}
