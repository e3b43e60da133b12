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
  /**
   * True for exactly one caller per key until `seconds` pass, across every instance (Redis SET NX,
   * or one conditional SQL statement): a single flight.
   */
  claimOnce(key: string, seconds: number): Promise<boolean>;
}

export function artifactStorage(db: Db, redis?: RedisClient, prefix = DEFAULT_REDIS_PREFIX): ArtifactStorage {
  return {
    adapterFor: (model) => (redis ? new RedisAdapter(redis, model, prefix) : new SqlAdapter(db, model)),
    claimOnce: async (key, seconds) => {
      if (redis) return (await redis.set(`${prefix}claim:${key}`, '1', 'EX', seconds, 'NX')) === 'OK';
      const { rows } = await db.raw(
        `insert into oidc_models (model, id, payload, expires_at) values ('Claim', ?, '{}', now() + make_interval(secs => ?))
         on conflict (model, id) do update set expires_at = excluded.expires_at where oidc_models.expires_at < now() returning id`,
        [key, seconds],
      );
      return rows.length === 1;
    },
    ...clientArtifacts(db, redis, prefix),
  };
}

