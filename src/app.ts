// Composes the Koa app: the provider under /v2/auth/oauth2 (and its authorization endpoint on
// APP_URL), the sign-in and consent pages, the resource API and the operational endpoints.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RequestListener } from 'node:http';
import Koa, { type Context, type Next } from 'koa';
import type Router from '@koa/router';
import type Provider from 'oidc-provider';
import { pingRedis, type RedisClient } from './storage/redis.ts';
import type { Db } from './storage/db.ts';
import { pingDb } from './storage/db.ts';
import { within } from './storage/unavailable.ts';
import type { Logger } from './log.ts';
import { providerEndpoints, tokenEndpoints } from './oauth/endpoints.ts';
import type { RateLimits } from './oauth/rate-limits.ts';
import type { SignInLimits } from './web/sign-in-limits.ts';
import { hotPathListener } from './fast/dispatch.ts';
import { keepConnectionsWhole } from './http/unread-bodies.ts';
import type { ClientSecrets } from './oauth/client-secrets.ts';
import type { WebhookOutbox } from './webhooks/outbox.ts';
import type { AnswerBackChannel } from './fast/back-channel.ts';
import { OAUTH_ENDPOINTS } from './http/paths.ts';
import { VIEWS_DIR } from './views.ts';
import { resourceMetadataRoutes } from './api/resource-metadata.ts';

/** The ALTCHA widget's files (its `external` build: no inline styles or blob: workers, for our CSP). */
const ALTCHA_DIST = path.join(path.dirname(fileURLToPath(import.meta.resolve('altcha/external'))), '..');
import type { Metrics } from './http/metrics.ts';
import type { ArtifactStorage } from './storage/artifacts.ts';
import { mountWebPages } from './web/index.ts';
import { newRouter } from './http/router.ts';
import { secureCookies } from './http/cookies.ts';
import { urlProblem } from './http/url-limits.ts';
import type { RecordCache } from './storage/record-cache.ts';
import type { TokenCache } from './storage/token-cache.ts';
import type { PublicUrls } from './http/public-endpoints.ts';
import { respondWithError, type Envelope } from './http/envelope.ts';
import { meRoutes } from './api/me.ts';
import { checkRoutes } from './api/check.ts';
import type { ResourceApi } from './api/resource-api.ts';
import type { WebhookPageDeps } from './web/developer.ts';
import type { PasswordHashing } from './accounts/password.ts';
import type { UpstreamClient } from './accounts/upstream.ts';
import type { GrantBindings } from './orgs/bindings.ts';
import { VERSION } from './version.ts';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { leakReportRoutes } from './leak-reports/revoke-endpoint.ts';

export interface AppDeps {
  provider: Provider;
  db: Db;
  redis?: RedisClient | undefined;
  log: Logger;
  /** Proxy hops in front of us whose X-Forwarded-* headers are trusted (0: none). */
  proxyHops: number;
  /** The level of the one line per request (config.requestLogLevel); info when absent. */
  requestLogLevel?: 'info' | 'debug';
  rateLimits: RateLimits;
  signInLimits: SignInLimits;
  /** Signing keys of our cookies (and the provider's); the first also keys the CSRF tokens. */
  cookieKeys: string[];
  artifacts: ArtifactStorage;
  /** The client secret check (src/oauth/client-secrets.ts), as the provider's. */
  secrets: ClientSecrets;
  /** Where client changes write their webhook events (src/webhooks/outbox.ts). */
  outbox: WebhookOutbox;
  /** Password hashing at the configured cost (src/accounts/password.ts). */
  passwords: PasswordHashing;
  /** Grants bound to an organization and teams (src/orgs/bindings.ts): consent binds the grants it makes in one. */
  bindings: GrantBindings;
  metrics: Metrics;
  /** What every request of both transports gets (src/http/envelope.ts), made once so that they do it alike. */
  envelope: Envelope;
  /** The gateway check and /v2/me over one token verifier (src/api/resource-api.ts). */
  api: ResourceApi;
  /** The back channel's plain cases the fast path answers, by path (src/fast/plain-cases.ts); undefined while the fast path is off. */
  backChannelHotPaths: Map<string, AnswerBackChannel> | undefined;
  /** APP_URL is https: HSTS, upgrade-insecure-requests, Secure __Host- cookies. */
  https: boolean;
  /** PLATFORM_NAME, for the consent page. */
  platformName: string;
  /** CIMD_MAX_USERS (src/cimd/tier.ts). */
  cimdMaxUsers: number;
  /** CIMD_ALLOW_LOOPBACK, for a client's jwks_uri (src/clients/keys.ts). */
  jwksUriAllowLoopback: boolean;
  /** DYNAMIC_REGISTRATION=open: the registration endpoint is served (src/registration/registration.ts). */
  dynamicRegistration: boolean;
  /** APP_URL and BASE_URL, for pages that show the endpoints (developer settings). */
  publicUrls: PublicUrls;
  /** What the developer page's webhook section needs: the address rule and the cipher of stored secrets. */
  webhooks: WebhookPageDeps;
  /** Access tokens in memory while revocations are heard (src/storage/token-cache.ts): /ready reports them. */
  tokenCache?: TokenCache | undefined;
  /** Client and user records, in memory while their changes are heard (src/storage/record-cache.ts). */
  records: RecordCache;
  /** Reports of leaked credentials per address (src/leak-reports/revoke-endpoint.ts); none with RATE_LIMITS=off. */
  leakReportLimiter?: RateLimiterAbstract | undefined;
  /** The upstream OpenID provider people sign in with, if any (src/accounts/upstream.ts). */
  upstream: UpstreamClient | undefined;
  /** LOCAL_PASSWORDS. */
  localPasswords: boolean;
}


