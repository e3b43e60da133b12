// Client and user records are read on every token request and /v2/me, and change rarely: while a
// change feed runs for the database, those reads are served from memory and dropped the moment
// the record changes — by this process at once, and by every other instance (and the operator
// scripts' process) through PostgreSQL LISTEN/NOTIFY, which delivers at commit. While the feed is
// down, nothing is served from memory; a feed that stalls silently (it hears no heartbeat NOTIFY
// within the deadline, heartbeat.ts) counts as down and is replaced. Without a feed (the operator scripts, tests on a bare
// database) every read goes to the database. What must never be stale is checked at the source:
// a revoked secret (refused at once: docs/secret-rotation.md) is checked by its mark in Redis (src/oauth/client-secrets.ts),
// a revoked token in Redis.
import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Knex } from 'knex';
import type { Db } from './db.ts';
import { HEARTBEAT, HEARTBEAT_MESSAGE, watchHeartbeat, type ChannelOptions } from './heartbeat.ts';
import { transactionSettled } from '../seams/oidc-provider.ts';
import { POLICY } from '../settings.ts';

/**
 * 'org': an organization's app policy or its teams changed (src/orgs/closed-orgs.ts keeps what it read of them).
 * 'signing_keys': the token-signing keys changed, a rotation (src/oauth/signing-keys.ts reads them all again; nothing is cached here).
 */
export type RecordKind = 'client' | 'user' | 'org' | 'signing_keys';
const RECORD_KINDS: ReadonlySet<string> = new Set<RecordKind>(['client', 'user', 'org', 'signing_keys']);

const CHANNEL = 'oauth_record_changes';
const MAX_ENTRIES = POLICY.RECORD_CACHE_ENTRIES.value;
/**
 * A safety net only: changes drop entries at once. Spread over 10 to 15 minutes, so that records
 * read together (all clients after a start) are not all read again in the same moment.
 */
const ttl = () => (10 + 5 * Math.random()) * 60_000;

interface Entry {
  /** The read on its way, then the record itself (see read). */
  value: Promise<unknown> | { record: unknown };
  expires: number;
}

class Feed {
  live = false;
  readonly entries = new Map<string, Entry>();
  readonly changes = new EventEmitter();

  drop(kind: RecordKind, id: string): void {
    this.entries.delete(`${kind}:${id}`);
    this.changes.emit('change', kind, id);
  }

  reset(): void {
    this.entries.clear();
    this.changes.emit('reset');
  }
}

/** Announces a change: every process's cache (this one's through `feed`) drops the record. */
async function announce(feed: Feed | undefined, q: Db | Knex.Transaction, kind: RecordKind, id: string | number): Promise<void> {
  feed?.drop(kind, String(id));
  // A read between now and the commit may cache the old row again: drop it once more at commit.
  const committed = transactionSettled(q);
  void committed?.then(() => feed?.drop(kind, String(id)), () => {});
  if (q.client.config.client === 'pg') await q.raw('select pg_notify(?, ?)', [CHANNEL, `${kind}:${id}`]);
}

/** A record read through the cache when the feed is live, else straight from the database. */
function read<T>(feed: Feed, kind: RecordKind, id: string, load: () => Promise<T>): Promise<T> {
  if (!feed.live) return load();
  const key = `${kind}:${id}`;
  const hit = feed.entries.get(key);
  if (hit && Date.now() < hit.expires) return hit.value instanceof Promise ? (hit.value as Promise<T>) : Promise.resolve(hit.value.record as T);
  const value = load();
  const entry: Entry = { value, expires: Date.now() + ttl() };
  feed.entries.set(key, entry);
  // Once read, the record itself is kept, not the promise: a promise made during a request carries
  // that request's async context (oidc-provider runs each request in an AsyncLocalStorage), so
  // the cached promise kept the whole first request — context, request and response — for as long
  // as the record stayed cached: a large heap with many clients in use (docs/benchmark.md).
  value.then(
    (record) => void (entry.value = { record }),
    () => feed.entries.get(key) === entry && feed.entries.delete(key),
  );
  // Map keeps insertion order: the first key is the oldest entry.
  if (feed.entries.size > MAX_ENTRIES) feed.entries.delete(feed.entries.keys().next().value!);
  return value;
}

/**
 * Client and user records as the stores read them, and the announcement of their changes. Built
 * once per database and passed to what reads or changes them: the server's (system.ts) serves
 * from memory while its change feed runs; the operator scripts' (uncachedRecords) reads the
 * database and announces to the servers.
 */
