// Where oidc-provider's artifacts (sessions, interactions, codes, tokens, grants) live: Redis when
// configured, otherwise the SQL database. One interface for the provider and for our own code.
import type { Redis } from 'ioredis';
import type { Adapter } from 'oidc-provider';
import type { Db } from './db.ts';
import { revokeClientArtifactsSql, SqlAdapter } from './sql-adapter.ts';
import { RedisAdapter, revokeClientArtifactsRedis } from './redis-adapter.ts';

export interface ArtifactStorage {
  adapterFor(model: string): Adapter;
  /** Deletes every code, token and grant issued to a client. */
  revokeClient(clientId: string): Promise<void>;
}

export const DEFAULT_REDIS_PREFIX = 'oauth:';

export function artifactStorage(db: Db, redis?: Redis, prefix = DEFAULT_REDIS_PREFIX): ArtifactStorage {
  if (redis) {
    return {
      adapterFor: (model) => new RedisAdapter(redis, model, prefix),
      revokeClient: (clientId) => revokeClientArtifactsRedis(redis, prefix, clientId),
    };
  }
  return {
    adapterFor: (model) => new SqlAdapter(db, model),
    revokeClient: (clientId) => revokeClientArtifactsSql(db, clientId),
  };
}
