// Steps that run around the provider's authorization endpoint (and its resume after sign-in and
// consent), once the provider has decided the outcome and before the answer leaves.
import type { KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { renderPage } from '../views.ts';
import { takeLegacyGrants } from '../clients/legacy.ts';
import { revokeGrant } from './grants.ts';
import { usableBy, WAITING_FOR_REVIEW } from '../directory/facts.ts';
import { LEGACY_FULL_ACCESS } from '../scopes.ts';

type Next = () => Promise<void>;

const AUTHORIZATION_ROUTES = new Set(['authorization', 'resume']);

/** The redirect_uri this answer sends the browser to, if it is a redirect back to the client. */
function redirectToClient(ctx: KoaContextWithOIDC): boolean {
  const location = ctx.response.get('Location');
  const target = ctx.oidc.params?.redirect_uri;
  return ctx.status >= 300 && ctx.status < 400 && typeof target === 'string' && location.startsWith(target);
}

/**
 * An unreviewed client is never an open redirector (docs/pages.md, review rules): until an administrator approves
 * it, the server redirects to its redirect URI only inside a flow of its signed-in owner. Every
 * other outcome — a bad scope, prompt=none without a session, Cancel on the sign-in page — is the
 * error page.
 */
export async function keepPendingClientsFromRedirecting(ctx: KoaContextWithOIDC, next: Next): Promise<void> {
  await next();
  if (!ctx.oidc || !AUTHORIZATION_ROUTES.has(ctx.oidc.route)) return;
  if (usableBy(ctx.oidc.client, ctx.oidc.session?.accountId) || !redirectToClient(ctx)) return;
  ctx.remove('Location');
  ctx.status = 403;
  ctx.type = 'html';
  ctx.body = await renderPage('error', {
    title: 'This app is not available yet',
    error: 'access_denied',
    description: WAITING_FOR_REVIEW,
  });
}

/**
 * Spec 3 rule 4 / 5.6: a user's pre-migration full-access grants for a client end at the user's
 * next scoped authorization of it — every one, whether or not the consent page was shown (a
 * re-authorization that skips consent ends them too). Runs when a code is issued.
 */
export function endLegacyGrantsOnScopedAuthorization(db: Db, provider: Provider) {
  return async function endLegacyGrants(ctx: KoaContextWithOIDC, next: Next): Promise<void> {
    await next();
    if (!ctx.oidc || !AUTHORIZATION_ROUTES.has(ctx.oidc.route)) return;
    const code = ctx.oidc.entities.AuthorizationCode;
    if (!code?.accountId || !code.clientId || (code.scope ?? '').split(' ').includes(LEGACY_FULL_ACCESS)) return;
    for (const grantId of await takeLegacyGrants(db, code.accountId, code.clientId)) {
      if (grantId !== code.grantId) await revokeGrant(provider, grantId);
    }
  };
}
