// The Redis connection (ioredis), when REDIS_URL is configured.
import { Redis } from 'ioredis';

export function connectRedis(url: string): Redis {
  // Fail a command after two reconnection attempts instead of queueing it forever.
  return new Redis(url, { maxRetriesPerRequest: 2 });
}
