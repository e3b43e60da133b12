// Access decisions for the scheduling API: the bearer token (RFC 6750) judged against the route
// policy. One decision, used by our own resource routes and by the gateway check endpoint, on
// whichever transport carried the request (the Koa app or the hot-path listener).
import type { IncomingHttpHeaders } from 'node:http';
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import getRawBody from 'raw-body';
import { neededFor } from './route-policy.ts';
import { rejectBinding, rejectProof, rejectRequest, rejectScope, rejectToken, errorAnswer, reply, type Answer } from './responses.ts';
import { LEGACY_FULL_ACCESS, scopeSatisfies } from '../scopes.ts';
import { artifactKey } from '../storage/artifact-key.ts';
import type { TokenCache } from '../storage/token-cache.ts';
import { liveAccessToken } from '../oauth/token-liveness.ts';
import { isFor } from '../oauth/resources.ts';
import type { ClosedOrgs, Reached } from '../orgs/closed-orgs.ts';
import { dpopHeader, PROOF_MAX_AGE_SECONDS, type CheckProof, type SingleUse } from '../oauth/dpop.ts';

export interface VerifiedToken {
  accountId: string;
  clientId: string;
  scopes: Set<string>;
  /** A legacy client's unscoped token: not limited by scopes (docs/legacy-migration.md). */
  unscoped: boolean;
  /**
   * A token bound to an organization and teams (src/orgs/bindings.ts) carries them, from its
   * `extra`: `teamIds` is defined exactly for bound tokens (maybe empty), `orgId` when the binding
   * names an organization. Team and organization paths outside them are refused (decideAccess).
   */
  orgId?: string;
  teamIds?: string[];
  /** A DPoP-bound token's key thumbprint (RFC 9449 6: cnf.jkt): usable only with a proof of that key. */
  jkt?: string;
}

/** How a token came (RFC 9449 7): its scheme, and for DPoP the proof with the request it must be for. */
export interface Presentation {
  scheme: 'bearer' | 'dpop';
  /** The DPoP header: absent, its value, or why it is refused (repeated, oversized: dpop.ts). */
  proof: string | undefined | { refused: string };
  /** The method and public URL of the request the client made (for the check: the call it names). */
  htm: string;
  htu: string;
}

/** A DPoP refusal (RFC 9449 7.1): answered with a `DPoP` challenge. */
export interface DpopRefusal {
  dpop: 'invalid_token' | 'invalid_dpop_proof' | 'use_dpop_nonce';
  message: string;
  /** With use_dpop_nonce: the nonce to use (the DPoP-Nonce header). */
  nonce?: string;
}

/** The resource side's DPoP (src/oauth/dpop.ts): the proof check and the single use of its jti. */
export interface ResourceProofs {
  check: CheckProof;
  unique: SingleUse;
}

export type Decision =
  | { allow: true; token?: VerifiedToken }
  | { allow: false; status: 400; message: string }
  | { allow: false; status: 401; tokenSent: boolean; message: string; dpop?: DpopRefusal }
  // No neededScope: access_denied. `boundElsewhere`: the scope is right, the team or organization
  // is not the token's (its challenge says error="access_denied": docs/gateways.md).
  | { allow: false; status: 403; neededScope?: string; boundElsewhere?: true; message: string; dpopScheme?: true };

export type Refusal = Exclude<Decision, { allow: true }>;

declare module 'koa' {
  interface DefaultState {
    token?: VerifiedToken;
  }
}

const BEARER = /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * The token's facts, or why it is not valid (a DPoP refusal when it is bound to a key, or came
 * with the DPoP scheme). Without a presentation: as a bearer token.
 */
export type VerifyToken = (value: string, presentation?: Presentation) => Promise<VerifiedToken | string | DpopRefusal>;

/** What the token cache keeps beside a verified token: its facts, until its grant expires. */
interface Known {
  facts: VerifiedToken;
  until: number;
}

/**
 * Verifies access tokens by the one rule of every path (src/oauth/token-liveness.ts): the token,
 * its grant and its client. With the token cache, the facts of a token found live are kept beside
 * its cached payload, so a repeated lookup is one hash and a map read; they go when the payload
 * goes: a revoked token, its grant destroyed or its client suspended (each announced to every
 * instance), its expiry, a lost revocation channel — or at the expiry of its grant.
 */
