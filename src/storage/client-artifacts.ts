// All of one client's artifacts at once, for suspension. Kept apart from the adapters so that
// the operator scripts need not load oidc-provider.
import type { Redis } from 'ioredis';
import type { Db } from './db.ts';
import { clientIndexKey, DEFAULT_REDIS_PREFIX } from './redis-keys.ts';

export interface ClientArtifacts {
  /** Deletes every code, token and grant issued to a client. */
  revokeClient(clientId: string): Promise<void>;
}

/** Deletes every key listed in an index set, and the set. */
export async function deleteIndexed(redis: Redis, index: string): Promise<void> {
  const members = await redis.smembers(index);
  // Per-key deletes: members may live in different cluster slots.
  const tx = redis.pipeline();
  for (const member of members) tx.del(member);
  tx.del(index);
  await tx.exec();
}

export function clientArtifacts(db: Db, redis?: Redis, prefix = DEFAULT_REDIS_PREFIX): ClientArtifacts {
  return {
    revokeClient: async (clientId) => {
      if (redis) await deleteIndexed(redis, clientIndexKey(prefix, clientId));
      else await db('oidc_models').where('client_id', clientId).delete();
    },
  };
}
