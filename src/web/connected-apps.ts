// "Apps with access to your account": every client the user authorized, and Revoke access.
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { appsWithAccess, revokeAppAccess } from '../oauth/grants.ts';
import { describeScope } from '../scopes.ts';
import { recordAudit } from '../audit.ts';
import { formBody, page, redirectWithFlash, requireCsrf } from './forms.ts';
import { pageGuards } from './account.ts';
import { newRouter } from '../http/router.ts';
import { CONNECTED_APPS_PATH } from '../http/paths.ts';

const PATH = CONNECTED_APPS_PATH;

export function connectedAppsRoutes({ db, provider }: { db: Db; provider: Provider }) {
  const router = newRouter();
  const { signedIn } = pageGuards(db);

  router.get(PATH, ...signedIn, async (ctx) => {
    const apps = await appsWithAccess(db, provider, String(ctx.state.user!.id));
    return page(ctx, 'connected-apps', { title: 'Apps with access to your account', apps: apps.map((a) => ({ ...a, scopes: a.scopes.map(describeScope) })) });
  });

  router.post(`${PATH}/:clientId/revoke`, ...signedIn, formBody, requireCsrf, async (ctx) => {
    const user = ctx.state.user!;
    const revoked = await revokeAppAccess(db, provider, String(user.id), ctx.params.clientId!);
    if (revoked === 0) return redirectWithFlash(ctx, PATH, { type: 'error', text: 'That app has no access to your account.' });
    await recordAudit(db, { actor: `user:${user.id}`, action: 'grant.revoked_by_user', clientId: ctx.params.clientId, userId: user.id });
    redirectWithFlash(ctx, PATH, { type: 'ok', text: 'Access revoked. The app can no longer use your account.' });
  });

  return router;
}