export function accessTokenVerifier(provider: Provider, platform: string, cache?: TokenCache, proofs?: ResourceProofs): VerifyToken {
  async function factsOf(value: string): Promise<VerifiedToken | string> {
    const key = cache?.serving ? artifactKey(value) : undefined;
    const known = key ? cache!.known<Known>(key) : undefined;
    if (known && known.until > Date.now()) return known.facts;
    const live = await liveAccessToken(provider, value);
    if (!live) return 'the access token is invalid, expired or revoked';
    const { token, grant } = live;
    // Certificate-bound tokens (mTLS) are never issued here; a key-bound one (DPoP) needs its proof.
    if (token['x5t#S256']) return 'sender-constrained tokens are not accepted here';
    // A token asked for another resource (RFC 8707) is not for this API (none stored: it is).
    if (!isFor(token, platform, platform)) return 'the access token is for another resource';
    const scopes = new Set(String(token.scope ?? '').split(' ').filter(Boolean));
    const unscoped = scopes.delete(LEGACY_FULL_ACCESS);
    const facts: VerifiedToken = { accountId: String(token.accountId), clientId: token.clientId!, scopes, unscoped };
    // The binding travels in the token (extraTokenClaims, src/oauth/provider.ts): no other read.
    const bound = token.extra as { org_id?: unknown; team_ids?: unknown } | undefined;
    if (bound && Array.isArray(bound.team_ids)) {
      facts.teamIds = bound.team_ids.map(String);
      if (typeof bound.org_id === 'string') facts.orgId = bound.org_id;
    }
    if (token.jkt) facts.jkt = token.jkt;
    if (key) cache!.remember(key, { facts, until: typeof grant.exp === 'number' ? grant.exp * 1000 : Infinity } satisfies Known);
    return facts;
  }

  return async function verifyAccessToken(value, presentation = { scheme: 'bearer', proof: undefined, htm: '', htu: '' }) {
    const { scheme, proof } = presentation;
    const invalidProof = (message: string): DpopRefusal => ({ dpop: 'invalid_dpop_proof', message });
    // The proof's header first, as the provider reads it (RFC 9449 4.3 checks 1-2): nothing is looked up.
    if (scheme === 'dpop' && typeof proof === 'object') return invalidProof(proof.refused);
    if (scheme === 'dpop' && proof === undefined) return invalidProof('the DPoP scheme needs a DPoP proof header');
    const facts = await factsOf(value);
    if (typeof facts === 'string') return scheme === 'dpop' ? { dpop: 'invalid_token', message: facts } : facts;
    // A bound token as Bearer is the downgrade a thief would try (RFC 9449 7.2).
    if (scheme === 'bearer') return facts.jkt ? { dpop: 'invalid_token', message: 'this access token is bound to a DPoP key: send it with the DPoP scheme and a proof' } : facts;
    if (!facts.jkt) return { dpop: 'invalid_token', message: 'this access token is not bound to a DPoP key: send it with the Bearer scheme' };
    if (!proofs) return invalidProof('DPoP proofs are not accepted here');
    const outcome = await proofs.check({ proof: proof as string, htm: presentation.htm, htu: presentation.htu, accessToken: value });
    if ('error' in outcome) return { dpop: outcome.error, message: outcome.message, ...('nonce' in outcome ? { nonce: outcome.nonce } : {}) };
    if (outcome.jkt !== facts.jkt) return { dpop: 'invalid_token', message: 'the DPoP proof is signed by another key than the one this token is bound to' };
    // Last: spent only by a request that proved everything else (across every instance: dpop.ts).
    if (!(await proofs.unique(facts.clientId, outcome.jti, Date.now() / 1000 + PROOF_MAX_AGE_SECONDS))) return invalidProof('this DPoP proof was used already');
    return facts;
  };
}

/** What a decision reads of a request, whichever transport carried it. */
export interface ApiRequest {
  method: string;
  /** The path as sent (not decoded), without the query. */
  path: string;
  /** `?` and the query, or '' (as Koa's ctx.search). */
  search: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
}

