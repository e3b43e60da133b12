// oidc-provider adapter on Redis (ioredis: a single node, Cluster or Sentinel), used when Redis is
// configured. Every artifact is a hash {payload, consumed?} under a hashed key, expiring with the
// artifact. On a cluster every command and script touches one key, so no two keys ever need to
// share a hash slot; on a single node a save is one script.
import { redisScript, type RedisClient } from './redis.ts';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { alreadyConsumed } from './artifact-errors.ts';
import { artifactKey, CONSUMABLE, fromStored, toStored } from './artifact-key.ts';
import { deleteIndexed } from './client-artifacts.ts';
import { artifactKeyOf, clientIndexKey, grantIndexKey } from './redis-keys.ts';
import { announceRevocation, type Revoked, type TokenCache } from './token-cache.ts';

// Marks an artifact consumed only if it still exists and is not consumed yet; returns 1 on
// success. A bare HSET on an expired key would resurrect it without a TTL.
const CONSUME_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], 'consumed', ARGV[1])`;

// Adds a member to an index set (of a grant or a client) and keeps the set alive as long as its
// longest-lived member (`want` seconds; 0 = no expiry, which makes the set persistent for good).
// An existing set's lifetime is only ever extended: GT (Redis 7) leaves a persistent set so.
const INDEX_ADD = `
local function index_add(index, member, want)
  local existed = redis.call('EXISTS', index) == 1
  redis.call('SADD', index, member)
  if want == 0 then redis.call('PERSIST', index) return end
  if existed then redis.call('EXPIRE', index, want, 'GT') else redis.call('EXPIRE', index, want) end
end`;

// One index, for a cluster (one key per script). KEYS[1] index; ARGV[1] member, ARGV[2] seconds.
const INDEX_ADD_SCRIPT = `${INDEX_ADD}
index_add(KEYS[1], ARGV[1], tonumber(ARGV[2]))
return 1`;

// Saves one artifact under KEYS[key] (which holds nothing: a replaced one is deleted first) with
// its index sets, expiring after `ttl` seconds (0 = never). A refresh token also keeps its
// grant's key (`grant`, '' for none), so that READ_REFRESH_SCRIPT reads both in one step.
const SAVE = `${INDEX_ADD}
local function save(key, first_index, last_index, json, ttl, grant)
  for i = first_index, last_index do index_add(KEYS[i], KEYS[key], ttl) end
  if grant ~= '' then redis.call('HSET', KEYS[key], 'payload', json, 'grant', grant) else redis.call('HSET', KEYS[key], 'payload', json) end
  if ttl > 0 then redis.call('EXPIRE', KEYS[key], ttl) end
end`;

// A whole save, atomically, on a single node: KEYS[1] the artifact, then ARGV[3] index sets, then
// the lookup keys (uid, user code) that point at ARGV[4], the artifact's id ('' without lookups:
// a raw id — a token's value — is sent only where it is stored). ARGV[1] the payload,
// ARGV[2] seconds to live (0 = none), ARGV[5] a refresh token's grant key ('' otherwise).
const UPSERT_SCRIPT = `${SAVE}
local ttl = tonumber(ARGV[2])
local indexes = tonumber(ARGV[3])
for i = 2 + indexes, #KEYS do
  if ttl > 0 then redis.call('SET', KEYS[i], ARGV[4], 'EX', ttl) else redis.call('SET', KEYS[i], ARGV[4]) end
