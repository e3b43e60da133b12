// CSRF protection of every form (sign-in, consent, the web application pages): one scheme.
// A token is an HMAC, under the current cookie key, of what the form is bound to: the web session,
// the anonymous visitor's cookie, or the authorization interaction. A token minted for one
// binding is worthless in another (an anonymous token does not work in a signed-in session, and
// signing in or out changes the binding). Fetch Metadata: only same-origin posts, or posts from a
// user agent that sends no Sec-Fetch-Site at all, are accepted.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';

function key(ctx: Context): string {
  const keys = ctx.app.keys as unknown as string[] | undefined;
  if (!keys?.length) throw new Error('the app has no cookie keys');
  return String(keys[0]);
}

export function csrfToken(ctx: Context, binding: string): string {
  return createHmac('sha256', key(ctx)).update(`csrf:${binding}`).digest('base64url');
}

const ACCEPTED_FETCH_SITES = new Set(['same-origin', 'none', '']);

/** True when the POST carries the token for `binding` and was not sent by another site. */
export function csrfValid(ctx: Context, binding: string, presented: string): boolean {
  if (!ACCEPTED_FETCH_SITES.has(ctx.get('Sec-Fetch-Site'))) return false;
  const expected = Buffer.from(csrfToken(ctx, binding));
  const actual = Buffer.from(presented);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
