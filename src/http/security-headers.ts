// Browser protections on every response. Pages (helmet): no framing, no MIME sniffing, no
// referrer, and a Content-Security-Policy that allows only our own stylesheet and script file,
// nothing inline. The JSON API (/v2/me, the gateway check) and the OAuth back channel, which
// programs call all the time and which are never rendered as pages, get the short set OWASP
// recommends for REST services instead: the same protections, set at once, without a dozen
// headers meant for HTML.
import type { Context, Next } from 'koa';
import helmet from 'koa-helmet';
import { CHECK_PATH, ME_PATH, OAUTH_ENDPOINTS } from './paths.ts';

const HSTS = 'max-age=31536000; includeSubDomains';

/** JSON for programs, never a page: the API and the OAuth back channel (token, revocation, introspection). */
const isApi = (path: string) => path === ME_PATH || path === CHECK_PATH || path.startsWith(`${CHECK_PATH}/`) || OAUTH_ENDPOINTS.has(path);

/** The JSON API's short set (also sent by the hot-path listener, src/fast/dispatch.ts). */
export function apiSecurityHeaders(https: boolean): Record<string, string> {
  return {
    'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    ...(https ? { 'Strict-Transport-Security': HSTS } : {}),
  };
}

export function securityHeaders({ https }: { https: boolean }) {
  const pages = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        styleSrc: ["'self'"],
        scriptSrc: ["'self'"], // only /assets/copy.js; no inline script anywhere
        imgSrc: ["'self'", 'data:'],
        baseUri: ["'none'"],
        frameAncestors: ["'none'"],
        // No form-action: browsers apply it to the redirect after Allow, which goes to the
        // client's redirect_uri on another origin.
        ...(https ? { upgradeInsecureRequests: [] } : {}),
      },
    },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: https ? { maxAge: 31536000, includeSubDomains: true } : false,
  });
  const api = apiSecurityHeaders(https);
  return function securityHeaders(ctx: Context, next: Next) {
    if (!isApi(ctx.path)) return pages(ctx, next);
    ctx.set(api);
    return next();
  };
}
