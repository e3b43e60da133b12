// CSRF protection of the sign-in and consent forms: a token bound to the interaction (an HMAC of
// its uid under the cookie key), checked on every POST, and no cross-site form posts at all.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';

export function csrfToken(secret: string, interactionUid: string): string {
  return createHmac('sha256', secret).update(`csrf:${interactionUid}`).digest('base64url');
}

/** True when the POST carries this interaction's token and did not come from another site. */
export function csrfValid(ctx: Context, secret: string, interactionUid: string, presented: string): boolean {
  // Fetch metadata (all current browsers): a form posted from another site is refused outright.
  if (ctx.get('Sec-Fetch-Site') === 'cross-site') return false;
  const expected = Buffer.from(csrfToken(secret, interactionUid));
  const actual = Buffer.from(presented);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
