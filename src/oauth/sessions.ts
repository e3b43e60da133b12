// The provider's authorization session (its `_session` cookie and Session record): ended when the
// user signs out of the pages and when they switch accounts, so that the next person at the
// browser never gets a code for the previous user's account.
import type { Context } from 'koa';
import type Provider from 'oidc-provider';

export async function endAuthorizationSession(ctx: Context, provider: Provider): Promise<void> {
  const name = provider.cookieName('session');
  // The provider signs its cookies with the same keys as ours (config.cookieKeys).
  const id = ctx.cookies.get(name, { signed: true });
  if (id) await (await provider.Session.find(id))?.destroy();
  ctx.cookies.set(name, null, { signed: true, path: '/', httpOnly: true, sameSite: 'lax', secure: ctx.cookies.secure === true, overwrite: true });
}
