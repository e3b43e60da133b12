// A change channel can stall without a signal: behind a hung proxy, or on a half-open connection,
// it delivers nothing and reports nothing until TCP notices, minutes later — and the memory it
// guards (revoked tokens, changed client records) would be served stale meanwhile. So every
// instance sends a heartbeat on each channel every `intervalMs` and expects to hear one (its own
// or another instance's) within `deadlineMs`; past that, the channel is taken as lost. The beats
// are sent on real time; the deadline is the system's clock's (a test moves it past).
import type { Clock } from '../clock.ts';

export interface HeartbeatTiming {
  intervalMs: number;
  deadlineMs: number;
}

/** Three missed beats: a busy moment does not end the cache, a stall ends it within 20 s. */
export const HEARTBEAT: HeartbeatTiming = { intervalMs: 5000, deadlineMs: 15_000 };

/** How a channel's heartbeat is kept (tests make it fast), by which clock, and who hears of a missed one. */
export interface ChannelOptions {
  clock: Clock;
  heartbeat?: HeartbeatTiming;
  /** The channel missed its heartbeat (for the metrics). */
  onHeartbeatMissed?: () => void;
}

/** The message sent (no record or token is named so: the channels' readers ignore it). */
export const HEARTBEAT_MESSAGE = 'heartbeat';

export interface Heartbeat {
  /** Something arrived on the channel (or it was just (re)established): it delivers. */
  heard(): void;
  stop(): void;
}

/** Sends a beat every interval; calls `missed` when nothing was heard within the deadline. */
export function watchHeartbeat(timing: HeartbeatTiming, clock: Clock, send: () => Promise<unknown>, missed: () => void): Heartbeat {
  let lastHeard = clock.now();
  const timer = setInterval(() => {
    send().catch(() => {}); // a store that is down is noticed by its connection, or by this deadline
    if (clock.now() - lastHeard <= timing.deadlineMs) return;
    lastHeard = clock.now(); // once per deadline, while the channel reconnects
    missed();
  }, timing.intervalMs);
  timer.unref();
  return {
    heard: () => void (lastHeard = clock.now()),
    stop: () => clearInterval(timer),
  };
}
