// Access decisions for the scheduling API: the bearer token (RFC 6750) judged against the route
// policy. One decision, used by our own resource routes and by the gateway check endpoint.
import type { IncomingHttpHeaders } from 'node:http';
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import getRawBody from 'raw-body';
import { neededFor } from './route-policy.ts';
import { rejectRequest, rejectScope, rejectToken, sendError } from './responses.ts';
import { LEGACY_FULL_ACCESS, scopeSatisfies } from '../scopes.ts';

export interface VerifiedToken {
  accountId: string;
  clientId: string;
  scopes: Set<string>;
  /** A legacy client's unscoped token: not limited by scopes (spec 5.6). */
  unscoped: boolean;
}

export type Decision =
  | { allow: true; token?: VerifiedToken }
  | { allow: false; status: 400; message: string }
  | { allow: false; status: 401; tokenSent: boolean; message: string }
  | { allow: false; status: 403; neededScope?: string; message: string };

export type Refusal = Exclude<Decision, { allow: true }>;

declare module 'koa' {
  interface DefaultState {
    token?: VerifiedToken;
  }
}

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * The token's facts, or why it is not valid. Only the token lookup: a client that stops being
 * approved has all its tokens deleted (setClientStatus in src/clients/service.ts), so no client read is needed.
 */
export async function verifyAccessToken(provider: Provider, value: string): Promise<VerifiedToken | string> {
  const token = await provider.AccessToken.find(value);
  if (!token?.clientId || !token.accountId) return 'the access token is invalid, expired or revoked';
  if (token.isSenderConstrained()) return 'sender-constrained tokens are not accepted here';
  const scopes = new Set(String(token.scope ?? '').split(' ').filter(Boolean));
  const unscoped = scopes.delete(LEGACY_FULL_ACCESS);
  return { accountId: String(token.accountId), clientId: token.clientId, scopes, unscoped };
}

/** A call to judge: every method a backend may run it as (see callMethods), and its path as sent. */
export interface Call {
  methods: string[];
  path: string;
}

const OVERRIDE_HEADERS = ['x-http-method-override', 'x-http-method', 'x-method-override'];

/**
 * The methods a backend may run a call as: its own, and any that a method override names (the
 * headers frameworks honour, or `_method` in the query). The call is judged as each of them, so
 * `GET` overridden to `DELETE` needs the WRITE scope, and a public `POST` overridden to anything
 * else is not public.
 */
export function callMethods(method: string, headers: IncomingHttpHeaders, query: URLSearchParams): string[] {
  const named = [...OVERRIDE_HEADERS.flatMap((h) => headers[h] ?? []), ...query.getAll('_method')];
  const overrides = named.flatMap((value) => value.split(',')).map((m) => m.trim().toUpperCase()).filter(Boolean);
  return [...new Set([method.toUpperCase(), ...overrides])];
}

/** The query of a path as sent (`/v2/x?a=1`). */
export function queryOf(uri: string): URLSearchParams {
  const at = uri.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : uri.slice(at + 1).split('#', 1)[0]);
}

const FORM_LIMIT = '16kb';

/**
 * The Authorization header, which must be the only way the token comes (RFC 6750 3.1: one method
 * per request). A second Authorization header, or a token also in an `access_token` parameter —
 * in these queries or, with `readBody`, in a form body — is invalid_request: a server behind us
 * might read the other token than the one judged here.
 */
export async function bearerHeader(ctx: Context, queries: URLSearchParams[], { readBody = false } = {}): Promise<string | undefined | Refusal> {
  // Node keeps the first of repeated Authorization headers; other servers keep the last.
  const names = ctx.req.rawHeaders.filter((_, i) => i % 2 === 0);
  if (names.filter((name) => name.toLowerCase() === 'authorization').length > 1) {
    return { allow: false, status: 400, message: 'send one Authorization header' };
  }
  const authorization = ctx.get('Authorization') || undefined;
  let inParameter = queries.some((q) => q.has('access_token'));
  if (!inParameter && readBody && authorization && ctx.is('application/x-www-form-urlencoded')) {
    inParameter = new URLSearchParams(await getRawBody(ctx.req, { limit: FORM_LIMIT, encoding: 'utf8' })).has('access_token');
  }
  if (authorization && inParameter) {
    return { allow: false, status: 400, message: 'send the access token in the Authorization header only, not also as access_token' };
  }
  return authorization;
}

export async function decideAccess(provider: Provider, call: Call, authorization: string | undefined): Promise<Decision> {
  const needs = call.methods.map((method) => neededFor(method, call.path));
  const denied = needs.find((need) => need.kind === 'deny');
  if (denied) return { allow: false, status: 403, message: denied.reason };
  const scopes = [...new Set(needs.flatMap((need) => (need.kind === 'scope' ? [need.scope] : [])))];
  if (scopes.length === 0) return { allow: true };

  if (!authorization) return { allow: false, status: 401, tokenSent: false, message: 'an access token is required' };
  const match = BEARER.exec(authorization);
  if (!match) return { allow: false, status: 401, tokenSent: true, message: 'the Authorization header must be "Bearer <token>"' };
  const token = await verifyAccessToken(provider, match[1]!);
  if (typeof token === 'string') return { allow: false, status: 401, tokenSent: true, message: token };
  const missing = token.unscoped ? undefined : scopes.find((scope) => !scopeSatisfies(token.scopes, scope));
  if (missing) return { allow: false, status: 403, neededScope: missing, message: `this call needs the ${missing} scope` };
  return { allow: true, token };
}

/** Answers a refusal with the CONTRACT 3.2 body and the RFC 6750 challenge. */
export function refuse(ctx: Context, decision: Refusal): void {
  if (decision.status === 400) return rejectRequest(ctx, decision.message);
  if (decision.status === 401) return rejectToken(ctx, decision.tokenSent, decision.message);
  if (decision.neededScope) return rejectScope(ctx, decision.neededScope);
  return sendError(ctx, 403, 'access_denied', decision.message);
}

/** Middleware for this service's own resource routes: enforces the route policy. */
export function routePolicy(provider: Provider) {
  return async function enforceRoutePolicy(ctx: Context, next: Next) {
    const query = new URLSearchParams(ctx.querystring);
    const sent = await bearerHeader(ctx, [query], { readBody: true });
    if (typeof sent === 'object') return refuse(ctx, sent);
    const decision = await decideAccess(provider, { methods: callMethods(ctx.method, ctx.headers, query), path: ctx.path }, sent);
    if (!decision.allow) return refuse(ctx, decision);
    ctx.state.token = decision.token;
    return next();
  };
}