async function limitUrlLength(ctx: Context, next: Next) {
  const problem = urlProblem(ctx.url);
  if (!problem) return next();
  return respondWithError(ctx, { ...problem, code: 'invalid_request' });
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

const memoryState = (serving: boolean) => (serving ? 'serving' : 'bypassed');

function operationalRoutes({ db, redis, records, tokenCache }: AppDeps): Router {
  const router = newRouter();
  router.get('/health', (ctx) => {
    ctx.body = { status: 'ok', version: VERSION };
  });
  router.get('/ready', async (ctx) => {
    const checks = await Promise.allSettled([within(pingDb(db), READY_TIMEOUT_MS), redis ? within(pingRedis(redis), READY_TIMEOUT_MS) : Promise.resolve()]);
    const [database, cache] = checks.map((c) => (c.status === 'fulfilled' ? 'ok' : 'unavailable'));
    ctx.status = checks.every((c) => c.status === 'fulfilled') ? 200 : 503;
    // The memory caches: 'bypassed' while their change channel is lost or silent (every read then
    // goes to the store: slower, never stale). Not a reason to take the instance out.
    const memory = { records: memoryState(records.live), ...(tokenCache ? { tokens: memoryState(tokenCache.serving) } : {}) };
    ctx.body = { status: ctx.status === 200 ? 'ready' : 'unavailable', database, ...(redis ? { redis: cache } : {}), memory };
  });
  const assets: Array<[string, string]> = [
    ...['app.css', 'copy.js', 'demo-countdown.js', 'sign-in-check.js'].map((file): [string, string] => [file, path.join(VIEWS_DIR, 'assets', file)]),
    // The sign-in check (ALTCHA), served from here: no third party, and its CSP-strict build.
    ['altcha.js', path.join(ALTCHA_DIST, 'external', 'altcha.min.js')],
    ['altcha-pbkdf2.js', path.join(ALTCHA_DIST, 'workers', 'pbkdf2.js')],
  ];
  for (const [file, source] of assets) {
    router.get(`/assets/${file}`, async (ctx) => {
      ctx.type = path.extname(file);
      ctx.set('Cache-Control', 'public, max-age=3600');
      ctx.body = await fs.readFile(source);
    });
  }
  return router;
}

/**
 * The server's request listener: the API's hot paths first (src/fast/dispatch.ts), then the app.
 * Every request to the token, revocation and introspection endpoints takes one way: the hot path's
 * plain case when it answers, else the back channel's app — also when the main app receives one
 * (another form of the request target, such as absolute-form).
 */
export function createListener(deps: AppDeps): RequestListener {
  const { api, envelope: wrap, backChannelHotPaths } = deps;
  const backChannel = createBackChannelApp(deps, wrap).callback();
  const app = createApp(deps, api, wrap, backChannel);
  // Off: the app answers everything, the back channel through the provider.
  if (!backChannelHotPaths) return keepConnectionsWhole(app.callback());
  const hotPaths = hotPathListener({ ...api, answerBackChannel: backChannel, backChannelHotPaths, envelope: wrap, log: deps.log, metrics: deps.metrics, proxyHops: deps.proxyHops }, app.callback());
  return keepConnectionsWhole(hotPaths);
}

/** A Koa app; `first`, then the steps every request takes, in this order, before its route's. */
function appWithCommonSteps(deps: AppDeps, wrap: Envelope, first?: Koa.Middleware): Koa {
  // Koa takes the client address from X-Forwarded-For as the nearest trusted proxy saw it: the
  // entry proxyHops from the right. Entries further left are written by the client.
  const app = new Koa({ proxy: deps.proxyHops > 0, maxIpsCount: deps.proxyHops, keys: deps.cookieKeys });
  if (first) app.use(first);
  app.use(wrap.koa); // request id, security headers, errors in the route family's shape; counted, timed, logged
  app.use(platformNamed(deps.platformName)); // the brand line of every page, error pages included
  app.use(secureCookies(deps.https)); // Secure __Host- cookies where APP_URL is https
  app.use(limitUrlLength); // no huge URLs, no NUL bytes
  app.use(notFound); // nothing answered: a 404 in the shape of the route family
  return app;
}

/** The platform's name for the pages' layout (views/partials/top.ejs): the brand line of every page. */
function platformNamed(platformName: string): Koa.Middleware {
  return async function platformNameForPages(ctx, next) {
    ctx.state.platformName = platformName;
    return next();
  };
}

/** A token request that reached the main app (not as spelled, say) goes the one way all do: the back channel. */
function toTheBackChannel(backChannel: RequestListener) {
  return async function tokenRequestsToTheBackChannel(ctx: Context, next: Next) {
    if (!OAUTH_ENDPOINTS.has(ctx.path)) return next();
    ctx.respond = false;
    await backChannel(ctx.req, ctx.res);
  };
}

function createApp(deps: AppDeps, api: ResourceApi, wrap: Envelope, backChannel: RequestListener): Koa {
  const { provider, db, metrics } = deps;
  // A token request goes to the back channel's app before any step here: that app takes them.
  const app = appWithCommonSteps(deps, wrap, toTheBackChannel(backChannel));
  // …then the route family that owns the path (exact spellings only): the API first, it is the
  // hot path; the pages; the provider's endpoints for people and metadata.
  const leakReports = leakReportRoutes({ provider, db, outbox: deps.outbox, records: deps.records, artifacts: deps.artifacts }, deps.leakReportLimiter);
  const metadata = resourceMetadataRoutes(deps.publicUrls.baseUrl, provider.issuer);
  for (const router of [checkRoutes(api.answerCheck), meRoutes(api.verify, deps, api.resourceMetadata), metadata, leakReports, operationalRoutes(deps)]) app.use(router.routes()).use(router.allowedMethods());
  mountWebPages(app, { db, records: deps.records, passwords: deps.passwords, provider, artifacts: deps.artifacts, outbox: deps.outbox, limits: deps.signInLimits, tokenLimits: deps.rateLimits.token, metrics, publicUrls: deps.publicUrls, platformName: deps.platformName, webhooks: deps.webhooks, bindings: deps.bindings, cimdMaxUsers: deps.cimdMaxUsers, jwksUriAllowLoopback: deps.jwksUriAllowLoopback, upstream: deps.upstream, localPasswords: deps.localPasswords });
  app.use(providerEndpoints(provider, { registration: deps.dynamicRegistration }));
  return app;
}

/**
 * The OAuth back channel — every request to the token, revocation and introspection endpoints
 * that no hot path answers (POSTs from apps and gateways all the time) — with the same steps, but
 * without walking the API's and the pages' routers first.
 */
function createBackChannelApp(deps: AppDeps, wrap: Envelope): Koa {
  const app = appWithCommonSteps(deps, wrap);
  app.use(tokenEndpoints(deps.provider, deps.rateLimits.token));
  return app;
}
