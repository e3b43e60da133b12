// Access tokens are looked up on every API call (the gateway check, /v2/me, introspection) and
// never change after they are issued: they only end, by expiry or by revocation. So a lookup is
// served from memory while this process hears of every revocation, and from Redis otherwise.
//
// How revocation stays immediate:
// - Every deletion of access tokens (one token, a grant's, a client's) is published on a Redis
//   channel after the keys are deleted; the process that deletes drops its own copies at once,
//   every other instance when the message arrives (within milliseconds).
// - A dedicated subscriber connection listens. While it is not subscribed (starting, lost,
//   reconnecting) nothing is served from memory, and the memory is emptied: messages may have been
//   missed. A silent stall counts as lost: every instance publishes a heartbeat on the channel,
//   and a subscriber that hears nothing within the deadline is replaced (heartbeat.ts).
// - A lookup that started before any revocation message or reconnection is not kept: it may have
//   read a token that was being revoked (a generation counter says so).
// - What a reader derived from a payload (the API's verified facts) may be remembered with its
//   entry, and goes with it. Those facts include that the token's client was usable, so a
//   change of the client's record (or a lost change feed) drops the client's entries too
//   (system.ts): a token saved after a suspension's sweep, by a request that read the client
//   before the suspension, is refused by every instance once it knows of the suspension.
// - Entries end at the token's own expiry. Only hits are kept, never "not found". Keys are the
//   hashed token ids of the Redis storage, and payloads carry no token value.
// Not on a Redis Cluster: its subscriber connection can move between nodes without a signal we
// could trust, so there every lookup goes to Redis.
import type { AdapterPayload } from 'oidc-provider';
import type { Redis } from 'ioredis';
import type { RedisClient } from './redis.ts';
import { HEARTBEAT, HEARTBEAT_MESSAGE, watchHeartbeat, type ChannelOptions } from './heartbeat.ts';
import { POLICY } from '../settings.ts';

const MAX_ENTRIES = POLICY.TOKEN_CACHE_ENTRIES.value;

/** What a revocation message names: one token (by its storage key), a grant, or a client. */
export type Revoked = { token: string } | { grant: string } | { client: string };

const channelOf = (prefix: string) => `${prefix}revocations`;
const encode = (revoked: Revoked) => ('token' in revoked ? `token:${revoked.token}` : 'grant' in revoked ? `grant:${revoked.grant}` : `client:${revoked.client}`);

/** Tells every instance that access tokens were deleted (after the deletion). */
export async function announceRevocation(redis: RedisClient, prefix: string, revoked: Revoked): Promise<void> {
  await redis.publish(channelOf(prefix), encode(revoked));
}

interface Entry {
  payload: AdapterPayload;
  /** See remember(). */
  known?: unknown;
  expiresAt: number;
  grantId?: string;
  clientId?: string;
}

export class TokenCache {
  private readonly entries = new Map<string, Entry>();
  private readonly byGrant = new Map<string, Set<string>>();
  private readonly byClient = new Map<string, Set<string>>();
  private generation = 0;
  private live = false;

  /** The token stored under `key`, from memory when it may be, else loaded (and kept if it may be). */
  async read(key: string, load: () => Promise<AdapterPayload | undefined>): Promise<AdapterPayload | undefined> {
    if (this.live) {
      const hit = this.entries.get(key);
      if (hit && hit.expiresAt > Date.now()) return { ...hit.payload };
      if (hit) this.forget(key);
    }
    const started = this.generation;
    const payload = await load();
    if (payload && typeof payload.exp === 'number' && this.live && started === this.generation) this.keep(key, payload);
    return payload;
  }

  /**
   * Remembers what the caller derived from the payload now cached under `key` (after reading it
   * through read()); nothing when the entry is gone meanwhile (revoked, expired, not kept).
   */
  remember(key: string, known: unknown): void {
    const entry = this.live ? this.entries.get(key) : undefined;
    if (entry) entry.known = known;
  }

  /** What was remembered for `key`, while its entry may be served. */
  known<T>(key: string): T | undefined {
    if (!this.live) return undefined;
    const entry = this.entries.get(key);
    return entry && entry.expiresAt > Date.now() ? (entry.known as T | undefined) : undefined;
  }

  /** Drops what a revocation names (a message from another instance, or this process's own). */
  drop(revoked: Revoked): void {
    this.generation += 1;
    if ('token' in revoked) this.forget(revoked.token);
    else for (const key of ('grant' in revoked ? this.byGrant.get(revoked.grant) : this.byClient.get(revoked.client)) ?? []) this.forget(key);
  }

