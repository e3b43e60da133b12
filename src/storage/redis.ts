// The Redis connection (ioredis), when REDIS_URL is configured.
import { Redis } from 'ioredis';

/** Connection errors are expected while Redis is down; they go to `onError` (by default nowhere). */
export function connectRedis(url: string, onError: (err: Error) => void = () => {}): Redis {
  const redis = new Redis(url, {
    // While Redis is down, a command fails after one reconnection attempt (→ 503) instead of
    // waiting; ioredis keeps reconnecting in the background, so service resumes by itself.
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  redis.on('error', onError);
  return redis;
}
