// All of one client's artifacts at once, for suspension. Kept apart from the adapters so that
// the operator scripts need not load oidc-provider.
import type { RedisClient } from './redis.ts';
import type { Db } from './db.ts';
import { clientIndexKey, DEFAULT_REDIS_PREFIX } from './redis-keys.ts';
import { announceRevocation, type TokenCache } from './token-cache.ts';

export interface ClientArtifacts {
  /** Deletes every code, token and grant issued to a client. */
  revokeClient(clientId: string): Promise<void>;
}

/** Deletes every key listed in an index set, and the set. */
export async function deleteIndexed(redis: RedisClient, index: string): Promise<void> {
  const members = await redis.smembers(index);
  // One command per key: members live in different cluster slots.
  await Promise.all(members.map((member) => redis.del(member)));
  await redis.del(index);
}

export function clientArtifacts(db: Db, redis?: RedisClient, prefix = DEFAULT_REDIS_PREFIX, cache?: TokenCache): ClientArtifacts {
  return {
    revokeClient: async (clientId) => {
      if (!redis) return void (await db('oidc_models').where('client_id', clientId).delete());
      await deleteIndexed(redis, clientIndexKey(prefix, clientId));
      // Every instance's token cache (src/storage/token-cache.ts), this process's at once.
      cache?.drop({ client: clientId });
      await announceRevocation(redis, prefix, { client: clientId });
    },
  };
}
