// oidc-provider adapter on Redis (ioredis: a single node, Cluster or Sentinel), used when Redis is
// configured. Every artifact is a hash {payload, consumed?} under a hashed key, expiring with the
// artifact. On a cluster every command and script touches one key, so no two keys ever need to
// share a hash slot; on a single node a save is one script.
import { redisScript, type RedisClient } from './redis.ts';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { ArtifactAlreadyConsumed } from './artifact-errors.ts';
import { artifactKey, CONSUMABLE, fromStored, toStored } from './artifact-key.ts';
import { deleteIndexed } from './client-artifacts.ts';
import { clientIndexKey } from './redis-keys.ts';
import { announceRevocation, type Revoked, type TokenCache } from './token-cache.ts';

// Marks an artifact consumed only if it still exists and is not consumed yet; returns 1 on
// success. A bare HSET on an expired key would resurrect it without a TTL.
const CONSUME_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], 'consumed', ARGV[1])`;

// Adds a member to an index set (of a grant or a client) and keeps the set alive as long as its
// longest-lived member (`want` seconds; 0 = no expiry, which makes the set persistent for good).
const INDEX_ADD = `
local function index_add(index, member, want)
  local existed = redis.call('EXISTS', index) == 1
  redis.call('SADD', index, member)
  if want == 0 then redis.call('PERSIST', index) return end
  local ttl = redis.call('TTL', index)
  if not existed or (ttl >= 0 and ttl < want) then redis.call('EXPIRE', index, want) end
end`;

// One index, for a cluster (one key per script). KEYS[1] index; ARGV[1] member, ARGV[2] seconds.
const INDEX_ADD_SCRIPT = `${INDEX_ADD}
index_add(KEYS[1], ARGV[1], tonumber(ARGV[2]))
return 1`;

// A whole save, atomically, on a single node: KEYS[1] the artifact, then ARGV[3] index sets, then
// the lookup keys (uid, user code) that point at ARGV[4], the artifact's id. ARGV[1] the payload,
// ARGV[2] seconds to live (0 = none). Indexes first, as on a cluster.
const UPSERT_SCRIPT = `${INDEX_ADD}
local ttl = tonumber(ARGV[2])
local indexes = tonumber(ARGV[3])
for i = 2, 1 + indexes do index_add(KEYS[i], KEYS[1], ttl) end
for i = 2 + indexes, #KEYS do
  if ttl > 0 then redis.call('SET', KEYS[i], ARGV[4], 'EX', ttl) else redis.call('SET', KEYS[i], ARGV[4]) end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'payload', ARGV[1])
if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
return 1`;

type Scripts = Record<'upsert' | 'indexAdd' | 'consume', ReturnType<typeof redisScript>>;
const definedScripts = new WeakMap<RedisClient, Scripts>();

/**
 * The adapter's scripts on this connection, defined once. artifactStorage defines them when the
 * system is built, before any traffic: ioredis gives a command batch only the commands defined
 * when the batch began, so one defined while a batch is open would fail in it.
 */
export function artifactScripts(redis: RedisClient): Scripts {
  let scripts = definedScripts.get(redis);
  if (!scripts) {
    scripts = {
      upsert: redisScript(redis, 'artifactUpsert', UPSERT_SCRIPT),
      indexAdd: redisScript(redis, 'artifactIndexAdd', INDEX_ADD_SCRIPT),
      consume: redisScript(redis, 'artifactConsume', CONSUME_SCRIPT),
    };
    definedScripts.set(redis, scripts);
  }
  return scripts;
}

/** ioredis resolves a pipeline or transaction with one [error, result] per command. */
function throwFirstError(results: [Error | null, unknown][] | null): void {
  const failed = results?.find(([err]) => err);
  if (failed) throw failed[0];
}

export class RedisAdapter implements Adapter {
  /** Access tokens only: read through the token cache, and every deletion announced. */
  private readonly tokens: boolean;
  private readonly scripts: Scripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly model: string,
    private readonly prefix = '',
    private readonly cache?: TokenCache,
  ) {
    this.tokens = model === 'AccessToken';
    this.scripts = artifactScripts(redis);
  }

  /** After access tokens were deleted: this process forgets them now, the others when told. */
  private async revoked(revoked: Revoked): Promise<void> {
    this.cache?.drop(revoked);
    await announceRevocation(this.redis, this.prefix, revoked);
  }

  private key(id: string): string {
    return `${this.prefix}${this.model}:${artifactKey(id)}`;
  }

  private grantKey(grantId: string): string {
    return `${this.prefix}${this.model}:grant:${grantId}`;
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
      await this.scripts.upsert(1 + indexes.length + lookups.length, key, ...indexes, ...lookups, json, expiresIn, indexes.length, id);
      return;
    }
    // A cluster: the keys live in different slots, so one command per key. Indexes first: a failure
    // in between leaves at most an index entry for a missing key, never an artifact that revocation
    // by grant or client cannot find.
    await Promise.all([
      ...indexes.map((index) => this.scripts.indexAdd(1, index, key, expiresIn)),
      ...lookups.map((lookup) => (expiresIn ? this.redis.set(lookup, id, 'EX', expiresIn) : this.redis.set(lookup, id))),
    ]);
    const tx = this.redis.multi().del(key).hset(key, 'payload', json);
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

  // Atomic, so two concurrent redemptions of one code or refresh token cannot both pass:
  // oidc-provider checks `consumed` and calls consume() in separate steps.
  async consume(id: string): Promise<void> {
    const marked = await this.scripts.consume(1, this.key(id), Math.floor(Date.now() / 1000));
    if (marked !== 1 && CONSUMABLE.has(this.model)) {
      throw new ArtifactAlreadyConsumed(this.model);
    }
  }

  async destroy(id: string): Promise<void> {
    await this.redis.del(this.key(id));
    if (this.tokens) await this.revoked({ token: artifactKey(id) });
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await deleteIndexed(this.redis, this.grantKey(grantId));
    if (this.tokens) await this.revoked({ grant: grantId });
  }
}

