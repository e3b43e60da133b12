// Runs the provider (itself a Koa app) for requests under a path prefix.
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';

export function mountProvider(provider: Provider, prefix: string, accepts: (ctx: Context) => boolean = () => true) {
  const handle = provider.callback();
  return async function providerMount(ctx: Context, next: Next) {
    const inside = ctx.path === prefix || ctx.path.startsWith(`${prefix}/`);
    if (!inside || !accepts(ctx)) return next();
    // The provider derives its mount path from originalUrl minus url (see OIDCContext.urlFor).
    const req = ctx.req as typeof ctx.req & { originalUrl?: string };
    req.originalUrl = ctx.req.url;
    ctx.req.url = ctx.req.url!.slice(prefix.length) || '/';
    ctx.respond = false;
    await handle(ctx.req, ctx.res);
  };
}
