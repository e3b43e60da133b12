// GET /v2/auth/check (CONTRACT 3.3): the decision a gateway (nginx auth_request, Traefik
// ForwardAuth) asks for before forwarding a call to the scheduling API. Hot path: the token
// lookup and the in-memory route policy, nothing else.
import Router from '@koa/router';
import type Provider from 'oidc-provider';
import { decideAccess, refuse } from './access.ts';
import { sendData, sendError } from './responses.ts';
import { ALL_SCOPES } from '../oauth/scopes.ts';

export function checkRoutes(provider: Provider): Router {
  const router = new Router();

  router.get('/v2/auth/check', async (ctx) => {
    const method = ctx.get('X-Forwarded-Method');
    const uri = ctx.get('X-Forwarded-Uri');
    if (!method || !uri) {
      return sendError(ctx, 400, 'invalid_request', 'X-Forwarded-Method and X-Forwarded-Uri name the call to judge');
    }
    ctx.set('Cache-Control', 'no-store');
    const decision = await decideAccess(provider, method, uri, ctx.get('Authorization') || undefined);
    if (!decision.allow) return refuse(ctx, decision);
    const { token } = decision;
    if (token) {
      ctx.set('X-Auth-User-Id', token.accountId);
      ctx.set('X-Auth-Client-Id', token.clientId);
      // A legacy unscoped token may do everything its user can: every scope, for services behind the gateway.
      ctx.set('X-Auth-Scopes', (token.unscoped ? ALL_SCOPES : [...token.scopes]).join(' '));
    }
    sendData(ctx, { allowed: true });
  });

  return router;
}
