// The pages: the start page, sign-in and consent of the authorization flow, and the web application (developer
// settings, admin review, apps with access). Each route
// names its own guard (src/web/account.ts pageGuards); only those routes read the web session.
import type Koa from 'koa';
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import type { ArtifactStorage } from '../storage/artifacts.ts';
import type { SignInLimits } from './sign-in-limits.ts';
import type { TokenEndpointLimits } from '../oauth/rate-limits.ts';
import type { Metrics } from '../http/metrics.ts';
import type { PublicUrls } from '../http/public-endpoints.ts';
import { accountRoutes } from './account.ts';
import { developerRoutes, type WebhookPageDeps } from './developer.ts';
import { adminReviewRoutes } from './admin-review.ts';
import { connectedAppsRoutes } from './connected-apps.ts';
import { interactionRoutes } from './interactions.ts';
import { demoCallbackRoutes } from './demo-callback.ts';
import { orgAppsRoutes } from './org-apps.ts';
import { startRoutes } from './start.ts';
import type { GrantBindings } from '../orgs/bindings.ts';

import type { WebhookOutbox } from '../webhooks/outbox.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import type { PasswordHashing } from '../accounts/password.ts';
import type { UpstreamClient } from '../accounts/upstream.ts';
import { upstreamSignIn } from './upstream-sign-in.ts';

export interface WebDeps {
  db: Db;
  provider: Provider;
  /** Client sweeps and secret marks (developer settings), and where finished steps are kept. */
  artifacts: ArtifactStorage;
  /** Where client changes write their webhook events (src/webhooks/outbox.ts). */
  outbox: WebhookOutbox;
  /** Client and user records (src/storage/record-cache.ts). */
  records: RecordCache;
  /** Password hashing at the configured cost (src/accounts/password.ts). */
  passwords: PasswordHashing;
  limits: SignInLimits;
  /** Each client's use of its token-endpoint budget, shown to its owner. */
  tokenLimits: Pick<TokenEndpointLimits, 'budgetUse'>;
  metrics: Metrics;
  /** PLATFORM_NAME, for the consent page. */
  platformName: string;
  publicUrls: PublicUrls;
  webhooks: WebhookPageDeps;
  /** Grants bound to an organization and teams (src/orgs/bindings.ts): consent binds, the org apps page revokes. */
  bindings: GrantBindings;
  /** CIMD_MAX_USERS (src/cimd/tier.ts). */
  cimdMaxUsers: number;
  /** CIMD_ALLOW_LOOPBACK: a jwks_uri may be http on 127.0.0.1 (the provider's one fetch follows the documents' rules). */
  jwksUriAllowLoopback: boolean;
  /** The upstream OpenID provider people sign in with, if any (docs/accounts.md). */
  upstream: UpstreamClient | undefined;
  /** LOCAL_PASSWORDS: the password form is offered. */
  localPasswords: boolean;
}

export function mountWebPages(app: Koa, base: WebDeps): void {
  const upstream = base.upstream && upstreamSignIn({ upstream: base.upstream, artifacts: base.artifacts, users: { db: base.db, records: base.records }, appUrl: base.publicUrls.appUrl });
  const deps = { ...base, signInChoices: { localPasswords: base.localPasswords, upstream } };
  for (const router of [startRoutes(deps), interactionRoutes(deps), accountRoutes(deps), developerRoutes(deps), adminReviewRoutes(deps), connectedAppsRoutes(deps), orgAppsRoutes(deps), demoCallbackRoutes(deps)]) {
    app.use(router.routes()).use(router.allowedMethods());
  }
}
