// oidc-provider adapter on Redis (ioredis), used when REDIS_URL is set.
// Every artifact is a hash {payload, consumed?} under a hashed key, expiring with the artifact.
import type { Redis } from 'ioredis';
import { errors, type Adapter, type AdapterPayload } from 'oidc-provider';
import { artifactKey, CONSUMABLE, fromStored, toStored } from './artifact-key.ts';
import { deleteIndexed } from './client-artifacts.ts';
import { clientIndexKey } from './redis-keys.ts';

// Marks an artifact consumed only if it still exists and is not consumed yet; returns 1 on
// success. A bare HSET on an expired key would resurrect it without a TTL.
const CONSUME_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], 'consumed', ARGV[1])`;

// Extends a TTL to at least ARGV[1] seconds (index keys live as long as their longest member).
const EXTEND_TTL_SCRIPT = `
local ttl = redis.call('TTL', KEYS[1])
if ttl >= 0 and ttl < tonumber(ARGV[1]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return ttl`;

export class RedisAdapter implements Adapter {
  constructor(
    private readonly redis: Redis,
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
    const tx = this.redis.multi();
    tx.del(key);
    tx.hset(key, 'payload', JSON.stringify(toStored(this.model, payload)));
    if (expiresIn) tx.expire(key, expiresIn);
    for (const [kind, value] of [['uid', payload.uid], ['userCode', payload.userCode]] as const) {
      if (!value) continue;
      const lookup = this.lookupKey(kind, value);
      tx.set(lookup, id);
      if (expiresIn) tx.expire(lookup, expiresIn);
    }
    // Index sets: a grant's artifacts of this model, and all of a client's artifacts.
    const indexes = [payload.grantId && this.grantKey(payload.grantId), payload.clientId && clientIndexKey(this.prefix, payload.clientId)];
    for (const index of indexes) {
      if (!index) continue;
      tx.sadd(index, key);
      if (expiresIn) tx.eval(EXTEND_TTL_SCRIPT, 1, index, expiresIn);
      else tx.persist(index);
    }
    await tx.exec();
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

