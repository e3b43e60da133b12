// Abuse limits for the two places credentials are guessed: the token endpoint (client secrets)
// and the sign-in form (passwords). Counters live in Redis when configured, so every instance
// sees the same ones; otherwise in this process.
import type { Context, Next } from 'koa';
import type { RedisClient } from '../storage/redis.ts';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateLimitConfig } from '../config.ts';

type LimiterOptions = { keyPrefix: string; points: number; duration: number; blockDuration?: number };

function limiterFactory(redis: RedisClient | undefined, prefix: string) {
  return (options: LimiterOptions): RateLimiterAbstract =>
    redis
      ? new RateLimiterRedis({ storeClient: redis, ...options, keyPrefix: `${prefix}rl:${options.keyPrefix}` })
      : new RateLimiterMemory(options);
}

/** Seconds until the key may try again, or 0 when it is not held back. */
async function heldBackFor(limiter: RateLimiterAbstract, key: string, atMost = limiter.points): Promise<number> {
  const res = await limiter.get(key);
  return res && res.consumedPoints >= atMost && res.msBeforeNext > 0 ? Math.ceil(res.msBeforeNext / 1000) : 0;
}

/** Consumes a point; a refusal from the limiter is an answer, not an error. */
async function consume(limiter: RateLimiterAbstract, key: string): Promise<RateLimiterRes | number> {
  try {
    return await limiter.consume(key);
  } catch (err) {
    if (err instanceof RateLimiterRes) return Math.max(1, Math.ceil(err.msBeforeNext / 1000));
    throw err;
  }
}

function tooManyTokenRequests(ctx: Context, retryAfter: number): void {
  ctx.status = 429;
  ctx.set('Retry-After', String(retryAfter));
  ctx.set('Cache-Control', 'no-store');
  // `slow_down` is the registered token endpoint error for "too fast" (RFC 8628 3.5).
  ctx.body = { error: 'slow_down', error_description: `too many requests; retry after ${retryAfter} seconds` };
}

/** The client id of a token endpoint request: HTTP Basic user, or the client_id parameter. */
function clientIdOf(ctx: Context): string | undefined {
  const basic = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(ctx.get('Authorization'));
  if (basic) {
    const user = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':')[0] ?? '';
    try {
      return decodeURIComponent(user.replace(/\+/g, ' ')) || undefined;
    } catch {
      return undefined;
    }
  }
  const id = (ctx.state.oauthParams as Record<string, string> | undefined)?.client_id;
  return typeof id === 'string' && id.length <= 200 ? id : undefined;
}

export interface SignInLimits {
  /** Seconds the next attempt for this account or from this IP must wait (0: go ahead). */
  waitFor(email: string, ip: string): Promise<number>;
  failed(email: string, ip: string): Promise<void>;
  succeeded(email: string): Promise<void>;
}

export interface RateLimits {
  /** Koa middleware for POST token, revocation and introspection (after the body is read). */
  tokenEndpoint(ctx: Context, next: Next): Promise<void>;
  signIn: SignInLimits;
}

const NO_LIMITS: RateLimits = {
  tokenEndpoint: (_ctx, next) => next(),
  signIn: { waitFor: async () => 0, failed: async () => {}, succeeded: async () => {} },
};

export function createRateLimits(config: RateLimitConfig, redis?: RedisClient, prefix = 'oauth:'): RateLimits {
  if (!config.enabled) return NO_LIMITS;
  const limiter = limiterFactory(redis, prefix);

  const tokenPerIp = limiter({ keyPrefix: 'tok-ip', points: config.tokenPerMinutePerIp, duration: 60 });
  const tokenPerClient = limiter({ keyPrefix: 'tok-client', points: config.tokenPerMinutePerClient, duration: 60 });
  // Failed client authentication locks out that IP for that client id (not the client for
  // everyone: client ids are public, and a lockout per client would let anyone lock an app out),
  // and an IP that fails across many client ids.
  const lockout = { duration: config.authLockoutSeconds, blockDuration: config.authLockoutSeconds };
  const authFailuresPerClientIp = limiter({ keyPrefix: 'authfail-client-ip', points: config.authFailures, ...lockout });
  const authFailuresPerIp = limiter({ keyPrefix: 'authfail-ip', points: config.authFailures * 3, ...lockout });

  const signInFailures = limiter({ keyPrefix: 'signin-fail', points: Number.MAX_SAFE_INTEGER, duration: 24 * 3600 });
  const signInDelay = limiter({ keyPrefix: 'signin-delay', points: 1, duration: 1 });
  const signInFailuresPerIp = limiter({ keyPrefix: 'signin-ip', points: config.signInFailuresPerHourPerIp, duration: 3600, blockDuration: 3600 });

  return {
    async tokenEndpoint(ctx, next) {
      const ip = ctx.ip;
      const clientId = clientIdOf(ctx) ?? '-';
      const lockedFor = Math.max(await heldBackFor(authFailuresPerClientIp, `${clientId}|${ip}`), await heldBackFor(authFailuresPerIp, ip));
      if (lockedFor) return tooManyTokenRequests(ctx, lockedFor);
      for (const [l, key] of [[tokenPerIp, ip], [tokenPerClient, clientId]] as const) {
        const res = await consume(l, key);
        if (typeof res === 'number') return tooManyTokenRequests(ctx, res);
      }
      await next();
      if (ctx.res.statusCode === 401) {
        await Promise.all([consume(authFailuresPerClientIp, `${clientId}|${ip}`), consume(authFailuresPerIp, ip)]);
      }
    },
    signIn: {
      async waitFor(email, ip) {
        return Math.max(await heldBackFor(signInDelay, email.toLowerCase(), 2), await heldBackFor(signInFailuresPerIp, ip));
      },
      async failed(email, ip) {
        const key = email.toLowerCase();
        const res = await consume(signInFailures, key);
        await consume(signInFailuresPerIp, ip);
        const failures = typeof res === 'number' ? config.signInFreeFailures + 10 : res.consumedPoints;
        if (failures >= config.signInFreeFailures) {
          // Growing delays: 1, 2, 4, 8 … seconds, up to the maximum.
          const delay = Math.min(2 ** (failures - config.signInFreeFailures), config.signInMaxDelaySeconds);
          await signInDelay.block(key, delay);
        }
      },
      async succeeded(email) {
        const key = email.toLowerCase();
        await Promise.all([signInFailures.delete(key), signInDelay.delete(key)]);
      },
    },
  };
}