end
redis.call('DEL', KEYS[1])
save(1, 2, 1 + indexes, ARGV[1], ttl, ARGV[5])
return 1`;

// A refresh token and its grant in one step (single node only: the grant's key is not in KEYS):
// KEYS[1] the token; answers {payload, consumed, grant payload ('' when the grant is gone)}, or
// nothing for a missing token. A token saved without its grant's key answers no grant payload.
const READ_REFRESH_SCRIPT = `
local token = redis.call('HMGET', KEYS[1], 'payload', 'consumed', 'grant')
if not token[1] then return false end
local grant = false
if token[3] then grant = redis.call('HGET', token[3], 'payload') or '' end
return {token[1], token[2], grant}`;

// A rotating refresh, atomically, on a single node. When KEYS[9] (a single flight, see
// SingleFlights) is given and held already, nothing changes: 2. Else it spends the presented
// refresh token (KEYS[1]) only if it exists unspent and its grant (KEYS[8]) still exists — 0 when
// not, nothing changed — and then saves the new refresh token (KEYS[2], its indexes KEYS[3] and
// KEYS[4]) and the new access token (KEYS[5], indexes KEYS[6] and KEYS[7]) under their new random
// ids (nothing to replace), settles the flight with ARGV[6] for ARGV[7] seconds, and answers 1.
// ARGV: the time spent, then the payload and seconds of each token.
const ROTATE_SCRIPT = `${SAVE}
local flight = KEYS[9]
if flight and redis.call('EXISTS', flight) == 1 then return 2 end
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[8]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[1], 'consumed', ARGV[1]) == 0 then return 0 end
save(2, 3, 4, ARGV[2], tonumber(ARGV[3]), KEYS[8])
save(5, 6, 7, ARGV[4], tonumber(ARGV[5]), '')
if flight then redis.call('SET', flight, ARGV[6], 'EX', tonumber(ARGV[7])) end
return 1`;

export type ArtifactScripts = Record<'upsert' | 'indexAdd' | 'consume' | 'rotate' | 'readRefresh', ReturnType<typeof redisScript>>;

/**
 * Defines the adapters' scripts on this connection (again: a no-op). artifactStorage defines them
 * once, when the system is built, before any traffic, and hands them to its adapters: ioredis
 * gives a command batch only the commands defined when the batch began, so one defined while a
 * batch is open would fail in it.
 */
export function defineArtifactScripts(redis: RedisClient): ArtifactScripts {
  return {
    upsert: redisScript(redis, 'artifactUpsert', UPSERT_SCRIPT),
    indexAdd: redisScript(redis, 'artifactIndexAdd', INDEX_ADD_SCRIPT),
    consume: redisScript(redis, 'artifactConsume', CONSUME_SCRIPT),
    rotate: redisScript(redis, 'artifactRotate', ROTATE_SCRIPT),
    readRefresh: redisScript(redis, 'artifactReadRefresh', READ_REFRESH_SCRIPT),
  };
}

const keyOf = artifactKeyOf;
const grantIndexOf = grantIndexKey;
/** The key a refresh token keeps of its grant (see SAVE); '' for other artifacts. */
const grantKeyOf = (prefix: string, model: string, payload: AdapterPayload) => (model === 'RefreshToken' && payload.grantId ? keyOf(prefix, 'Grant', payload.grantId) : '');

/** An artifact to save: its id, the provider's payload, and seconds to live. */
export interface Saved {
  id: string;
  payload: AdapterPayload;
  expiresIn: number;
}

/** A single flight (SingleFlights) claimed and settled at once: its Redis key, value and lifetime. */
export interface Settled {
  key: string;
  value: string;
  seconds: number;
}

/** How a rotation went: done, the presented token spent or gone meanwhile, or its flight held by another request. */
export type Rotation = 'rotated' | 'spent' | 'flight-held';
const ROTATIONS: Record<number, Rotation> = { 0: 'spent', 1: 'rotated', 2: 'flight-held' };

/** A stored refresh token and its grant, as the adapters' find() gives them. */
export interface StoredRefresh {
  token: AdapterPayload;
  grant?: AdapterPayload | null;
}

/**
 * A refresh token with its grant in one round trip (single node or Sentinel only), as the
 * adapters' find() gives them; undefined for a missing token. `grant` is undefined when the token
 * does not keep its grant's key (saved before it did), null when the grant is gone.
 */
export async function readRefreshToken(scripts: ArtifactScripts, prefix: string, id: string): Promise<StoredRefresh | undefined> {
  const found = (await scripts.readRefresh(1, keyOf(prefix, 'RefreshToken', id))) as [string, string | null, string | null] | null;
  if (!found) return undefined;
  const [payload, consumed, grant] = found;
  const token = fromStored('RefreshToken', id, JSON.parse(payload) as AdapterPayload);
  if (consumed) token.consumed = Number(consumed);
  if (grant === null) return { token };
  return { token, grant: grant && token.grantId ? fromStored('Grant', token.grantId, JSON.parse(grant) as AdapterPayload) : null };
}

/**
 * A rotating refresh in one step (single node or Sentinel only: on a Cluster the keys live in
 * different slots): the presented refresh token is spent, the new refresh and access tokens saved
 * and, when given, the flight settled with the answer; or nothing changes (see ROTATE_SCRIPT).
 * What is saved is what the adapters save: the same keys, indexes and stored payloads.
 */
export async function rotateRefreshToken(scripts: ArtifactScripts, prefix: string, spent: string, refresh: Saved, access: Saved, flight?: Settled): Promise<Rotation> {
  const withIndexes = (model: string, { id, payload }: Saved) => [
    keyOf(prefix, model, id),
    grantIndexOf(prefix, model, String(payload.grantId)),
    clientIndexKey(prefix, String(payload.clientId)),
  ];
  const json = (model: string, { payload }: Saved) => JSON.stringify(toStored(model, payload));
  const done = await scripts.rotate(
    flight ? 9 : 8,
    keyOf(prefix, 'RefreshToken', spent),
    ...withIndexes('RefreshToken', refresh),
    ...withIndexes('AccessToken', access),
    grantKeyOf(prefix, 'RefreshToken', refresh.payload),
    ...(flight ? [flight.key] : []),
    Math.floor(Date.now() / 1000),
    json('RefreshToken', refresh),
    refresh.expiresIn,
    json('AccessToken', access),
    access.expiresIn,
    ...(flight ? [flight.value, flight.seconds] : []),
  );
  const rotation = ROTATIONS[Number(done)];
  if (!rotation) throw new Error(`unexpected answer of the rotation script: ${String(done)}`);
  return rotation;
}

/** ioredis resolves a pipeline or transaction with one [error, result] per command. */
function throwFirstError(results: [Error | null, unknown][] | null): void {
  const failed = results?.find(([err]) => err);
  if (failed) throw failed[0];
}

export class RedisAdapter implements Adapter {
  /** Access tokens only: read through the token cache, and every deletion announced. */
  private readonly tokens: boolean;
  private readonly scripts: ArtifactScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly model: string,
    private readonly prefix = '',
    private readonly cache?: TokenCache,
    scripts?: ArtifactScripts,
  ) {
    this.tokens = model === 'AccessToken';
    this.scripts = scripts ?? defineArtifactScripts(redis);
  }

  /** After access tokens were deleted: this process forgets them now, the others when told. */
  private async revoked(revoked: Revoked): Promise<void> {
    this.cache?.drop(revoked);
    await announceRevocation(this.redis, this.prefix, revoked);
  }

  private key(id: string): string {
    return keyOf(this.prefix, this.model, id);
  }

  private grantKey(grantId: string): string {
    return grantIndexOf(this.prefix, this.model, grantId);
  }

  private uidKey(uid: string): string {
    return `${this.prefix}${this.model}:uid:${artifactKey(uid)}`;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn = 0): Promise<void> {
    const key = this.key(id);
    const json = JSON.stringify(toStored(this.model, payload));
    const indexes = [payload.grantId && this.grantKey(payload.grantId), payload.clientId && clientIndexKey(this.prefix, payload.clientId)].filter(
      (index): index is string => Boolean(index),
    );
    const lookups = payload.uid ? [this.uidKey(payload.uid)] : [];

    if (!this.redis.isCluster) {
      // One node (or Sentinel's master): one script, one command — a token save is on the path of
      // every token request, and a single command shares a write with other requests' commands.
      await this.scripts.upsert(1 + indexes.length + lookups.length, key, ...indexes, ...lookups, json, expiresIn, indexes.length, lookups.length ? id : '', grantKeyOf(this.prefix, this.model, payload));
      return;
    }
    // A cluster: the keys live in different slots, so one command per key. Indexes first: a failure
    // in between leaves at most an index entry for a missing key, never an artifact that revocation
    // by grant or client cannot find.
    await Promise.all([
      ...indexes.map((index) => this.scripts.indexAdd(1, index, key, expiresIn)),
      ...lookups.map((lookup) => (expiresIn ? this.redis.set(lookup, id, 'EX', expiresIn) : this.redis.set(lookup, id))),
    ]);
    const grant = grantKeyOf(this.prefix, this.model, payload);
    const tx = this.redis.multi().del(key).hset(key, 'payload', json, ...(grant ? ['grant', grant] : []));
    if (expiresIn) tx.expire(key, expiresIn);
    throwFirstError(await tx.exec());
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    if (this.tokens && this.cache) return this.cache.read(artifactKey(id), () => this.load(id));
    return this.load(id);
  }

  private async load(id: string): Promise<AdapterPayload | undefined> {
    const data = await this.redis.hgetall(this.key(id));
    if (!data.payload) return undefined; // HGETALL gives {} for a missing key
    const payload = fromStored(this.model, id, JSON.parse(data.payload) as AdapterPayload);
    if (data.consumed) payload.consumed = Number(data.consumed);
    return payload;
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    const id = await this.redis.get(this.uidKey(uid));
    return id ? this.find(id) : undefined;
  }

  /** The device flow is off; the Adapter interface still names this method. */
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }

  // Atomic, so two concurrent redemptions of one code, refresh token or request_uri cannot both pass:
  // oidc-provider checks `consumed` and calls consume() in separate steps.
  async consume(id: string): Promise<void> {
    const marked = await this.scripts.consume(1, this.key(id), Math.floor(Date.now() / 1000));
    if (marked !== 1 && CONSUMABLE.has(this.model)) {
      throw alreadyConsumed(this.model);
    }
  }

  async destroy(id: string): Promise<void> {
    await this.redis.del(this.key(id));
    if (this.tokens) await this.revoked({ token: artifactKey(id) });
    // A grant's tokens are refused once it is gone (src/oauth/token-liveness.ts): no instance may
    // keep answering for them from memory, even before they are swept.
    if (this.model === 'Grant') await this.revoked({ grant: id });
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await deleteIndexed(this.redis, this.grantKey(grantId));
    if (this.tokens) await this.revoked({ grant: grantId });
  }
}