export const koaRequest = (ctx: Context): ApiRequest => ({ method: ctx.method, path: ctx.path, search: ctx.search, headers: ctx.headers, rawHeaders: ctx.req.rawHeaders });

/** A request header's value, '' when absent (as Koa's ctx.get). */
export const headerOf = (request: ApiRequest, lowerCaseName: string): string => {
  const value = request.headers[lowerCaseName];
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
};

/** What a DPoP proof must be for: the request's DPoP header, the method and public URL of the request the client made. */
export interface Sender {
  proof: Presentation['proof'];
  htm: string;
  htu: string;
}

/**
 * The public URL of a request the client made to `path` (RFC 9449 4.3 check 9: a proof's htu): as
 * the gateway in front says it (X-Forwarded-Proto and X-Forwarded-Host), else the Host it was sent to.
 */
export function publicUrl(request: ApiRequest, path: string): string {
  const first = (name: string) => headerOf(request, name).split(',')[0]!.trim();
  const proto = first('x-forwarded-proto') || 'http';
  const host = first('x-forwarded-host') || first('host');
  return `${proto}://${host}${path.split('?', 1)[0]}`;
}

/** The proof side of a request: its DPoP header and what a proof must be for. */
export const senderOf = (request: ApiRequest, htm: string, path: string): Sender => ({ proof: dpopHeader(request.headers, request.rawHeaders), htm, htu: publicUrl(request, path) });

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
  if (!OVERRIDE_HEADERS.some((h) => headers[h] !== undefined) && !query.has('_method')) return [method.toUpperCase()];
  const named = [...OVERRIDE_HEADERS.flatMap((h) => headers[h] ?? []), ...query.getAll('_method')];
  const overrides = named.flatMap((value) => value.split(',')).map((m) => m.trim().toUpperCase()).filter(Boolean);
  return [...new Set([method.toUpperCase(), ...overrides])];
}

/** The query of a path as sent (`/v2/x?a=1`). */
export function queryOf(uri: string): URLSearchParams {
  const at = uri.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : uri.slice(at + 1).split('#', 1)[0]);
}

/**
 * The Authorization header, which must be the only way the token comes (RFC 6750 3.1: one method
 * per request). A second Authorization header, or a token also in an `access_token` parameter —
 * in these queries or in a form body (`bodyHasToken`) — is invalid_request: a server behind us
 * might read the other token than the one judged here.
 */
export function bearerHeader(request: ApiRequest, queries: URLSearchParams[], bodyHasToken = false): string | undefined | Refusal {
  // Node keeps the first of repeated Authorization headers; other servers keep the last.
  let authorizations = 0;
  for (let i = 0; i < request.rawHeaders.length; i += 2) if (request.rawHeaders[i]!.toLowerCase() === 'authorization') authorizations += 1;
  if (authorizations > 1) return { allow: false, status: 400, message: 'send one Authorization header' };
  const authorization = headerOf(request, 'authorization') || undefined;
  if (authorization && (bodyHasToken || queries.some((q) => q.has('access_token')))) {
    return { allow: false, status: 400, message: 'send the access token in the Authorization header only, not also as access_token' };
  }
  return authorization;
}


/**
 * Whether a bound token may reach them: a team among its teams (and, under an organization's
 * path, that organization its own), an organization's resources only its own organization's.
 */
function withinBinding(token: VerifiedToken, reached: Reached): boolean {
  if (reached.orgId !== undefined && reached.orgId !== token.orgId) return false;
  return reached.teamId === undefined || token.teamIds!.includes(reached.teamId);
}

/**
 * `closed`: the organizations reached only through their installations; a token bound to nothing
 * is refused on their paths. Absent: no such path is judged here (this service's own routes).
 */
