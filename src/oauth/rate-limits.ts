// Abuse limits of the token endpoints, where client secrets are guessed (the sign-in forms have
// their own: src/web/sign-in-limits.ts, on the same counters). Counters live in Redis when
// configured, so every instance sees the same ones; otherwise in this process.
//
// The rule: limits stop attackers and never legitimate users. Client secrets are 256-bit random
// values, so guessing is hopeless, and a lockout that also refused the right secret would only
// hand an attacker a switch that turns integrations off. So:
// - a request whose client authenticates is never refused because of failures — anyone's, from
//   any address — only when that client's own authenticated volume is over its budget;
// - requests that do not authenticate are counted per (claimed client id, address) and per
//   address; over the limit they are answered 429 with a growing Retry-After instead of 401.
import { claimedClientId } from '../fast/credentials.ts';
import type { Context, Next } from 'koa';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RedisClient } from '../storage/redis.ts';
import type { RateLimitConfig } from '../config.ts';

type LimiterOptions = { keyPrefix: string; points: number; duration: number };

export function limiterFactory(redis: RedisClient | undefined, prefix: string) {
  return (options: LimiterOptions): RateLimiterAbstract =>
    redis
      ? new RateLimiterRedis({ storeClient: redis, ...options, keyPrefix: `${prefix}rl:${options.keyPrefix}` })
      : new RateLimiterMemory(options);
}

const UNLIMITED = Number.MAX_SAFE_INTEGER;
/** On a request counted against its client's budget already. */
const COUNTED = Symbol('counted against the client budget');

/** Consumes a point and says how many the key has used in its window (a refusal is an answer). */
export async function consume(limiter: RateLimiterAbstract, key: string): Promise<RateLimiterRes> {
  try {
    return await limiter.consume(key);
  } catch (err) {
    if (err instanceof RateLimiterRes) return err;
    throw err;
  }
}

/** 1, 2, 4 … seconds for each attempt past the free ones, up to the maximum. */
const growingDelay = (over: number, max: number) => (over > 0 ? Math.min(2 ** (over - 1), max) : 0);

function tooManyTokenRequests(ctx: Context | KoaContextWithOIDC, retryAfter: number): void {
  ctx.status = 429;
  ctx.remove('WWW-Authenticate');
  ctx.set('Retry-After', String(retryAfter));
  ctx.set('Cache-Control', 'no-store');
  // `slow_down` is the registered token endpoint error for "too fast" (RFC 8628 3.5).
  ctx.body = { error: 'slow_down', error_description: `too many requests; retry after ${retryAfter} seconds` };
}

/** The provider's routes that are limited, as the provider sees its own paths. */
const LIMITED_PROVIDER_PATHS = new Set(['/token', '/revoke', '/introspect']);

export type ClientWithBudget = { clientId: string; clientAuthMethod?: string; token_requests_per_minute?: number | null };

