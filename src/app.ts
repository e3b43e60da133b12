// Composes the Koa app: the provider under /v2/auth/oauth2 (and its authorization endpoint on
// APP_URL), the sign-in and consent pages, the resource API and the operational endpoints.
import fs from 'node:fs/promises';
import path from 'node:path';
import Koa, { type Context, type Next } from 'koa';
import type Router from '@koa/router';
import type Provider from 'oidc-provider';
import { pingRedis, type RedisClient } from './storage/redis.ts';
import type { Db } from './storage/db.ts';
import { pingDb } from './storage/db.ts';
import { within } from './storage/unavailable.ts';
import type { Logger } from './log.ts';
import { handleErrors, respondWithError } from './http/error-responses.ts';
import { providerEndpoints } from './oauth/endpoints.ts';
import type { RateLimits } from './oauth/rate-limits.ts';
import { meRoutes } from './api/me.ts';
import { checkRoutes } from './api/check.ts';
import { VIEWS_DIR } from './views.ts';
import { securityHeaders } from './http/security-headers.ts';
import { requestLog } from './http/request-log.ts';
import type { Metrics } from './http/metrics.ts';
import type { ClientArtifacts } from './storage/client-artifacts.ts';
import { mountWebPages } from './web/index.ts';
import { newRouter } from './http/router.ts';
import { secureCookies } from './http/cookies.ts';
import type { PublicUrls } from './http/public-endpoints.ts';
import type { WebhookSigningKey } from './webhooks/signing.ts';
import { webhookPublicKeyRoutes } from './webhooks/public-key.ts';

export interface AppDeps {
  provider: Provider;
  db: Db;
  redis?: RedisClient | undefined;
  log: Logger;
  /** Proxy hops in front of us whose X-Forwarded-* headers are trusted (0: none). */
  proxyHops: number;
  production: boolean;
  rateLimits: RateLimits;
  /** Signing keys of our cookies (and the provider's); the first also keys the CSRF tokens. */
  cookieKeys: string[];
  artifacts: ClientArtifacts;
  metrics: Metrics;
  /** APP_URL is https: HSTS, upgrade-insecure-requests, Secure __Host- cookies. */
  https: boolean;
  /** PLATFORM_NAME, for the consent page. */
  platformName: string;
  /** APP_URL and BASE_URL, for pages that show the endpoints (developer settings). */
  publicUrls: PublicUrls;
  /** The key that signs webhooks to apps; its public half is published (src/webhooks/public-key.ts). */
  webhookKey: WebhookSigningKey;
}


/**
 * In production with no trusted proxy, a request that carries X-Forwarded-Proto came through a
 * proxy we ignore: client addresses (rate limits) and the scheme are then the proxy's. Say so
 * once, naming the setting.
 */
function warnOfUntrustedProxy(log: Logger) {
  let warned = false;
  return async function untrustedProxyWarning(ctx: Context, next: Next) {
    if (!warned && ctx.get('X-Forwarded-Proto')) {
      warned = true;
      log.warn('a request came with X-Forwarded-Proto but no proxy is trusted: set TRUST_PROXY to the number of proxies in front of this server');
    }
    return next();
  };
}


// Longer URLs have no legitimate use here and only cost parsing; headers are capped by Node (16 KiB).
const MAX_URL_LENGTH = 8 * 1024;

// A NUL byte has no legitimate use in any URL here, and PostgreSQL text cannot hold one.
const NUL = /%00|\0/i;

async function limitUrlLength(ctx: Context, next: Next) {
  const tooLong = ctx.url.length > MAX_URL_LENGTH;
  if (!tooLong && !NUL.test(ctx.url)) return next();
  const message = tooLong ? 'the request URL is too long' : 'the request URL contains a NUL byte';
  return respondWithError(ctx, { status: tooLong ? 414 : 400, code: 'invalid_request', message });
}

/** Nothing answered: a 404 in the shape of the route family (JSON on the API, a page elsewhere). */
async function notFound(ctx: Context, next: Next) {
  await next();
  if (ctx.status === 404 && ctx.body === undefined && ctx.respond !== false) {
    await respondWithError(ctx, { status: 404, code: 'not_found', message: `no ${ctx.method} ${ctx.path} here` });
  }
}

// /ready must answer promptly even while a dependency hangs.
const READY_TIMEOUT_MS = 1500;

function operationalRoutes({ db, redis }: AppDeps): Router {
  const router = newRouter();
  router.get('/health', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/ready', async (ctx) => {
    const checks = await Promise.allSettled([within(pingDb(db), READY_TIMEOUT_MS), redis ? within(pingRedis(redis), READY_TIMEOUT_MS) : Promise.resolve()]);
    const [database, cache] = checks.map((c) => (c.status === 'fulfilled' ? 'ok' : 'unavailable'));
    ctx.status = checks.every((c) => c.status === 'fulfilled') ? 200 : 503;
    ctx.body = { status: ctx.status === 200 ? 'ready' : 'unavailable', database, ...(redis ? { redis: cache } : {}) };
  });
  for (const file of ['app.css', 'copy.js']) {
    router.get(`/assets/${file}`, async (ctx) => {
      ctx.type = path.extname(file);
      ctx.set('Cache-Control', 'public, max-age=3600');
      ctx.body = await fs.readFile(path.join(VIEWS_DIR, 'assets', file));
    });
  }
  return router;
}

export function createApp(deps: AppDeps): Koa {
  const { provider, db, log, metrics } = deps;
  // Koa takes the client address from X-Forwarded-For as the nearest trusted proxy saw it: the
  // entry proxyHops from the right. Entries further left are written by the client.
  const app = new Koa({ proxy: deps.proxyHops > 0, maxIpsCount: deps.proxyHops, keys: deps.cookieKeys });

  // Every request, in this order:
  app.use(requestLog(log)); // one log line, with a request id
  app.use(metrics.observe); // counted and timed
  app.use(securityHeaders({ https: deps.https })); // browser protections
  app.use(secureCookies(deps.https)); // Secure __Host- cookies where APP_URL is https
  if (deps.production && deps.proxyHops === 0) app.use(warnOfUntrustedProxy(log));
  app.use(limitUrlLength); // no huge URLs, no NUL bytes
  app.use(notFound); // nothing answered: a 404 in the shape of the route family
  app.use(handleErrors(log)); // every error, in the shape of the route family
  // …then the route family that owns the path (exact spellings only): the API first, it is the
  // hot path; the pages; the OAuth endpoints of the provider.
  for (const router of [checkRoutes(provider), meRoutes(provider, db), operationalRoutes(deps), webhookPublicKeyRoutes(deps.webhookKey)]) app.use(router.routes()).use(router.allowedMethods());
  mountWebPages(app, { db, provider, artifacts: deps.artifacts, limits: deps.rateLimits.signIn, metrics, publicUrls: deps.publicUrls, platformName: deps.platformName, production: deps.production });
  app.use(providerEndpoints(provider, deps.rateLimits.token));
  return app;
}
