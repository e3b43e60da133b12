// Runs the provider (itself a Koa app) for the requests of its routes under a path prefix.
// One spelling per path, as for every router of the app (src/http/router.ts): the provider's own
// router folds case and decodes, so only the exact canonical paths are handed to it; any other
// spelling under the prefix falls through to a 404.
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import { withBodyToRead } from '../seams/oidc-provider.ts';

export function mountProvider(provider: Provider, prefix: string, routes: RegExp, accepts: (ctx: Context) => boolean = () => true) {
  const handle = provider.callback();
  return async function providerMount(ctx: Context, next: Next) {
    if (!ctx.path.startsWith(`${prefix}/`) || !routes.test(ctx.path.slice(prefix.length)) || !accepts(ctx)) return next();
    // The provider sees the request as our app judged it (src/app.ts: trusted proxy hops, https
    // APP_URL): it trusts these headers (provider.proxy) and nothing a client sent in them.
    const { headers } = ctx.req;
    headers['x-forwarded-proto'] = ctx.cookies.secure ? 'https' : ctx.protocol;
    headers['x-forwarded-host'] = ctx.host;
    headers['x-forwarded-for'] = ctx.ip;
    // The provider derives its mount path from originalUrl minus url (see OIDCContext.urlFor).
    const req = ctx.req as typeof ctx.req & { originalUrl?: string };
    req.originalUrl = ctx.req.url;
    // From the parsed path, not the raw URL: an absolute-form request target (RFC 9112 3.2.2)
    // names the same resource.
    ctx.req.url = ctx.path.slice(prefix.length) + ctx.search;
    ctx.respond = false;
    // A body our app already read (request-shims.ts) is handed over as a stream to read again.
    await handle(withBodyToRead(ctx.req), ctx.res);
  };
}
