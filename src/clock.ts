// The time that rules of ours decide by: the refresh grace window, client secrets' lifetimes and
// their notices, last-use batching, the change channels' heartbeat, the metadata-document refusal
// memory. One is built in the composition root (src/system.ts) and passed to each; tests hand one
// they move (test/support/clock.ts) instead of waiting. What others decide stays on their own
// time: the provider's token lifetimes, and a store's own expiry (a Redis TTL, an SQL `now()`
// compared with `expires_at`).
import type { Knex } from 'knex';

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/** The machine's time. */
export const systemClock: Clock = { now: () => Date.now() };

/**
 * The clock's time in an SQL statement: the database's own now() on the system clock (as the
 * statement always read it), else the handed clock's time as a parameter.
 */
export const sqlNow = (db: Knex, clock: Clock): Knex.Raw => (clock === systemClock ? db.raw('now()') : db.raw('?::timestamptz', [new Date(clock.now())]));
