// Composes the Koa app: the provider under /v2/auth/oauth2 (and its authorization endpoint on
// APP_URL), the sign-in and consent pages, the resource API and the operational endpoints.
import fs from 'node:fs/promises';
import path from 'node:path';
import Koa, { type Context, type Next } from 'koa';
import Router from '@koa/router';
import type Provider from 'oidc-provider';
import { pingRedis, type RedisClient } from './storage/redis.ts';
import type { Db } from './storage/db.ts';
import { pingDb } from './storage/db.ts';
import { isStorageUnavailable, within } from './storage/unavailable.ts';
import type { Logger } from './log.ts';
import { APP_AUTHORIZE_PATH, PROVIDER_PATH } from './oauth/provider.ts';
import { mountProvider } from './oauth/mount.ts';
import { normaliseScopeParam, readTokenRequestBody } from './oauth/request-shims.ts';
import type { RateLimits } from './oauth/rate-limits.ts';
import { interactionRoutes } from './oauth/interactions.ts';
import { meRoutes } from './api/me.ts';
import { checkRoutes } from './api/check.ts';
import { sendError } from './api/responses.ts';
import { renderPage, VIEWS_DIR } from './views.ts';
import { securityHeaders } from './http/security-headers.ts';
import { requestLog } from './http/request-log.ts';
import type { Metrics } from './http/metrics.ts';
import type { ClientArtifacts } from './storage/client-artifacts.ts';
import { mountWebPages } from './web/index.ts';

export interface AppDeps {
  provider: Provider;
  db: Db;
  redis?: RedisClient | undefined;
  log: Logger;
  trustProxy: boolean;
  rateLimits: RateLimits;
  /** Signing keys of our cookies; the first also keys the sign-in and consent CSRF tokens. */
  cookieKeys: string[];
  artifacts: ClientArtifacts;
  metrics: Metrics;
  /** APP_URL is https: HSTS and upgrade-insecure-requests. */
  https: boolean;
}

const TOKEN_ENDPOINTS = new Set(['/token', '/revoke', '/introspect'].map((p) => `${PROVIDER_PATH}${p}`));
const AUTHORIZE_PATHS = new Set([`${PROVIDER_PATH}/authorize`, APP_AUTHORIZE_PATH]);
const RFC8414_PATH = `/.well-known/oauth-authorization-server${PROVIDER_PATH}`;

function onlyFor(paths: (ctx: Context) => boolean, middleware: (ctx: Context, next: Next) => Promise<unknown>) {
  return (ctx: Context, next: Next) => (paths(ctx) ? middleware(ctx, next) : next());
}

// Longer URLs have no legitimate use here and only cost parsing; headers are capped by Node (16 KiB).
const MAX_URL_LENGTH = 8 * 1024;

// A NUL byte has no legitimate use in any URL here, and PostgreSQL text cannot hold one.
const NUL = /%00|\0/i;

async function limitUrlLength(ctx: Context, next: Next) {
  const tooLong = ctx.url.length > MAX_URL_LENGTH;
  if (!tooLong && !NUL.test(ctx.url)) return next();
  ctx.status = tooLong ? 414 : 400;
  const message = tooLong ? 'the request URL is too long' : 'the request URL contains a NUL byte';
  ctx.body = ctx.path.startsWith('/v2/') ? { status: 'error', error: { code: 'invalid_request', message } } : `Bad request: ${message}.`;
}

/** A JSON 404 on the API; Koa's plain one elsewhere. */
async function notFound(ctx: Context, next: Next) {
  await next();
  if (ctx.status === 404 && ctx.body === undefined && ctx.respond !== false && ctx.path.startsWith('/v2/')) {
    sendError(ctx, 404, 'not_found', `no ${ctx.method} ${ctx.path} here`);
  }
}

/**
 * Errors from our routes: RFC 6749 JSON on the token endpoints, CONTRACT 3.2 JSON on the API, a
 * page elsewhere. Storage outages are 503 with Retry-After. Never a stack trace to the client.
 */
