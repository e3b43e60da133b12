// GET /v2/me: the authorized user's profile (spec 4.4); used to check that credentials work.
import Router from '@koa/router';
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { findUserById } from '../accounts/store.ts';
import { bearerAuth, requireScope } from './bearer.ts';
import { rejectToken, sendData } from './responses.ts';

export function apiRoutes(provider: Provider, db: Db): Router {
  const router = new Router({ prefix: '/v2' });
  const bearer = bearerAuth(provider);

  router.get('/me', bearer, requireScope('PROFILE_READ'), async (ctx) => {
    const user = await findUserById(db, ctx.state.token!.accountId);
    if (!user) return rejectToken(ctx, true, 'the user of this access token no longer exists');
    sendData(ctx, user);
  });

  return router;
}
