// Durations as operators and developers write them: a whole number and a unit, `s`,
// `m`, `h` or `d` — `90s`, `1h`, `7d`. One parser for the scripts, the pages and the configuration.
import { InputError } from './errors.ts';

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
const FORMAT = /^([0-9]{1,7})([smhd])$/;

export const DAY_SECONDS = UNIT_SECONDS.d;

/** A duration in seconds, within [min, max]; an InputError naming `what` otherwise. */
export function parseDuration(text: string, what: string, { min, max }: { min: number; max: number }): number {
  const match = FORMAT.exec(text.trim());
  const range = `from ${describeDuration(min)} to ${describeDuration(max)}`;
  if (!match) throw new InputError(`${what} must be a whole number with a unit, s, m, h or d (90s, 1h, 7d), ${range}; got "${text}"`);
  const seconds = Number(match[1]) * UNIT_SECONDS[match[2] as keyof typeof UNIT_SECONDS];
  if (seconds < min || seconds > max) throw new InputError(`${what} must be ${range}; got ${text}`);
  return seconds;
}

/** The largest whole unit that fits: 0s, 90s, 2h, 7d. */
export function describeDuration(seconds: number): string {
  for (const unit of ['d', 'h', 'm'] as const) if (seconds > 0 && seconds % UNIT_SECONDS[unit] === 0) return `${seconds / UNIT_SECONDS[unit]}${unit}`;
  return `${seconds}s`;
}
