// Where oidc-provider's artifacts (sessions, interactions, codes, tokens, grants) live: Redis when
// configured, otherwise the SQL database.
import type { RedisClient } from './redis.ts';
import { inOneWrite } from '../seams/ioredis.ts';
import type { Adapter } from 'oidc-provider';
import type { Db } from './db.ts';
import { SqlAdapter } from './sql-adapter.ts';
import { defineArtifactScripts, readRefreshToken, type ArtifactScripts, RedisAdapter, rotateRefreshToken, type Rotation, type Saved, type StoredRefresh } from './redis-adapter.ts';
import { clientArtifacts, type ClientArtifacts } from './client-artifacts.ts';
import { DEFAULT_REDIS_PREFIX } from './redis-keys.ts';
import type { TokenCache } from './token-cache.ts';
import { refusingMalformed } from '../credentials/lookups.ts';
import { refusedAs } from '../credentials/format.ts';
import { POLICY } from '../settings.ts';

export interface ArtifactStorage extends ClientArtifacts {
  adapterFor(model: string): Adapter;
  /** Single flights across every instance: see SingleFlights. */
  flights: SingleFlights;
  /** Only where the store can do each in one step: Redis on a single node or Sentinel. */
  refreshRotation?: RefreshRotation;
  /**
   * Runs `issue`, with the store commands it sends at once written together (see inOneWrite): one
   * round trip for a request's reads that do not wait on each other. Elsewhere it just runs `issue`.
   */
  together<T>(issue: () => T): T;
}

export interface RefreshRotation {
  /** A refresh token with its grant, in one round trip (see readRefreshToken). */
  read(id: string): Promise<StoredRefresh | undefined>;
  /**
   * Spends a refresh token, saves its successors and settles its single flight (the key a
   * SingleFlights claim would take) in one atomic step — or changes nothing, when the token was
   * spent or gone, its grant gone, or the flight held.
   */
  rotate: RotateRefreshToken;
}

export type RotateRefreshToken = (spent: string, refresh: Saved, access: Saved, flight?: { key: string; value: string; seconds: number }) => Promise<Rotation>;

/** With a token cache (Redis only), access token lookups are served from memory while it is live. */
export function artifactStorage(db: Db, redis?: RedisClient, prefix = DEFAULT_REDIS_PREFIX, tokenCache?: TokenCache): ArtifactStorage {
  const scripts = redis && defineArtifactScripts(redis); // now, before any traffic (see defineArtifactScripts)
  return {
    // A malformed credential is not looked up (src/credentials/lookups.ts).
    adapterFor: (model) => keptPastExpiry(model, refusingMalformed(model, redis ? new RedisAdapter(redis, model, prefix, tokenCache, scripts) : new SqlAdapter(db, model))),
    flights: redis ? redisFlights(redis, prefix) : sqlFlights(db),
    ...(scripts && !redis.isCluster ? { refreshRotation: redisRotation(scripts, prefix) } : {}),
    together: redis ? (issue) => inOneWrite(redis, issue) : (issue) => issue(),
    ...clientArtifacts(db, redis, prefix, tokenCache),
  };
}


/**
 * Seconds a model's artifacts stay stored past their expiry. An authorization code is kept 10
 * minutes longer, so that a late exchange is answered "expired" rather than "unknown"
 * (src/oauth/error-descriptions.ts): the provider reads codes ignoring expiry and refuses an
 * expired one itself, before anything is spent or revoked. A pushed authorization request
 * (RFC 9126) may start an authorization only within its 60 seconds (the provider refuses it after,
 * reading it ignoring expiry), but that authorization spends it when it ends, up to an interaction's
 * lifetime later: kept that long, so that it is spent then, once, and never found gone and skipped.
 */
export const KEPT_PAST_EXPIRY_SECONDS: Readonly<Record<string, number>> = { AuthorizationCode: 600, PushedAuthorizationRequest: POLICY.INTERACTION_TTL.value };

function keptPastExpiry<A extends Adapter>(model: string, adapter: A): A {
  const extra = KEPT_PAST_EXPIRY_SECONDS[model];
  if (!extra) return adapter;
  const upsert = adapter.upsert.bind(adapter);
  adapter.upsert = (id, payload, expiresIn) => upsert(id, payload, expiresIn ? expiresIn + extra : expiresIn);
  return adapter;
}

/**
 * A short-lived slot per key that exactly one caller claims, across every instance, until
 * `seconds` pass; the claimer settles it with a value the others read (while it is unsettled
 * they read ''). Redis: SET NX / SET XX / GET on one key. SQL: one conditional statement each.
 */
export interface SingleFlights {
  claim(key: string, seconds: number): Promise<boolean>;
  settle(key: string, value: string, seconds: number): Promise<void>;
  /** '' while claimed and unsettled; undefined when nobody holds the key. */
  read(key: string): Promise<string | undefined>;
}

const flightKey = (prefix: string, key: string) => `${prefix}flight:${key}`;

function redisRotation(scripts: ArtifactScripts, prefix: string): RefreshRotation {
  return {
    read: async (id) => (refusedAs('refresh_token', id) ? undefined : readRefreshToken(scripts, prefix, id)),
    rotate: (spent, refresh, access, flight) => rotateRefreshToken(scripts, prefix, spent, refresh, access, flight && { ...flight, key: flightKey(prefix, flight.key) }),
  };
}

function redisFlights(redis: RedisClient, prefix: string): SingleFlights {
  const keyOf = (key: string) => flightKey(prefix, key);
  return {
    claim: async (key, seconds) => (await redis.set(keyOf(key), '', 'EX', seconds, 'NX')) === 'OK',
    settle: async (key, value, seconds) => void (await redis.set(keyOf(key), value, 'EX', seconds, 'XX')),
    read: async (key) => (await redis.get(keyOf(key))) ?? undefined,
  };
}

function sqlFlights(db: Db): SingleFlights {
  return {
    claim: async (key, seconds) => {
      const { rows } = await db.raw(
        `insert into oidc_models (model, id, payload, expires_at) values ('Flight', ?, '{"value": ""}', now() + make_interval(secs => ?))
         on conflict (model, id) do update set payload = excluded.payload, expires_at = excluded.expires_at where oidc_models.expires_at < now() returning id`,
        [key, seconds],
      );
      return rows.length === 1;
    },
    settle: async (key, value, seconds) => {
      await db.raw(`update oidc_models set payload = jsonb_build_object('value', ?::text), expires_at = now() + make_interval(secs => ?) where model = 'Flight' and id = ?`, [value, seconds, key]);
    },
    read: async (key) => {
      const { rows } = await db.raw(`select payload->>'value' as value from oidc_models where model = 'Flight' and id = ? and expires_at > now()`, [key]);
      return (rows[0] as { value: string } | undefined)?.value;
    },
  };
}
