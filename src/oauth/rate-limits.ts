// Abuse limits of the token endpoints, where client secrets are guessed (the sign-in forms have
// their own: src/web/sign-in-limits.ts, on the same counters of src/limits/limiter.ts). Counters live in Redis when
// configured, so every instance sees the same ones; otherwise in this process.
//
// The rule: limits stop attackers and never legitimate users. Client secrets are 256-bit random
// values, so guessing is hopeless, and a lockout that also refused the right secret would only
// hand an attacker a switch that turns integrations off. So:
// - a request whose client authenticates is never refused because of failures — anyone's, from
//   any address — only when that client's own authenticated volume is over its budget, which is
//   decided before the provider runs (clientBudget): an answer the provider produced for an
//   authenticated client, or any answer it fulfilled, stands;
// - requests that do not authenticate are counted per (named client id, address) and per
//   address; over the limit they are answered 429 with a growing Retry-After instead of their
//   refusal (nothing was done for them).
// "Authenticated" is the verifier's word, whatever the method: a client secret compared
// (compareClientSecret), a client assertion's signature checked (assertJwtClientAuthClaimsAndHeader,
// both in provider.ts), or, for a public client, the provider fulfilling its request (PKCE at the
// code exchange, its refresh token at a refresh).
import { createHash } from 'node:crypto';
import { namedClientId } from './named-client.ts';
import { isWellFormedClientId } from '../clients/secrets.ts';
import type { Context, Next } from 'koa';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import type { RedisClient } from '../storage/redis.ts';
import { consume, limiterFactory, pointsCounter, type Counted } from '../limits/limiter.ts';
import type { RateLimitConfig } from '../config.ts';
import { oauthErrorAnswer, reply } from '../http/envelope.ts';
import { addressGroup } from '../http/client-address.ts';
import { factsWithId, type ProviderClient } from '../directory/facts.ts';

const UNLIMITED = Number.MAX_SAFE_INTEGER;
/** On a request counted against its client's budget already. */
const COUNTED = Symbol('counted against the client budget');

/** 1, 2, 4 … seconds for each attempt past the free ones, up to the maximum. */
const growingDelay = (over: number, max: number) => (over > 0 ? Math.min(2 ** (over - 1), max) : 0);

/** A client's budget after a request it spent: what the RateLimit headers tell the app. */
export interface BudgetState {
  /** Requests a minute. */
  limit: number;
  remaining: number;
  /** Seconds until the window ends. */
  resetSeconds: number;
}

const WINDOW_SECONDS = 60;
// The limiters' key prefixes: a client's budget (one limiter per budget value), a (client, user) pair's refreshes.
const budgetPrefix = (points: number) => `client-budget-${points}`;
const REFRESH_USER = 'refresh-user';

/**
 * The IETF fields (draft-ietf-httpapi-ratelimit-headers): the client's policy and what is left
 * of it, `RateLimit-Policy: "client";q=6000;w=60` and `RateLimit: "client";r=5990;t=42`.
 */
export function rateLimitHeaders(state: BudgetState): Record<string, string> {
  return { 'RateLimit-Policy': `"client";q=${state.limit};w=${WINDOW_SECONDS}`, RateLimit: `"client";r=${state.remaining};t=${state.resetSeconds}` };
}

function tooManyTokenRequests(ctx: Context | KoaContextWithOIDC, retryAfter: number, budget?: BudgetState): void {
  // No challenge: the request is refused for its pace, not its credentials.
  ctx.remove('WWW-Authenticate');
  // `slow_down` is the registered token endpoint error for "too fast" (RFC 8628 3.5).
  const headers = { 'Retry-After': String(retryAfter), ...(budget ? rateLimitHeaders(budget) : {}) };
  reply(ctx as Context, oauthErrorAnswer(429, 'slow_down', `too many requests; retry after ${retryAfter} seconds`, headers));
}

/**
 * A client id as a counter's key: an id of the registry's form as it is, any other (a metadata
 * document's URL of up to 2000 characters, an open registration's id, a made-up one) digested
 * to a fixed size, so that each id has a count of its own and no claim sizes our keys.
 */
export const counterKey = (clientId: string): string => (isWellFormedClientId(clientId) ? clientId : `~${createHash('sha256').update(clientId).digest('base64url')}`);

