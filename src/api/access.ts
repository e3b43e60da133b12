// Access decisions for the scheduling API: the bearer token (RFC 6750) judged against the route
// policy. One decision, used by our own resource routes and by the gateway check endpoint.
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import { neededFor } from './route-policy.ts';
import { rejectScope, rejectToken, sendError } from './responses.ts';
import { LEGACY_FULL_ACCESS, scopeSatisfies } from '../oauth/scopes.ts';

export interface VerifiedToken {
  accountId: string;
  clientId: string;
  scopes: Set<string>;
  /** A legacy client's unscoped token: not limited by scopes (spec 5.6). */
  unscoped: boolean;
}

export type Decision =
  | { allow: true; token?: VerifiedToken }
  | { allow: false; status: 401; tokenSent: boolean; message: string }
  | { allow: false; status: 403; neededScope?: string; message: string };

declare module 'koa' {
  interface DefaultState {
    token?: VerifiedToken;
  }
}

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * The token's facts, or why it is not valid. Only the token lookup: a client that stops being
 * approved has all its tokens deleted (src/clients/lifecycle.ts), so no client read is needed.
 */
export async function verifyAccessToken(provider: Provider, value: string): Promise<VerifiedToken | string> {
  const token = await provider.AccessToken.find(value);
  if (!token?.clientId || !token.accountId) return 'the access token is invalid, expired or revoked';
  if (token.isSenderConstrained()) return 'sender-constrained tokens are not accepted here';
  const scopes = new Set(String(token.scope ?? '').split(' ').filter(Boolean));
  const unscoped = scopes.delete(LEGACY_FULL_ACCESS);
  return { accountId: String(token.accountId), clientId: token.clientId, scopes, unscoped };
}

export async function decideAccess(provider: Provider, method: string, path: string, authorization: string | undefined): Promise<Decision> {
  const need = neededFor(method, path);
  if (need.kind === 'public') return { allow: true };
  if (need.kind === 'deny') return { allow: false, status: 403, message: need.reason };

  if (!authorization) return { allow: false, status: 401, tokenSent: false, message: 'an access token is required' };
  const match = BEARER.exec(authorization);
  if (!match) return { allow: false, status: 401, tokenSent: true, message: 'the Authorization header must be "Bearer <token>"' };
  const token = await verifyAccessToken(provider, match[1]!);
  if (typeof token === 'string') return { allow: false, status: 401, tokenSent: true, message: token };
  if (!token.unscoped && !scopeSatisfies(token.scopes, need.scope)) {
    return { allow: false, status: 403, neededScope: need.scope, message: `this call needs the ${need.scope} scope` };
  }
  return { allow: true, token };
}

/** Answers a refusal with the CONTRACT 3.2 body and the RFC 6750 challenge. */
export function refuse(ctx: Context, decision: Exclude<Decision, { allow: true }>): void {
  if (decision.status === 401) return rejectToken(ctx, decision.tokenSent, decision.message);
  if (decision.neededScope) return rejectScope(ctx, decision.neededScope);
  return sendError(ctx, 403, 'access_denied', decision.message);
}

/** Middleware for this service's own resource routes: enforces the route policy. */
export function routePolicy(provider: Provider) {
  return async function enforceRoutePolicy(ctx: Context, next: Next) {
    const decision = await decideAccess(provider, ctx.method, ctx.path, ctx.get('Authorization') || undefined);
    if (!decision.allow) return refuse(ctx, decision);
    ctx.state.token = decision.token;
    return next();
  };
}