  /** Drops every entry (what was derived from records that may have changed goes with them). */
  dropAll(): void {
    this.setLive(this.live);
  }

  /** Whether lookups are served from memory (for tests and the README's claims). */
  get serving(): boolean {
    return this.live;
  }

  setLive(live: boolean): void {
    this.generation += 1;
    this.entries.clear();
    this.byGrant.clear();
    this.byClient.clear();
    this.live = live;
  }

  private keep(key: string, payload: AdapterPayload): void {
    const entry: Entry = { payload: { ...payload }, expiresAt: (payload.exp as number) * 1000 };
    if (payload.grantId) entry.grantId = payload.grantId;
    if (payload.clientId) entry.clientId = payload.clientId;
    this.forget(key);
    this.entries.set(key, entry);
    if (entry.grantId) addTo(this.byGrant, entry.grantId, key);
    if (entry.clientId) addTo(this.byClient, entry.clientId, key);
    // Map keeps insertion order: the first key is the oldest entry.
    if (this.entries.size > MAX_ENTRIES) this.forget(this.entries.keys().next().value!);
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    if (entry.grantId) removeFrom(this.byGrant, entry.grantId, key);
    if (entry.clientId) removeFrom(this.byClient, entry.clientId, key);
  }
}

function addTo(index: Map<string, Set<string>>, id: string, key: string): void {
  const keys = index.get(id) ?? new Set<string>();
  keys.add(key);
  index.set(id, keys);
}

function removeFrom(index: Map<string, Set<string>>, id: string, key: string): void {
  const keys = index.get(id);
  keys?.delete(key);
  if (keys?.size === 0) index.delete(id);
}

function decode(message: string): Revoked | undefined {
  const at = message.indexOf(':');
  const [kind, id] = [message.slice(0, at), message.slice(at + 1)];
  if (at < 1 || !id) return undefined;
  return kind === 'token' ? { token: id } : kind === 'grant' ? { grant: id } : kind === 'client' ? { client: id } : undefined;
}

export interface TokenCacheHandle {
  cache: TokenCache;
  close(): Promise<void>;
}

/**
 * Subscribes to the revocation channel on a connection of its own and serves from memory while
 * subscribed and hearing the channel's heartbeat. Undefined on a Redis Cluster (see the header).
 */
export async function startTokenCache(
  redis: RedisClient,
  prefix: string,
  onProblem: (message: string) => void = () => {},
  { clock, heartbeat = HEARTBEAT, onHeartbeatMissed = () => {} }: ChannelOptions,
): Promise<TokenCacheHandle | undefined> {
  if (redis.isCluster) return undefined;
  const cache = new TokenCache();
  // Named, so an operator can tell it apart in CLIENT LIST.
  // Its SUBSCRIBE may wait for the connection (the commands on the main one may not: redis.ts).
  const subscriber = (redis as Redis).duplicate({ connectionName: `${prefix}token-cache`, enableOfflineQueue: true });
  const channel = channelOf(prefix);
  let closed = false;
  const beat = watchHeartbeat(
    heartbeat,
    clock,
    () => redis.publish(channel, HEARTBEAT_MESSAGE),
    () => {
      if (closed || !cache.serving) return;
      cache.setLive(false);
      onHeartbeatMissed();
      onProblem('the token revocation channel missed its heartbeat; access tokens are read from Redis while it reconnects');
      subscriber.disconnect(true); // a stalled connection is not waited for: a new one
    },
  );
  subscriber.on('message', (from: string, message: string) => {
    if (from !== channel) return;
    beat.heard();
    const revoked = decode(message);
    if (revoked) cache.drop(revoked);
  });
  subscriber.on('error', () => {}); // reported through 'close'
  subscriber.on('close', () => {
    if (closed || !cache.serving) return;
    cache.setLive(false);
    onProblem('the token revocation channel was lost; access tokens are read from Redis until it is back');
  });
  // ioredis reconnects by itself; serve from memory again only once the subscription is confirmed.
  const subscribe = () =>
    subscriber.subscribe(channel).then(
      () => {
        if (closed) return;
        beat.heard();
        cache.setLive(true);
      },
      () => {},
    );
  subscriber.on('ready', () => void subscribe());
  await subscribe();
  return {
    cache,
    async close() {
      closed = true;
      beat.stop();
      cache.setLive(false);
      subscriber.disconnect();
    },
  };
}