function errorPages(log: Logger) {
  return async function handleErrors(ctx: Context, next: Next) {
    try {
      await next();
    } catch (caught) {
      const err = caught as { status?: number; statusCode?: number; error?: string; error_description?: string; message?: string };
      const unavailable = isStorageUnavailable(caught);
      const status = unavailable ? 503 : (err.statusCode ?? err.status ?? 500);
      if (status >= 500) log.error({ err: caught, path: ctx.path }, unavailable ? 'storage unavailable' : 'request failed');
      if (unavailable) ctx.set('Retry-After', '5');
      const code = unavailable ? 'temporarily_unavailable' : (err.error ?? (status >= 500 ? 'server_error' : 'invalid_request'));
      const message = unavailable
        ? 'The service is briefly unavailable. Please try again in a few seconds.'
        : status >= 500
          ? 'Something went wrong on our side. Please try again.'
          : (err.error_description ?? err.message ?? code);
      ctx.status = status;
      if (TOKEN_ENDPOINTS.has(ctx.path)) {
        ctx.body = { error: code, error_description: message };
      } else if (ctx.path.startsWith('/v2/')) {
        sendError(ctx, status, code, message);
      } else {
        ctx.type = 'html';
        ctx.body = await renderPage('error', {
          user: ctx.state.user,
          title: err.error === 'session_not_found' ? 'This sign-in link has expired' : 'This request cannot be completed',
          error: code,
          description: err.error === 'session_not_found' ? 'Please start again from the application.' : message,
        });
      }
    }
  };
}

// /ready must answer promptly even while a dependency hangs.
const READY_TIMEOUT_MS = 1500;

function operationalRoutes({ db, redis, metrics }: AppDeps): Router {
  const router = new Router();
  router.get('/metrics', metrics.expose);
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
  const { provider, db, log } = deps;
  const app = new Koa({ proxy: deps.trustProxy, keys: deps.cookieKeys });
  const routers = [
    operationalRoutes(deps),
    interactionRoutes({ provider, db, limits: deps.rateLimits.signIn, csrfSecret: deps.cookieKeys[0]!, metrics: deps.metrics }),
    meRoutes(provider, db),
    checkRoutes(provider),
  ];

  app.use(requestLog(log));
  app.use(deps.metrics.observe);
  app.use(securityHeaders({ https: deps.https }));
  app.use(limitUrlLength);
  app.use(notFound);
  app.use(errorPages(log));
  for (const router of routers) app.use(router.routes()).use(router.allowedMethods());
  mountWebPages(app, { db, provider, artifacts: deps.artifacts, limits: deps.rateLimits.signIn, metrics: deps.metrics });

  // RFC 8414 puts the metadata of an issuer with a path at /.well-known/…/<path>.
  app.use(
    onlyFor(
      (ctx) => ctx.path === RFC8414_PATH && ctx.method === 'GET',
      async (ctx, next) => {
        ctx.path = `${PROVIDER_PATH}/.well-known/oauth-authorization-server`;
        return next();
      },
    ),
  );
  app.use(onlyFor((ctx) => TOKEN_ENDPOINTS.has(ctx.path), readTokenRequestBody));
  app.use(onlyFor((ctx) => TOKEN_ENDPOINTS.has(ctx.path) && ctx.method === 'POST', deps.rateLimits.tokenEndpoint));
  app.use(onlyFor((ctx) => AUTHORIZE_PATHS.has(ctx.path), normaliseScopeParam));
  app.use(mountProvider(provider, PROVIDER_PATH));
  // The spec's authorization endpoint on APP_URL: the same provider, only its authorization
  // request and the resume step after sign-in and consent.
  const appAuthorize = APP_AUTHORIZE_PATH.slice(0, -'/authorize'.length);
  app.use(mountProvider(provider, appAuthorize, (ctx) => ctx.method === 'GET' && /^\/authorize(\/[^/]+)?$/.test(ctx.path.slice(appAuthorize.length))));

  return app;
}
