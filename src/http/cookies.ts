// Our own cookies: signed, HttpOnly, SameSite=Lax, path /. Where the public address is https they
// are Secure whatever the connection looks like (a TLS-terminating proxy that is not trusted still
// gets Secure cookies) and carry the __Host- prefix, which browsers bind to exactly this host.
import type { Context, Next } from 'koa';

/** Koa middleware: marks this request's cookies Secure when APP_URL is https. */
export function secureCookies(https: boolean) {
  return async function markCookiesSecure(ctx: Context, next: Next) {
    if (https) ctx.cookies.secure = true;
    return next();
  };
}

export function cookieName(ctx: Context, name: string): string {
  return ctx.cookies.secure ? `__Host-${name}` : name;
}

export function cookieOptions(ctx: Context, extra: { expires?: Date } = {}) {
  return { httpOnly: true, sameSite: 'lax' as const, signed: true, overwrite: true, path: '/', secure: ctx.cookies.secure === true, ...extra };
}