export interface RecordCache {
  /** True while changes made elsewhere reach this process (the cache serves only then). */
  readonly live: boolean;
  /** The record, from memory when it may be, else from `load` (and kept when it may be). */
  read<T>(kind: RecordKind, id: string, load: () => Promise<T>): Promise<T>;
  /**
   * Says that a record changed, inside the transaction `q` that changes it (or right after the
   * change on the database). This process drops its copy now and again at commit; other
   * processes when PostgreSQL delivers the notification, at commit.
   */
  announce(q: Db | Knex.Transaction, kind: RecordKind, id: string | number): Promise<void>;
  /** Called for each change (for tests and metrics, and the token cache: system.ts). */
  onChange(listener: (kind: RecordKind, id: string) => void): void;
  /** Called when changes may have been missed (the feed was lost or is back): every record may have changed. */
  onReset(listener: () => void): void;
  close(): Promise<void>;
}

/** A database with its record cache: what reads and changes of clients and users are given. */
export interface CachedDb {
  db: Db;
  records: RecordCache;
}

/** No cache (the operator scripts, tests on a bare database): every read goes to the database; changes are announced to the servers. */
export function uncachedRecords(): RecordCache {
  return {
    live: false,
    read: (_kind, _id, load) => load(),
    announce: (q, kind, id) => announce(undefined, q, kind, id),
    onChange: () => {},
    onReset: () => {},
    close: async () => {},
  };
}


const RECONNECT_MS = [100, 500, 1000, 2000, 5000];

/**
 * Starts listening for record changes on the database. On PostgreSQL: a dedicated connection
 * LISTENs, and reconnects after a failure (the cache is emptied and bypassed meanwhile). On the
 * embedded PGlite this process is the only writer, so its own announcements are enough.
 */
export async function startRecordCache(
  db: Db,
  databaseUrl: string | undefined,
  onProblem: (message: string) => void = () => {},
  channel?: ChannelOptions,
): Promise<RecordCache> {
  const feed = new Feed();
  if (!databaseUrl) {
    feed.live = true;
    return handle(feed, async () => {});
  }
  // Only a feed over PostgreSQL keeps a heartbeat, by the clock it is handed.
  if (!channel) throw new Error('a change feed over PostgreSQL needs its channel options (the clock)');
  const { clock, heartbeat = HEARTBEAT, onHeartbeatMissed = () => {} } = channel;

  let client: pg.Client | undefined;
  let closed = false;
  let attempt = 0;
  // Sent through the pool, heard on the feed's own connection: proves that connection delivers.
  const beat = watchHeartbeat(
    heartbeat,
    clock,
    () => db.raw('select pg_notify(?, ?)', [CHANNEL, HEARTBEAT_MESSAGE]),
    () => {
      if (closed || !feed.live) return;
      onHeartbeatMissed();
      lost('the change feed missed its heartbeat; client and user records are read from the database while it reconnects');
    },
  );
  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 2000 });
    next.on('notification', (message) => {
      beat.heard();
      const [kind, id] = (message.payload ?? '').split(/:(.*)/s);
      if (kind !== undefined && RECORD_KINDS.has(kind) && id !== undefined) feed.drop(kind as RecordKind, id);
    });
    next.on('error', () => lost('the change feed connection failed'));
    next.on('end', () => lost('the change feed connection ended'));
    await next.connect();
    await next.query(`LISTEN ${CHANNEL}`);
    client = next;
    attempt = 0;
    beat.heard();
    // Changes made while we were not listening are unknown: start from an empty cache.
    feed.reset();
    feed.live = true;
  };
  const lost = (why: string) => {
    if (closed || !feed.live) return;
    feed.live = false;
    feed.reset();
    onProblem(why);
    client?.removeAllListeners();
    client?.on('error', () => {});
    void client?.end().catch(() => {});
    // A stalled connection may never finish ending: its socket goes now.
    client?.connection.stream.destroy();
    client = undefined;
    retry();
  };
  const retry = () => {
    const delay = RECONNECT_MS[Math.min(attempt++, RECONNECT_MS.length - 1)]!;
    setTimeout(() => {
      if (!closed) connect().catch(() => retry());
    }, delay).unref();
  };
  await connect().catch((err: Error) => {
    onProblem(`the change feed could not connect: ${err.message}`);
    retry();
  });
  return handle(feed, async () => {
    closed = true;
    beat.stop();
    feed.live = false;
    await client?.end().catch(() => {});
  });
}

function handle(feed: Feed, stop: () => Promise<void>): RecordCache {
  return {
    get live() {
      return feed.live;
    },
    read: (kind, id, load) => read(feed, kind, id, load),
    announce: (q, kind, id) => announce(feed, q, kind, id),
    onChange(listener) {
      feed.changes.on('change', listener);
    },
    onReset(listener) {
      feed.changes.on('reset', listener);
    },
    close: stop,
  };
}
