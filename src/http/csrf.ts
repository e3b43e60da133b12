// CSRF protection of every form (sign-in, consent, the web application pages): one scheme.
// A token is an HMAC, under the current cookie key, of what the form is bound to: the web session,
// the anonymous visitor's cookie, or the authorization interaction. A token minted for one
// binding is worthless in another (an anonymous token does not work in a signed-in session, and
// signing in or out changes the binding). Fetch Metadata: only same-origin posts, or posts from a
// user agent that sends no Sec-Fetch-Site at all, are accepted.
// Each rendered form gets its own token (`issued.nonce.mac`): the nonce lets a form be single-use
// (src/web/single-use.ts: a submission repeated by a reload or a second click changes nothing).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';

function key(ctx: Context): string {
  const keys = ctx.app.keys as unknown as string[] | undefined;
  if (!keys?.length) throw new Error('the app has no cookie keys');
  return String(keys[0]);
}

const mac = (ctx: Context, binding: string, stamp: string) => createHmac('sha256', key(ctx)).update(`csrf:${binding}:${stamp}`).digest('base64url');

export function csrfToken(ctx: Context, binding: string): string {
  const stamp = `${Math.floor(Date.now() / 1000).toString(36)}.${randomBytes(12).toString('base64url')}`;
  return `${stamp}.${mac(ctx, binding, stamp)}`;
}

const ACCEPTED_FETCH_SITES = new Set(['same-origin', 'none', '']);
const TOKEN = /^([0-9a-z]{1,10})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/;

/** True when the POST carries a token for `binding` and was not sent by another site. */
export function csrfValid(ctx: Context, binding: string, presented: string): boolean {
  if (!ACCEPTED_FETCH_SITES.has(ctx.get('Sec-Fetch-Site'))) return false;
  const parts = TOKEN.exec(presented);
  if (!parts) return false;
  const expected = Buffer.from(mac(ctx, binding, `${parts[1]}.${parts[2]}`));
  const actual = Buffer.from(parts[3]!);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** The form a (valid) token was minted for: when, and its nonce. */
export function csrfForm(presented: string): { issuedAt: number; nonce: string } | undefined {
  const parts = TOKEN.exec(presented);
  return parts ? { issuedAt: parseInt(parts[1]!, 36), nonce: parts[2]! } : undefined;
}
