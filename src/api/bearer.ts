// Bearer token verification for the resource API (RFC 6750).
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import { rejectScope, rejectToken } from './responses.ts';
import { scopeSatisfies } from '../oauth/scopes.ts';

export interface VerifiedToken {
  accountId: string;
  clientId: string;
  scopes: Set<string>;
  /** A legacy client's unscoped token: not limited by scopes (spec 5.6). */
  unscoped: boolean;
}

declare module 'koa' {
  interface DefaultState {
    token?: VerifiedToken;
  }
}

const BEARER = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/;

/** The token's grant, or a reason why it is not valid. */
export async function verifyAccessToken(provider: Provider, value: string): Promise<VerifiedToken | string> {
  const token = await provider.AccessToken.find(value);
  if (!token?.clientId || !token.accountId) return 'the access token is invalid, expired or revoked';
  if (token.isSenderConstrained()) return 'sender-constrained tokens are not accepted here';
  // A client that is no longer approved (suspended) loses API access at once.
  const client = await provider.Client.find(token.clientId);
  if (!client) return 'the client of this access token is not active';
  const scopes = new Set(String(token.scope ?? '').split(' ').filter(Boolean));
  const unscoped = (token.extra as { unscoped?: boolean } | undefined)?.unscoped === true;
  return { accountId: String(token.accountId), clientId: token.clientId, scopes, unscoped };
}

/** Requires a valid bearer token; the verified token is put in ctx.state.token. */
export function bearerAuth(provider: Provider) {
  return async function requireBearer(ctx: Context, next: Next) {
    const header = ctx.get('Authorization');
    if (!header) return rejectToken(ctx, false, 'an access token is required');
    const match = BEARER.exec(header);
    if (!match) return rejectToken(ctx, true, 'the Authorization header must be "Bearer <token>"');
    const verified = await verifyAccessToken(provider, match[1]!);
    if (typeof verified === 'string') return rejectToken(ctx, true, verified);
    ctx.state.token = verified;
    return next();
  };
}

/** Requires the scope (an ORG_ scope satisfies its TEAM_ counterpart); run after bearerAuth. */
export function requireScope(scope: string) {
  return async function checkScope(ctx: Context, next: Next) {
    const token = ctx.state.token!;
    if (!token.unscoped && !scopeSatisfies(token.scopes, scope)) return rejectScope(ctx, scope);
    return next();
  };
}
