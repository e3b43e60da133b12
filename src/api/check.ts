// GET /v2/auth/check (docs/gateways.md): the decision a gateway (nginx auth_request, Traefik
// ForwardAuth, Envoy ext_authz) asks for before forwarding a call to the scheduling API. Hot
// path: the token lookup and the in-memory route policy, nothing else. Answered by the hot-path
// listener (listener.ts); the Koa route answers the unusual spellings it passes on.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { callMethods, decideAccess, bearerHeader, koaRequest, queryOf, refuse, senderOf, type ApiRequest, type VerifyToken } from './access.ts';
import { dataAnswer, errorAnswer, reply, type Answer } from './responses.ts';
import { newRouter } from '../http/router.ts';
import { ALL_SCOPES } from '../scopes.ts';
import { CHECK_PATH } from '../http/paths.ts';
import { namedCall } from './gateway-call.ts';
import type { ClosedOrgs } from '../orgs/closed-orgs.ts';

/** The answer to a check request; `closed`: the organizations a token bound to nothing may not reach (docs/organizations.md); `resourceMetadata`: the platform API's metadata (RFC 9728), named in every 401. */
export function gatewayCheck(verify: VerifyToken, closed: ClosedOrgs, resourceMetadata?: string) {
  return async function answerCheck(request: ApiRequest): Promise<Answer> {
    const call = namedCall(request);
    if (typeof call === 'string') return errorAnswer(400, 'invalid_request', call, { 'Cache-Control': 'no-store' });
    const { method, uri } = call;
    // The gateway hands us the call's headers (method overrides, Authorization) and its URI with
    // the query, never its body: a gateway that forwards Content-Length without the body would
    // leave a body reader waiting, so none is read here.
    const forwardedQuery = queryOf(uri);
    const sent = bearerHeader(request, [forwardedQuery, new URLSearchParams(request.search.slice(1))]);
    // A DPoP proof is for the call the client made: its method and public URL (RFC 9449 4.3).
    const decision = typeof sent === 'object' ? sent : await decideAccess(verify, { methods: callMethods(method, request.headers, forwardedQuery), path: uri }, sent, closed, senderOf(request, method, uri));
    if (!decision.allow) {
      const refusal = refuse(decision, resourceMetadata);
      refusal.headers['Cache-Control'] = 'no-store';
      return refusal;
    }
    const { token } = decision;
    if (!token) return dataAnswer(ALLOWED, { 'Cache-Control': 'no-store' });
    // Headers as literals, not merged: see write() in listener.ts.
    // A legacy unscoped token may do everything its user can: every scope, for services behind the gateway.
    const scopes = token.unscoped ? ALL_SCOPE_NAMES : [...token.scopes].join(' ');
    if (token.teamIds === undefined) {
      return dataAnswer(ALLOWED, { 'Cache-Control': 'no-store', 'X-Auth-User-Id': token.accountId, 'X-Auth-Client-Id': token.clientId, 'X-Auth-Scopes': scopes });
    }
    // A token bound to an organization and teams (src/orgs/bindings.ts) says which, for the API behind.
    const bound: Record<string, string> = { 'Cache-Control': 'no-store', 'X-Auth-User-Id': token.accountId, 'X-Auth-Client-Id': token.clientId, 'X-Auth-Scopes': scopes };
    if (token.orgId !== undefined) bound['X-Auth-Org-Id'] = token.orgId;
    bound['X-Auth-Team-Ids'] = token.teamIds.join(',');
    return dataAnswer(ALLOWED, bound);
  };
}

const ALLOWED = { allowed: true };
const ALL_SCOPE_NAMES = ALL_SCOPES.join(' ');

export function checkRoutes(answerCheck: ReturnType<typeof gatewayCheck>): Router {
  const router = newRouter();
  const check = async (ctx: Context) => reply(ctx, await answerCheck(koaRequest(ctx)));
  router.get(CHECK_PATH, check);
  // Envoy ext_authz asks with the call's own method and its path appended (see gateway-call.ts).
  router.all(`${CHECK_PATH}/{*call}`, check);
  return router;
}
