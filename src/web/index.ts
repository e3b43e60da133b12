// The web application pages (issue: developer settings, admin review, apps with access).
import type Koa from 'koa';
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import type { ClientArtifacts } from '../storage/client-artifacts.ts';
import type { SignInLimits } from '../oauth/rate-limits.ts';
import type { Metrics } from '../http/metrics.ts';
import { loadWebUser } from './session.ts';
import { accountRoutes } from './account.ts';
import { developerRoutes } from './developer.ts';
import { adminReviewRoutes } from './admin-review.ts';
import { connectedAppsRoutes } from './connected-apps.ts';

export interface WebDeps {
  db: Db;
  provider: Provider;
  artifacts: ClientArtifacts;
  limits: SignInLimits;
  metrics: Metrics;
}

const PAGE_PATHS = /^\/(login|logout|settings|admin)(\/|$)/;

export function mountWebPages(app: Koa, deps: WebDeps): void {
  const user = loadWebUser(deps.db);
  // Only the pages read the web session: the API and the provider's hot paths never pay for it.
  app.use((ctx: Context, next: Next) => (PAGE_PATHS.test(ctx.path) ? user(ctx, next) : next()));
  for (const router of [accountRoutes(deps), developerRoutes(deps), adminReviewRoutes(deps), connectedAppsRoutes(deps)]) {
    app.use(router.routes()).use(router.allowedMethods());
  }
}
