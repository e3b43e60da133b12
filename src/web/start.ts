// The start page at `/` on APP_URL (issue 38 point 3): the banner and the README point there. It
// says what this server is and offers the ways in: sign in, apps with access, developer settings,
// organizations, the demo where it was set up, the discovery document, and for administrators the review queue.
import type { Db } from '../storage/db.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import { reviewClients } from '../clients/service.ts';
import { ADMIN_CLIENTS_PATH, CONNECTED_APPS_PATH, DEVELOPER_CLIENTS_PATH, LOGIN_PATH, ORGANIZATIONS_PATH, START_PATH } from '../http/paths.ts';
import { publicEndpoints, type PublicUrls } from '../http/public-endpoints.ts';
import { newRouter } from '../http/router.ts';
import { pageGuards } from './account.ts';
import { demoAuthorizePath, findDemoClient } from './demo-callback.ts';
import { page } from './forms.ts';

export function startRoutes({ db, records, publicUrls, platformName }: { db: Db; records: RecordCache; publicUrls: PublicUrls; platformName: string }) {
  const router = newRouter();
  const { anyone } = pageGuards({ db, records });
  router.get(START_PATH, ...anyone, async (ctx) => {
    const user = ctx.state.user as { isAdmin?: boolean } | undefined;
    const demo = await findDemoClient(db);
    // The queue's length, for administrators only (one count query).
    const pending = user?.isAdmin ? (await reviewClients(db, { status: 'pending', search: '', offset: 0, limit: 1 })).counts.pending : undefined;
    return page(ctx, 'start', {
      title: platformName,
      platformName,
      signIn: `${LOGIN_PATH}?${new URLSearchParams({ next: START_PATH })}`,
      links: { apps: CONNECTED_APPS_PATH, developer: DEVELOPER_CLIENTS_PATH, organizations: ORGANIZATIONS_PATH, review: ADMIN_CLIENTS_PATH },
      discovery: publicEndpoints(publicUrls).discovery,
      demo: demo ? demoAuthorizePath(demo) : undefined,
      pending,
    });
  });
  return router;
}
