// Prometheus metrics (prom-client) at GET /metrics: requests and latency per endpoint, tokens
// issued, authentication failures, rate-limit refusals, and the process's own metrics.
import type { Context, Next } from 'koa';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

// Low-cardinality endpoint names: never a raw path (ids, uids and tokens would explode the series).
const ROUTES: Array<[RegExp, string]> = [
  [/^\/v2\/auth\/oauth2\/token\/?$/, 'token'],
  [/^\/v2\/auth\/oauth2\/revoke\/?$/, 'revocation'],
  [/^\/v2\/auth\/oauth2\/introspect\/?$/, 'introspection'],
  [/^\/(v2\/)?auth\/oauth2\/authorize\/?$/, 'authorization'],
  [/^\/(v2\/)?auth\/oauth2\/authorize\/[^/]+\/?$/, 'authorization_resume'],
  [/^\/auth\/oauth2\/interaction\/[^/]+\/login$/, 'sign_in'],
  [/^\/auth\/oauth2\/interaction\/[^/]+\/(confirm|abort)$/, 'consent'],
  [/^\/auth\/oauth2\/interaction\/[^/]+$/, 'interaction_page'],
  [/\.well-known\//, 'discovery'],
  [/^\/v2\/auth\/oauth2\/jwks$/, 'jwks'],
  [/^\/v2\/auth\/check$/, 'gateway_check'],
  [/^\/v2\/me$/, 'me'],
  [/^\/(health|ready|metrics)$/, 'operations'],
];

export function routeName(path: string): string {
  return ROUTES.find(([re]) => re.test(path))?.[1] ?? 'other';
}

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests by endpoint and status', labelNames: ['route', 'method', 'status'] as const, registers: [registry] });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by endpoint',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const tokensIssued = new Counter({ name: 'oauth_tokens_issued_total', help: 'Token responses by grant type', labelNames: ['grant_type'] as const, registers: [registry] });
  const authFailures = new Counter({
    name: 'oauth_auth_failures_total',
    help: 'Failed authentications: client (secret) or user (password)',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const securityEvents = new Counter({ name: 'oauth_security_events_total', help: 'Code replays, refresh token reuse, rate-limit refusals', labelNames: ['event'] as const, registers: [registry] });

  return {
    registry,
    tokensIssued,
    authFailures,
    securityEvents,
    /** Koa middleware: counts and times every request. */
    async observe(ctx: Context, next: Next) {
      const route = routeName(ctx.path); // before the provider mount rewrites the path
      const end = duration.startTimer({ route });
      try {
        await next();
      } finally {
        end();
        // The provider answers on ctx.res directly (ctx.respond = false): read the real status there.
        const status = ctx.respond === false ? ctx.res.statusCode : ctx.status;
        requests.inc({ route, method: ctx.method, status: String(status) });
        if (status === 429) securityEvents.inc({ event: 'rate_limited' });
      }
    },
    async expose(ctx: Context) {
      ctx.type = registry.contentType;
      ctx.body = await registry.metrics();
    },
  };
}
