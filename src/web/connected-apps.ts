// "Apps with access to your account": every client the user authorized, when each last used its
// access, and Revoke access after a confirmation page that names the app.
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import type { WebhookOutbox } from '../webhooks/outbox.ts';
import { appsWithAccess, revokeAppAccess, type AppWithAccess } from '../apps-with-access/user-grants.ts';
import { describeScope } from '../scopes.ts';
import { recordAudit } from '../audit.ts';
import { field, formBody, page, redirectWithFlash, requireCsrf } from './forms.ts';
import { pageGuards } from './account.ts';
import { newRouter } from '../http/router.ts';
import { CONNECTED_APPS_PATH } from '../http/paths.ts';
import { singleUse } from './single-use.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import { leakNoticesFor } from '../leak-reports/leaks.ts';

const PATH = CONNECTED_APPS_PATH;
const NO_ACCESS = 'That app has no access to your account.';

export function connectedAppsRoutes({ db, outbox, records, provider }: { db: Db; outbox: WebhookOutbox; records: RecordCache; provider: Provider }) {
  const changes = { db, outbox, records };
  const router = newRouter();
  const { signedIn } = pageGuards(changes);

  /** The app in the path among the signed-in user's own: another user's grant is never in reach. */
  async function ownApp(ctx: Context): Promise<AppWithAccess | undefined> {
    return (await appsWithAccess(db, provider, String(ctx.state.user!.id))).find((app) => app.clientId === ctx.params.clientId);
  }

  router.get(PATH, ...signedIn, async (ctx) => {
    const apps = await appsWithAccess(db, provider, String(ctx.state.user!.id));
    // Credentials of the user's grants reported as leaked and revoked (src/leak-reports/leaks.ts).
    const leaks = await leakNoticesFor(db, ctx.state.user!.id);
    return page(ctx, 'connected-apps', { title: 'Apps with access to your account', apps: apps.map((a) => ({ ...a, scopes: a.scopes.map(describeScope) })), leaks });
  });

  router.get(`${PATH}/:clientId/revoke`, ...signedIn, async (ctx) => {
    const app = await ownApp(ctx);
    if (!app) return redirectWithFlash(ctx, PATH, { type: 'error', text: NO_ACCESS });
    return page(ctx, 'connected-app-revoke', { title: `Revoke access of ${app.clientName}?`, app });
  });

  // A repeat (reload, second click) changes nothing and says so (src/web/single-use.ts).
  const once = singleUse(db, { already: 'This form was already sent: the access was revoked then.', fallback: () => PATH });
  router.post(`${PATH}/:clientId/revoke`, ...signedIn, formBody, requireCsrf, once, async (ctx) => {
    const user = ctx.state.user!;
    const app = await ownApp(ctx);
    if (!app) return redirectWithFlash(ctx, PATH, { type: 'error', text: NO_ACCESS });
    // Without the confirmation page's field, revoking only leads to that page.
    if (field(ctx, 'confirm') !== 'yes') {
      ctx.status = 303;
      return ctx.redirect(`${PATH}/${encodeURIComponent(app.clientId)}/revoke`);
    }
    const revoked = await revokeAppAccess(changes, provider, String(user.id), app.clientId);
    if (revoked === 0) return redirectWithFlash(ctx, PATH, { type: 'error', text: NO_ACCESS });
    await recordAudit(db, { actor: `user:${user.id}`, action: 'grant.revoked_by_user', clientId: app.clientId, userId: user.id });
    redirectWithFlash(ctx, PATH, { type: 'ok', text: `Access revoked for ${app.clientName}. It can no longer use your account.` });
  });

  return router;
}
