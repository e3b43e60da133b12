// oidc-provider adapter on Redis (ioredis: a single node, Cluster or Sentinel), used when Redis is
// configured. Every artifact is a hash {payload, consumed?} under a hashed key, expiring with the
// artifact. Cluster-safe: every command and script touches one key, so no two keys ever need to
// share a hash slot.
import type { RedisClient } from './redis.ts';
import { errors, type Adapter, type AdapterPayload } from 'oidc-provider';
import { artifactKey, CONSUMABLE, fromStored, toStored } from './artifact-key.ts';
import { deleteIndexed } from './client-artifacts.ts';
import { clientIndexKey } from './redis-keys.ts';

// Marks an artifact consumed only if it still exists and is not consumed yet; returns 1 on
// success. A bare HSET on an expired key would resurrect it without a TTL.
const CONSUME_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], 'consumed', ARGV[1])`;

// Adds ARGV[1] to the index set KEYS[1] and keeps the set alive as long as its longest-lived
// member (ARGV[2] seconds; 0 = no expiry).
const INDEX_ADD_SCRIPT = `
redis.call('SADD', KEYS[1], ARGV[1])
local want = tonumber(ARGV[2])
if want == 0 then redis.call('PERSIST', KEYS[1]) return 0 end
local ttl = redis.call('TTL', KEYS[1])
if ttl == -1 or ttl < want then redis.call('EXPIRE', KEYS[1], want) end
return 1`;

type Command = [name: string, ...args: (string | number)[]];

/** ioredis resolves a pipeline or transaction with one [error, result] per command. */
function throwFirstError(results: [Error | null, unknown][] | null): void {
  const failed = results?.find(([err]) => err);
  if (failed) throw failed[0];
}

export class RedisAdapter implements Adapter {
  constructor(
    private readonly redis: RedisClient,
    private readonly model: string,
    private readonly prefix = '',
  ) {}

  private key(id: string): string {
    return `${this.prefix}${this.model}:${artifactKey(id)}`;
  }

  private grantKey(grantId: string): string {
    return `${this.prefix}${this.model}:grant:${grantId}`;
  }

  private lookupKey(kind: 'uid' | 'userCode', value: string): string {
    return `${this.prefix}${this.model}:${kind}:${artifactKey(value)}`;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    const key = this.key(id);
    const expiry = expiresIn ? ['EX', expiresIn] : [];
    // Indexes first: a failure in between leaves at most an index entry for a missing key, never
    // an artifact that revocation by grant or client cannot find.
    const indexing: Command[] = [
      ...[payload.grantId && this.grantKey(payload.grantId), payload.clientId && clientIndexKey(this.prefix, payload.clientId)]
        .filter((index): index is string => Boolean(index))
        .map((index): Command => ['eval', INDEX_ADD_SCRIPT, 1, index, key, expiresIn ?? 0]),
      ...(['uid', 'userCode'] as const)
        .filter((kind) => payload[kind])
        .map((kind): Command => ['set', this.lookupKey(kind, payload[kind] as string), id, ...expiry]),
    ];
    const artifact: Command[] = [['del', key], ['hset', key, 'payload', JSON.stringify(toStored(this.model, payload))], ...(expiresIn ? [['expire', key, expiresIn] as Command] : [])];

    if (this.redis.isCluster) {
      // The keys live in different slots: one command per index, then the artifact's own transaction.
      await Promise.all(indexing.map(([name, ...args]) => this.redis.call(name, ...args)));
      throwFirstError(await this.redis.multi(artifact).exec());
    } else {
      // One node (or Sentinel's master): all of it in one transaction, one round trip — a token
      // save is on the path of every token request. Redis runs the commands in the order queued.
      throwFirstError(await this.redis.multi([...indexing, ...artifact]).exec());
    }
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    const data = await this.redis.hgetall(this.key(id));
    if (!data.payload) return undefined; // HGETALL gives {} for a missing key
    const payload = fromStored(this.model, id, JSON.parse(data.payload) as AdapterPayload);
    if (data.consumed) payload.consumed = Number(data.consumed);
    return payload;
  }

  private async findBy(kind: 'uid' | 'userCode', value: string): Promise<AdapterPayload | undefined> {
    const id = await this.redis.get(this.lookupKey(kind, value));
    return id ? this.find(id) : undefined;
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.findBy('uid', uid);
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.findBy('userCode', userCode);
  }

  // Atomic, so two concurrent redemptions of one code or refresh token cannot both pass:
  // oidc-provider checks `consumed` and calls consume() in separate steps.
  async consume(id: string): Promise<void> {
    const marked = await this.redis.eval(CONSUME_SCRIPT, 1, this.key(id), Math.floor(Date.now() / 1000));
    if (marked !== 1 && CONSUMABLE.has(this.model)) {
      throw new errors.InvalidGrant(`${this.model} already consumed`);
    }
  }

  async destroy(id: string): Promise<void> {
    await this.redis.del(this.key(id));
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await deleteIndexed(this.redis, this.grantKey(grantId));
  }
}