/**
 * The provider's routes that are limited, as the provider sees its own paths: every one that
 * authenticates clients (the pushed authorization request endpoint too, RFC 9126 2.1).
 */
const LIMITED_PROVIDER_PATHS = new Set(['/token', '/revoke', '/introspect', '/par']);

export type ClientWithBudget = Pick<ProviderClient, 'clientAuthMethod' | 'token_requests_per_minute'> & { clientId: string };

export interface TokenEndpointLimits {
  /**
   * Said by the verifiers of client credentials (src/oauth/provider.ts) when a request of the
   * provider (its context) presented an active secret of its client, or a client assertion whose
   * signature its client's keys verify: such requests spend the budget and are never held back.
   */
  authenticated(ctx: object): void;
  /** Seconds the client a request claims must wait, being over its own budget (0: go ahead). */
  heldBack(claimedClientId: string | undefined, ip: string): number;
  /**
   * Counts a request whose client authenticated against that client's budget, once: the request
   * (its IncomingMessage) is not counted again when a hot path hands it to the provider. The
   * budget as it stands after it (the same again for a request counted already); undefined
   * when limits are off.
   */
  spend(client: ClientWithBudget, ip: string, request: object): Promise<BudgetState | undefined>;
  /**
   * Seconds one client's refreshes for one user must wait, that pair being over its budget
   * (RATE_LIMIT_REFRESH_PER_MINUTE_PER_USER); 0: go ahead. Read from memory: the fast refresh
   * asks once it has read the token, the provider when it looks the account up (provider.ts).
   */
  refreshHeldBack(clientId: string, accountId: string): number;
  /** Counts an answered refresh against its (client, user) budget; send it with the rotation. */
  spendRefresh(clientId: string, accountId: string): Promise<void>;
  /**
   * spend and spendRefresh of one refresh at once, in one store command where the store allows it
   * (the fast refresh sends it with the rotation): the client's budget as spend answers it.
   */
  spendWithRefresh(client: ClientWithBudget, ip: string, request: object, accountId: string): Promise<BudgetState | undefined>;
  /** A confidential client's use of its budget in the current minute, read without spending (the developer page); undefined when limits are off. */
  budgetUse(client: { clientId: string; tokenRequestsPerMinute: number | null }): Promise<BudgetState | undefined>;
  /** In our app, before the provider: a client over its own authenticated budget waits. */
  clientBudget(ctx: Context, next: Next): Promise<void>;
  /** Inside the provider (provider.use): counts what authenticated, throttles what did not. */
  clientAuthentication(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void>;
}

export interface RateLimits {
  token: TokenEndpointLimits;
}

const NO_LIMITS: RateLimits = {
  token: {
    authenticated: () => {},
    heldBack: () => 0,
    spend: async () => undefined,
    refreshHeldBack: () => 0,
    spendRefresh: async () => {},
    spendWithRefresh: async () => undefined,
    budgetUse: async () => undefined,
    clientBudget: (_ctx, next) => next(),
    clientAuthentication: (_ctx, next) => next(),
  },
};

export function createRateLimits(config: RateLimitConfig, redis?: RedisClient, prefix = 'oauth:'): RateLimits {
  if (!config.enabled) return NO_LIMITS;
  return { token: tokenEndpointLimits(config, limiterFactory(redis, prefix), pointsCounter(redis, prefix)) };
}

function tokenEndpointLimits(config: RateLimitConfig, limiter: ReturnType<typeof limiterFactory>, countAtOnce?: ReturnType<typeof pointsCounter>): TokenEndpointLimits {
  const window = { points: UNLIMITED, duration: config.authWindowSeconds };
  const failuresPerClientIp = limiter({ keyPrefix: 'authfail-client-ip', ...window });
  const failuresPerIp = limiter({ keyPrefix: 'authfail-ip', ...window });
  // One limiter per budget value (an operator can set a client's own): a key counts a minute.
  const budgets = new Map<number, RateLimiterAbstract>();
  const refreshesPerUser = limiter({ keyPrefix: REFRESH_USER, points: config.refreshPerMinutePerUser, duration: WINDOW_SECONDS });
  const budgetLimiter = (points: number) => {
    if (!budgets.has(points)) budgets.set(points, limiter({ keyPrefix: budgetPrefix(points), points, duration: WINDOW_SECONDS }));
    return budgets.get(points)!;
  };

  // A client found over its budget waits here until its minute ends, without a store round trip
  // per request. Each instance learns it from its own count of the shared counter, so a client
  // may overshoot its budget by at most one request per instance.
  const overBudgetUntil = new Map<string, { until: number; limit: number }>();
  const budgetKey = (client: ClientWithBudget, ip: string) =>
    // A public client has no secret: anyone can speak for it, so its budget is per address.
    client.clientAuthMethod === 'none' ? `${counterKey(client.clientId)}|${addressGroup(ip)}` : counterKey(client.clientId);
  /** The budget of a key held back here, as the 429 tells it; undefined when it may go ahead. */
  function heldBudget(key: string): BudgetState | undefined {
    const held = overBudgetUntil.get(key);
    if (held === undefined) return undefined;
    if (held.until > Date.now()) return { limit: held.limit, remaining: 0, resetSeconds: Math.ceil((held.until - Date.now()) / 1000) };
    overBudgetUntil.delete(key);
    return undefined;
  }

  /** The budget after a point counted on `key`; a key at its limit is held back here until its window ends. */
  function budgetAfter(key: string, points: number, { consumed, msLeft }: Counted): BudgetState {
    if (consumed >= points) overBudgetUntil.set(key, { until: Date.now() + msLeft, limit: points });
    return { limit: points, remaining: Math.max(0, points - consumed), resetSeconds: Math.ceil(msLeft / 1000) };
  }
  const counted = (res: RateLimiterRes): Counted => ({ consumed: res.consumedPoints, msLeft: res.msBeforeNext });
  const pointsOf = (client: ClientWithBudget) => client.token_requests_per_minute ?? config.tokenPerMinutePerClient;

  // Marked on the request itself: the provider sees it through a proxy (src/oauth/mount.ts).
  type Marked = { [COUNTED]?: Promise<BudgetState> };
  // A count kept on the request may never be awaited (a request handed over, or ended, first):
  // its failure (Redis gone at shutdown) is told to whoever awaits it, and is no unhandled rejection.
  const kept = (count: Promise<BudgetState>): Promise<BudgetState> => (count.catch(() => {}), count);
  async function spendBudget(client: ClientWithBudget, ip: string, request: object): Promise<BudgetState> {
    return ((request as Marked)[COUNTED] ??= kept((async () => {
      const points = pointsOf(client);
      const key = budgetKey(client, ip);
      return budgetAfter(key, points, counted(await consume(budgetLimiter(points), key)));
    })()));
  }

  /**
   * Seconds to hold back a request that did not authenticate, or 0 while under the limit. Each id
   * a request names has a count of its own (counterKey), whether or not it names a client: one
   * caller's failures never hold back another client's. A new made-up id per request escapes
   * nothing: every failure from the address counts against the address too.
   */
  async function failedAuthentication(named: string | undefined, ip: string): Promise<number> {
    const [perClient, perIp] = await Promise.all([consume(failuresPerClientIp, `${named === undefined ? '-' : counterKey(named)}|${addressGroup(ip)}`), consume(failuresPerIp, addressGroup(ip))]);
    const over = Math.max(perClient.consumedPoints - config.authFailures, perIp.consumedPoints - config.authFailuresPerIp);
    return growingDelay(over, config.authMaxDelaySeconds);
  }

  const userKey = (clientId: string, accountId: string) => `${counterKey(clientId)}|user:${accountId}`;
  async function spendRefresh(clientId: string, accountId: string): Promise<void> {
    const key = userKey(clientId, accountId);
    budgetAfter(key, config.refreshPerMinutePerUser, counted(await consume(refreshesPerUser, key)));
  }

  /** Both counts of a refresh, in one command when the store allows (pointsCounter): the same keys, the same points. */
  function spendWithRefresh(client: ClientWithBudget, ip: string, request: object, accountId: string): Promise<BudgetState> {
    const marked = request as Marked;
    if (!countAtOnce || marked[COUNTED]) {
      void spendRefresh(client.clientId, accountId).catch(() => {});
      return spendBudget(client, ip, request);
    }
    const points = pointsOf(client);
    const key = budgetKey(client, ip);
    const user = userKey(client.clientId, accountId);
    const both = countAtOnce([
      { keyPrefix: budgetPrefix(points), key, seconds: WINDOW_SECONDS },
      { keyPrefix: REFRESH_USER, key: user, seconds: WINDOW_SECONDS },
    ]);
    return (marked[COUNTED] = kept(both.then(([budget, refreshes]) => {
      budgetAfter(user, config.refreshPerMinutePerUser, refreshes!);
      return budgetAfter(key, points, budget!);
    })));
  }

  /** The budget that holds back what this client (claimed) sends from this address, if one does. */
  const heldBy = (claimed: string | undefined, ip: string) => (claimed ? (heldBudget(counterKey(claimed)) ?? heldBudget(`${counterKey(claimed)}|${addressGroup(ip)}`)) : undefined);
  const heldBack = (claimed: string | undefined, ip: string) => heldBy(claimed, ip)?.resetSeconds ?? 0;
  // The provider's requests whose client credentials a verifier accepted (see clientAuthentication).
  const authenticated = new WeakSet<object>();

  return {
    authenticated: (ctx) => void authenticated.add(ctx),
    heldBack,
    spend: spendBudget,
    refreshHeldBack: (clientId, accountId) => heldBudget(userKey(clientId, accountId))?.resetSeconds ?? 0,
    async budgetUse({ clientId, tokenRequestsPerMinute }) {
      const points = tokenRequestsPerMinute ?? config.tokenPerMinutePerClient;
      const res = await budgetLimiter(points).get(counterKey(clientId));
      if (!res) return { limit: points, remaining: points, resetSeconds: WINDOW_SECONDS };
      return { limit: points, remaining: Math.max(0, points - res.consumedPoints), resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
    },
    spendRefresh,
    spendWithRefresh,
    async clientBudget(ctx, next) {
      // Decided here, before the provider does anything: the id as the request names it (any form).
      const held = heldBy(namedClientId(ctx.get('Authorization'), ctx.state.oauthParams), ctx.ip);
      return held ? tooManyTokenRequests(ctx, held.resetSeconds, held) : next();
    },

    async clientAuthentication(ctx, next) {
      if (ctx.method !== 'POST' || !LIMITED_PROVIDER_PATHS.has(ctx.path)) return next();
      await next();
      try {
        const client = ctx.oidc?.client && factsWithId(ctx.oidc.client);
        // Fulfilled: the provider authenticated the client (every limited route requires it), for a
        // public client by what it presented (the PKCE verifier, a live refresh token). It stands.
        const fulfilled = ctx.status >= 200 && ctx.status < 300;
        // Otherwise on a verifier's own word, never guessed from the answer: the library sets the
        // client as soon as it is found, then may still refuse the request (attestation or DPoP
        // headers, malformed parameters …) with a 400 before any credential was checked. The one
        // refusal of the client after a verifier's word is a replayed assertion (401 invalid_client).
        const verified = authenticated.has(ctx) && ctx.status !== 401;
        if (client && (fulfilled || verified)) {
          // A refresh the provider answered counts for its (client, user) pair too.
          const refreshed = ctx.status === 200 && ctx.oidc?.params?.grant_type === 'refresh_token' ? ctx.oidc.entities.Account?.accountId : undefined;
          if (refreshed) await spendRefresh(client.clientId, refreshed);
          // The app learns its budget from every answer to it (RateLimit headers). A public
          // client's budget is per address, so whoever spends it spends only their own share.
          return void ctx.set(rateLimitHeaders(await spendBudget(client, ctx.ip, ctx.req)));
        }
        if (fulfilled) return;
        // The same answer whether the named client exists or not: nothing tells them apart.
        const named = namedClientId(ctx.get('Authorization'), ctx.oidc?.params as Record<string, unknown> | undefined);
        const wait = await failedAuthentication(named, ctx.ip);
        if (wait) tooManyTokenRequests(ctx, wait);
      } catch {
        // The counters' store is down: the provider's own answer stands (a 503 if it needed the
        // store too). Counting is not worth failing a request that was answered.
      }
    },
  };
}