export interface TokenEndpointLimits {
  /**
   * Said by the client secret check (src/oauth/provider.ts) when a request of the provider (its
   * context) presented an active secret of its client: only such requests spend the budget.
   */
  authenticated(ctx: object): void;
  /** Seconds the client a request claims must wait, being over its own budget (0: go ahead). */
  heldBack(claimedClientId: string | undefined, ip: string): number;
  /**
   * Counts a request whose client authenticated against that client's budget, once: the request
   * (its IncomingMessage) is not counted again when a hot path hands it to the provider.
   */
  spend(client: ClientWithBudget, ip: string, request: object): Promise<void>;
  /** In our app, before the provider: a client over its own authenticated budget waits. */
  clientBudget(ctx: Context, next: Next): Promise<void>;
  /** Inside the provider (provider.use): counts what authenticated, throttles what did not. */
  clientAuthentication(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void>;
}

export interface RateLimits {
  token: TokenEndpointLimits;
}

const NO_LIMITS: RateLimits = {
  token: { authenticated: () => {}, heldBack: () => 0, spend: async () => {}, clientBudget: (_ctx, next) => next(), clientAuthentication: (_ctx, next) => next() },
};

export function createRateLimits(config: RateLimitConfig, redis?: RedisClient, prefix = 'oauth:'): RateLimits {
  if (!config.enabled) return NO_LIMITS;
  return { token: tokenEndpointLimits(config, limiterFactory(redis, prefix)) };
}

function tokenEndpointLimits(config: RateLimitConfig, limiter: ReturnType<typeof limiterFactory>): TokenEndpointLimits {
  const window = { points: UNLIMITED, duration: config.authWindowSeconds };
  const failuresPerClientIp = limiter({ keyPrefix: 'authfail-client-ip', ...window });
  const failuresPerIp = limiter({ keyPrefix: 'authfail-ip', ...window });
  // One limiter per budget value (an operator can set a client's own): a key counts a minute.
  const budgets = new Map<number, RateLimiterAbstract>();
  const budgetLimiter = (points: number) => {
    if (!budgets.has(points)) budgets.set(points, limiter({ keyPrefix: `client-budget-${points}`, points, duration: 60 }));
    return budgets.get(points)!;
  };

  // A client found over its budget waits here until its minute ends, without a store round trip
  // per request. Each instance learns it from its own count of the shared counter, so a client
  // may overshoot its budget by at most one request per instance.
  const overBudgetUntil = new Map<string, number>();
  const budgetKey = (client: ClientWithBudget, ip: string) =>
    // A public client has no secret: anyone can speak for it, so its budget is per address.
    client.clientAuthMethod === 'none' ? `${client.clientId}|${ip}` : client.clientId;
  function waitOf(key: string): number {
    const until = overBudgetUntil.get(key);
    if (until === undefined) return 0;
    if (until > Date.now()) return Math.ceil((until - Date.now()) / 1000);
    overBudgetUntil.delete(key);
    return 0;
  }

  async function spendBudget(client: ClientWithBudget, ip: string, request: object): Promise<void> {
    // Marked on the request itself: the provider sees it through a proxy (src/oauth/mount.ts).
    const marked = request as { [COUNTED]?: true };
    if (marked[COUNTED]) return;
    marked[COUNTED] = true;
    const points = client.token_requests_per_minute ?? config.tokenPerMinutePerClient;
    const key = budgetKey(client, ip);
    const res = await consume(budgetLimiter(points), key);
    if (res.consumedPoints >= points) overBudgetUntil.set(key, Date.now() + res.msBeforeNext);
  }

  /**
   * Seconds to hold back a request that did not authenticate, or 0 while under the limit. Only an
   * id of the registry's form has a count of its own (claimedClientId); any other names no client
   * and is counted with the requests that name none.
   */
  async function failedAuthentication(claimed: string | undefined, ip: string): Promise<number> {
    const [perClient, perIp] = await Promise.all([consume(failuresPerClientIp, `${claimed ?? '-'}|${ip}`), consume(failuresPerIp, ip)]);
    const over = Math.max(perClient.consumedPoints - config.authFailures, perIp.consumedPoints - config.authFailuresPerIp);
    return growingDelay(over, config.authMaxDelaySeconds);
  }

  const heldBack = (claimed: string | undefined, ip: string) => (claimed ? Math.max(waitOf(claimed), waitOf(`${claimed}|${ip}`)) : 0);
  // The provider's requests whose client secret check passed (see clientAuthentication).
  const authenticated = new WeakSet<object>();

  return {
    authenticated: (ctx) => void authenticated.add(ctx),
    heldBack,
    spend: spendBudget,
    async clientBudget(ctx, next) {
      const wait = heldBack(claimedClientId(ctx.get('Authorization'), ctx.state.oauthParams), ctx.ip);
      return wait ? tooManyTokenRequests(ctx, wait) : next();
    },

    async clientAuthentication(ctx, next) {
      if (ctx.method !== 'POST' || !LIMITED_PROVIDER_PATHS.has(ctx.path)) return next();
      await next();
      try {
        const client = ctx.oidc?.client as unknown as ClientWithBudget | undefined;
        // Counted on the secret check's own word, never guessed from the answer: the library sets
        // the client as soon as it is found, then may still refuse the request (attestation or
        // DPoP headers, malformed parameters …) with a 400 before any secret was compared.
        if (client && authenticated.has(ctx)) return await spendBudget(client, ctx.ip, ctx.req);
        // A public client has no secret: the library accepting its request is all its
        // authentication can be. Its budget is per address, so whoever spends it spends only
        // their own address's share; its refusals are failures like any other.
        if (client?.clientAuthMethod === 'none' && ctx.status >= 200 && ctx.status < 300) return await spendBudget(client, ctx.ip, ctx.req);
        // The same answer whether the claimed client exists or not: nothing tells them apart.
        const claimed = claimedClientId(ctx.get('Authorization'), ctx.oidc?.params as Record<string, unknown> | undefined);
        const wait = await failedAuthentication(claimed, ctx.ip);
        if (wait) tooManyTokenRequests(ctx, wait);
      } catch {
        // The counters' store is down: the provider's own answer stands (a 503 if it needed the
        // store too). Counting is not worth failing a request that was answered.
      }
    },
  };
}
