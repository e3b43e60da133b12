// "Apps with access to your account": every client the user authorized, and Revoke access.
import Router from '@koa/router';
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { appsWithAccess, revokeAppAccess } from '../oauth/grants.ts';
import { describeScope } from '../oauth/scopes.ts';
import { recordAudit } from '../audit.ts';
import { formBody, page, redirectWithFlash, requireCsrf } from './forms.ts';
import { requireUser } from './account.ts';

const PATH = '/settings/connected-apps';

export function connectedAppsRoutes({ db, provider }: { db: Db; provider: Provider }): Router {
  const router = new Router();

  router.get(PATH, requireUser, async (ctx) => {
    const apps = await appsWithAccess(db, provider, String(ctx.state.user!.id));
    return page(ctx, 'connected-apps', { title: 'Apps with access to your account', apps: apps.map((a) => ({ ...a, scopes: a.scopes.map(describeScope) })) });
  });

  router.post(`${PATH}/:clientId/revoke`, requireUser, formBody, requireCsrf, async (ctx) => {
    const user = ctx.state.user!;
    const revoked = await revokeAppAccess(db, provider, String(user.id), ctx.params.clientId!);
    if (revoked === 0) return redirectWithFlash(ctx, PATH, { type: 'error', text: 'That app has no access to your account.' });
    await recordAudit(db, { actor: `user:${user.id}`, action: 'grant.revoked_by_user', clientId: ctx.params.clientId, userId: user.id });
    redirectWithFlash(ctx, PATH, { type: 'ok', text: 'Access revoked. The app can no longer use your account.' });
  });

  return router;
}
