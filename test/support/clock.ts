// A clock a test moves (src/clock.ts): where a rule of ours depends on time, the test hands the
// system one of these and moves it past the moment instead of waiting for it. It runs with real
// time (plus what the test moved it by), so timestamps written on real time — by PostgreSQL, by
// the provider — stay comparable with it.
import type { Clock } from '../../src/clock.ts';

export interface TestClock extends Clock {
  /** Moves the clock on by `ms`. */
  advance(ms: number): void;
  /** Moves the clock to just past `at` (a date, ms or ISO), if it is not there yet. */
  passed(at: number | string): void;
  /**
   * Back to real time, between tests: a clock left an hour ahead would see a later test's
   * expiries, set on real time by the database, as already past.
   */
  reset(): void;
}

export function testClock(): TestClock {
  let moved = 0;
  const clock: TestClock = {
    now: () => Date.now() + moved,
    advance(ms) {
      moved += ms;
    },
    passed(at) {
      const ahead = (typeof at === 'string' ? Date.parse(at) : at) - clock.now() + 1;
      if (ahead > 0) moved += ahead;
    },
    reset() {
      moved = 0;
    },
  };
  return clock;
}
