// All of one client's artifacts at once, for suspension, and the marks of its revoked secrets.
// Kept apart from the adapters so that the operator scripts need not load oidc-provider.
import type { RedisClient } from './redis.ts';
import type { Db } from './db.ts';
import { artifactKeyOf, clientIndexKey, DEFAULT_REDIS_PREFIX, grantIndexKey, revokedSecretKey } from './redis-keys.ts';
import { artifactKey } from './artifact-key.ts';
import { announceRevocation, type TokenCache } from './token-cache.ts';

export interface ClientArtifacts {
  /** Deletes every code, token and grant issued to a client. */
  revokeClient(clientId: string): Promise<void>;
  /**
   * Deletes a grant, then every code and token issued from it, on every instance (revokeGrantWith),
   * for callers without the provider: the operator scripts, and the organization changes of
   * src/orgs/installations.ts.
   */
  revokeGrant(grantId: string): Promise<void>;
  /** Marks a secret revoked for every instance, before the revocation commits (nothing to do without Redis). */
  markSecretRevoked(secretId: number): Promise<void>;
  /**
   * Whether a secret was marked revoked; absent without Redis, where the secret's row is read
   * instead. Instances cache client records with their secrets' hashes (record-cache.ts) and
   * learn of a change when PostgreSQL delivers its notification; the mark is what makes a
   * revocation refused by all of them at once.
   */
  secretMarkedRevoked?(secretId: number): Promise<boolean>;
}

/**
 * How long a mark is kept: far longer than any cached record that could still list the secret
 * (record-cache.ts keeps one at most 10 minutes, and none while its change feed is down).
 */
const REVOKED_SECRET_MARK_SECONDS = 24 * 3600;

/** Deletes every key listed in an index set, and the set. */
export async function deleteIndexed(redis: RedisClient, index: string): Promise<void> {
  const members = await redis.smembers(index);
  // One command per key: members live in different cluster slots.
  await Promise.all(members.map((member) => redis.del(member)));
  await redis.del(index);
}

/** Where a grant and what it issued are deleted: the provider's models, or the stores directly. */
export interface GrantRevocation {
  /** Deletes the grant itself, on every instance. */
  grant(grantId: string): Promise<void>;
  /** Deletes every code and token issued from it. */
  artifacts(grantId: string): Promise<void>;
}

/**
 * Revokes a grant with every code and token issued from it — every caller's one way (through the
 * provider: src/oauth/grants.ts revokeGrant; without one: ClientArtifacts.revokeGrant). The grant
 * first, so that from then on every path refuses its tokens (src/oauth/token-liveness.ts) and the
 * refresh hot path's rotation, which spends a token only while its grant exists, saves nothing
 * more; then its codes and tokens. A token that a request which read the grant just before saves
 * after the sweep is refused by the same rule (its grant is gone), and stays stored only until it
 * expires.
 */
export async function revokeGrantWith(store: GrantRevocation, grantId: string): Promise<void> {
  await store.grant(grantId);
  await store.artifacts(grantId);
}

/** What a grant issues, as the provider's models name them (its revokeByGrantId sweep). */
const GRANT_ARTIFACTS = ['AccessToken', 'RefreshToken', 'AuthorizationCode'];

export function clientArtifacts(db: Db, redis?: RedisClient, prefix = DEFAULT_REDIS_PREFIX, cache?: TokenCache): ClientArtifacts {
  const storedGrants: GrantRevocation = {
    grant: async (grantId) => {
      await db('oidc_models').where({ model: 'Grant', id: artifactKey(grantId) }).delete();
      if (!redis) return;
      await redis.del(artifactKeyOf(prefix, 'Grant', grantId));
      cache?.drop({ grant: grantId });
      await announceRevocation(redis, prefix, { grant: grantId });
    },
    artifacts: async (grantId) => {
      await db('oidc_models').whereIn('model', GRANT_ARTIFACTS).where('grant_id', grantId).delete();
      if (!redis) return;
      for (const model of GRANT_ARTIFACTS) await deleteIndexed(redis, grantIndexKey(prefix, model, grantId));
      cache?.drop({ grant: grantId });
      await announceRevocation(redis, prefix, { grant: grantId });
    },
  };
  return {
    revokeClient: async (clientId) => {
      // The table too with Redis: rows from before the move to Redis, or of servers a script's own
      // configuration does not describe (src/storage/store-record.ts), end as well.
      await db('oidc_models').where('client_id', clientId).delete();
      if (!redis) return;
      await deleteIndexed(redis, clientIndexKey(prefix, clientId));
      // Every instance's token cache (src/storage/token-cache.ts), this process's at once.
      cache?.drop({ client: clientId });
      await announceRevocation(redis, prefix, { client: clientId });
    },
    revokeGrant: (grantId) => revokeGrantWith(storedGrants, grantId),
    markSecretRevoked: async (secretId) => {
      if (redis) await redis.set(revokedSecretKey(prefix, secretId), '1', 'EX', REVOKED_SECRET_MARK_SECONDS);
    },
    ...(redis ? { secretMarkedRevoked: async (secretId: number) => (await redis.exists(revokedSecretKey(prefix, secretId))) === 1 } : {}),
  };
}
