// Where oidc-provider's artifacts (sessions, interactions, codes, tokens, grants) live: Redis when
// configured, otherwise the SQL database.
import type { RedisClient } from './redis.ts';
import type { Adapter } from 'oidc-provider';
import type { Db } from './db.ts';
import { SqlAdapter } from './sql-adapter.ts';
import { RedisAdapter } from './redis-adapter.ts';
import { clientArtifacts, type ClientArtifacts } from './client-artifacts.ts';
import { DEFAULT_REDIS_PREFIX } from './redis-keys.ts';

export interface ArtifactStorage extends ClientArtifacts {
  adapterFor(model: string): Adapter;
}

export function artifactStorage(db: Db, redis?: RedisClient, prefix = DEFAULT_REDIS_PREFIX): ArtifactStorage {
  return {
    adapterFor: (model) => (redis ? new RedisAdapter(redis, model, prefix) : new SqlAdapter(db, model)),
    ...clientArtifacts(db, redis, prefix),
  };
}
