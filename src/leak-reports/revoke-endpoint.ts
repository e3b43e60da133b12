// POST /v2/auth/credentials/revoke (docs/credentials.md): where anyone who finds one of our
// credentials — a secret-scanning partner, a developer who pasted one — revokes it, without
// authentication. JSON `{"credentials": ["…", …]}`, 1 to 100 strings. Limited per address. The
// answer is the same 202 whatever was or was not found, so it tells nothing about a credential.
import type { Context } from 'koa';
import getRawBody from 'raw-body';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RedisClient } from '../storage/redis.ts';
import { consume, limiterFactory } from '../limits/limiter.ts';
import { addressGroup } from '../http/client-address.ts';
import { apiErrorAnswer, NO_STORE, reply } from '../http/envelope.ts';
import { newRouter } from '../http/router.ts';
import { LEAK_REVOKE_PATH } from '../http/paths.ts';
import { revokeLeakedCredentials, type LeakDeps } from './leaks.ts';
import { POLICY } from '../settings.ts';

export const MAX_CREDENTIALS_PER_REPORT = POLICY.MAX_CREDENTIALS_PER_REPORT.value;
/** Longer than any credential ever issued here (54), with room for other forms: anything longer is not one. */
export const MAX_CREDENTIAL_LENGTH = 512;
/** Reports per address and minute. */
export const LEAK_REPORTS_PER_MINUTE = POLICY.LEAK_REPORTS_PER_MINUTE.value;
const BODY_LIMIT = POLICY.LEAK_REPORT_BODY_LIMIT.value;

/** The one answer, found or not. */
export const ACCEPTED = { status: 'accepted' } as const;

/** The per-address limit (as the token endpoint's limits: Redis when configured); undefined with RATE_LIMITS=off. */
export function leakReportLimiter(enabled: boolean, redis: RedisClient | undefined, prefix: string): RateLimiterAbstract | undefined {
  return enabled ? limiterFactory(redis, prefix)({ keyPrefix: 'leak-reports', points: LEAK_REPORTS_PER_MINUTE, duration: 60 }) : undefined;
}

/** The credentials of a report, or why it is not one. */
export function reportedCredentials(body: unknown): string[] | string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body must be a JSON object {"credentials": [...]}';
  const { credentials } = body as { credentials?: unknown };
  if (!Array.isArray(credentials)) return 'credentials must be an array of strings';
  if (credentials.length === 0 || credentials.length > MAX_CREDENTIALS_PER_REPORT) return `credentials must hold from 1 to ${MAX_CREDENTIALS_PER_REPORT} strings`;
  for (const value of credentials) {
    if (typeof value !== 'string' || value.length === 0) return 'every credential must be a non-empty string';
    if (value.length > MAX_CREDENTIAL_LENGTH) return `a credential is at most ${MAX_CREDENTIAL_LENGTH} characters`;
  }
  return credentials as string[];
}

const refuse = (ctx: Context, status: number, message: string, headers: Record<string, string> = {}) =>
  reply(ctx, apiErrorAnswer(status, status === 429 ? 'rate_limited' : 'invalid_request', message, { ...NO_STORE, ...headers }));

export function leakReportRoutes(deps: LeakDeps, limiter: RateLimiterAbstract | undefined) {
  const router = newRouter();
  router.post(LEAK_REVOKE_PATH, async (ctx) => {
    if (limiter) {
      const spent = await consume(limiter, addressGroup(ctx.ip));
      if (spent.consumedPoints > LEAK_REPORTS_PER_MINUTE) {
        const wait = Math.max(1, Math.ceil(spent.msBeforeNext / 1000));
        return refuse(ctx, 429, `too many reports from this address; retry after ${wait} seconds`, { 'Retry-After': String(wait) });
      }
    }
    if (!ctx.is('application/json')) return refuse(ctx, 400, 'the body must be application/json: {"credentials": [...]}');
    let body: unknown;
    try {
      body = JSON.parse(await getRawBody(ctx.req, { limit: BODY_LIMIT, encoding: 'utf8' }));
    } catch (err) {
      const tooLarge = (err as { type?: string }).type === 'entity.too.large';
      return refuse(ctx, tooLarge ? 413 : 400, tooLarge ? `the body is larger than ${BODY_LIMIT / 1024} KB` : 'the body is not valid JSON');
    }
    const credentials = reportedCredentials(body);
    if (typeof credentials === 'string') return refuse(ctx, 400, credentials);
    await revokeLeakedCredentials(deps, credentials);
    reply(ctx, { status: 202, headers: NO_STORE, body: ACCEPTED });
  });
  return router;
}
