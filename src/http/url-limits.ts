// What no URL here may be, checked before any route (by the app, and by the hot-path listener,
// which leaves such requests to the app to refuse).
import { POLICY } from '../settings.ts';

// Longer URLs have no legitimate use here and only cost parsing; headers are capped by Node (16 KiB).
const MAX_URL_LENGTH = POLICY.MAX_URL_LENGTH.value;

// A NUL byte has no legitimate use in any URL here, and PostgreSQL text cannot hold one.
const NUL = /%00|\0/i;

/** Why this request URL is refused, or undefined. */
export function urlProblem(url: string): { status: 400 | 414; message: string } | undefined {
  if (url.length > MAX_URL_LENGTH) return { status: 414, message: 'the request URL is too long' };
  if (NUL.test(url)) return { status: 400, message: 'the request URL contains a NUL byte' };
  return undefined;
}
