// Browser protections on every response (helmet): no framing, no MIME sniffing, no referrer, and a
// Content-Security-Policy that allows only our own stylesheet and script file, nothing inline.
import helmet from 'koa-helmet';

export function securityHeaders({ https }: { https: boolean }) {
  return helmet({
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
}
