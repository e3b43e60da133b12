// GET /v2/auth/check (CONTRACT 3.3): the decision a gateway (nginx auth_request, Traefik
// ForwardAuth, Envoy ext_authz) asks for before forwarding a call to the scheduling API. Hot
// path: the token lookup and the in-memory route policy, nothing else.
import type Router from '@koa/router';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { bearerHeader, callMethods, decideAccess, queryOf, refuse } from './access.ts';
import { sendData, sendError } from './responses.ts';
import { newRouter } from '../http/router.ts';
import { ALL_SCOPES } from '../scopes.ts';
import { CHECK_PATH } from '../http/paths.ts';
import { namedCall } from './gateway-call.ts';

export function checkRoutes(provider: Provider): Router {
  const router = newRouter();

  async function check(ctx: Context) {
    const call = namedCall(ctx);
    if (typeof call === 'string') return sendError(ctx, 400, 'invalid_request', call);
    const { method, uri } = call;
    ctx.set('Cache-Control', 'no-store');
    // The gateway hands us the call's headers (method overrides, Authorization) and its URI with
    // the query, never its body: a gateway that forwards Content-Length without the body would
    // leave a body reader waiting, so none is read here.
    const forwardedQuery = queryOf(uri);
    const sent = await bearerHeader(ctx, [forwardedQuery, new URLSearchParams(ctx.querystring)]);
    if (typeof sent === 'object') return refuse(ctx, sent);
    const decision = await decideAccess(provider, { methods: callMethods(method, ctx.headers, forwardedQuery), path: uri }, sent);
    if (!decision.allow) return refuse(ctx, decision);
    const { token } = decision;
    if (token) {
      ctx.set('X-Auth-User-Id', token.accountId);
      ctx.set('X-Auth-Client-Id', token.clientId);
      // A legacy unscoped token may do everything its user can: every scope, for services behind the gateway.
      ctx.set('X-Auth-Scopes', (token.unscoped ? ALL_SCOPES : [...token.scopes]).join(' '));
    }
    sendData(ctx, { allowed: true });
  }

  router.get(CHECK_PATH, check);
  // Envoy ext_authz asks with the call's own method and its path appended (see gateway-call.ts).
  router.all(`${CHECK_PATH}/{*call}`, check);
  return router;
}