export async function decideAccess(verify: VerifyToken, call: Call, authorization: string | undefined, closed?: ClosedOrgs, sender?: Sender): Promise<Decision> {
  let scopes: string[] = [];
  // Every method judges the same path, so the team or organization it reaches is the same.
  let reached: Reached | undefined;
  for (const method of call.methods) {
    const need = neededFor(method, call.path);
    if (need.kind === 'deny') return { allow: false, status: 403, message: need.reason };
    if (need.kind !== 'scope') continue;
    if (!scopes.includes(need.scope)) scopes = [...scopes, need.scope];
    if (need.teamId !== undefined || need.orgId !== undefined) reached = need;
  }
  if (scopes.length === 0) return { allow: true };

  if (!authorization) return { allow: false, status: 401, tokenSent: false, message: 'an access token is required' };
  const match = BEARER.exec(authorization);
  if (!match) return { allow: false, status: 401, tokenSent: true, message: 'the Authorization header must be "Bearer <token>" or "DPoP <token>"' };
  const scheme = match[1]!.toLowerCase() === 'dpop' ? 'dpop' : 'bearer';
  const token = await verify(match[2]!, { scheme, proof: sender?.proof, htm: sender?.htm ?? '', htu: sender?.htu ?? '' });
  if (typeof token === 'string') return { allow: false, status: 401, tokenSent: true, message: token };
  if ('dpop' in token) return { allow: false, status: 401, tokenSent: true, message: token.message, dpop: token };
  const missing = token.unscoped ? undefined : scopes.find((scope) => !scopeSatisfies(token.scopes, scope));
  // A token that came as DPoP is told in its own scheme (RFC 9449 7.1).
  if (missing) return { allow: false, status: 403, neededScope: missing, message: `this call needs the ${missing} scope`, ...(scheme === 'dpop' ? { dpopScheme: true as const } : {}) };
  if (!reached) return { allow: true, token };
  if (token.teamIds !== undefined) {
    if (withinBinding(token, reached)) return { allow: true, token };
    return { allow: false, status: 403, boundElsewhere: true, message: 'this token is bound to another organization or other teams' };
  }
  // A token bound to nothing is judged by its scopes alone, as before organizations — except in an
  // organization whose policy is approval or block: reached only through its installations (docs/organizations.md).
  if (closed && (await closed.reaches(reached))) {
    return { allow: false, status: 403, boundElsewhere: true, message: 'this organization admits apps only through its installations: authorize the app in the organization' };
  }
  return { allow: true, token };
}

/**
 * The answer to a refusal: the /v2 error body (docs/errors.md) and the RFC 6750 challenge; a 401's
 * names the platform API's protected-resource metadata (RFC 9728), `resourceMetadata`.
 */
export function refuse(decision: Refusal, resourceMetadata?: string): Answer {
  if (decision.status === 400) return rejectRequest(decision.message);
  if (decision.status === 401) return decision.dpop ? rejectProof(decision.dpop, resourceMetadata) : rejectToken(decision.tokenSent, decision.message, resourceMetadata);
  if (decision.neededScope) return rejectScope(decision.neededScope, decision.dpopScheme === true);
  if (decision.boundElsewhere) return rejectBinding(decision.message);
  return errorAnswer(403, 'access_denied', decision.message);
}

/** The route policy's decision on a request to one of this service's own resource routes. */
export async function decideRequest(verify: VerifyToken, request: ApiRequest, bodyHasToken = false): Promise<Decision> {
  const query = new URLSearchParams(request.search.slice(1));
  const sent = bearerHeader(request, [query], bodyHasToken);
  if (typeof sent === 'object') return sent;
  return decideAccess(verify, { methods: callMethods(request.method, request.headers, query), path: request.path }, sent, undefined, senderOf(request, request.method, request.path));
}

const FORM_LIMIT = '16kb';

/** Whether a form body sent with a bearer token carries a token too (read only then). */
export async function formHasToken(ctx: Context): Promise<boolean> {
  if (!ctx.get('Authorization') || !ctx.is('application/x-www-form-urlencoded')) return false;
  return new URLSearchParams(await getRawBody(ctx.req, { limit: FORM_LIMIT, encoding: 'utf8' })).has('access_token');
}

/** Koa middleware for this service's own resource routes: enforces the route policy. */
export function routePolicy(verify: VerifyToken, resourceMetadata?: string) {
  return async function enforceRoutePolicy(ctx: Context, next: Next) {
    const decision = await decideRequest(verify, koaRequest(ctx), await formHasToken(ctx));
    if (!decision.allow) return reply(ctx, refuse(decision, resourceMetadata));
    ctx.state.token = decision.token;
    return next();
  };
}
