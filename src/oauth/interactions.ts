// Sign-in and consent pages: the user-facing steps of an authorization request.
// GET shows the page the provider's prompt asks for; each POST finishes one step with a 303.
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { errors } from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { authenticateUser, findUserById } from '../accounts/store.ts';
import { renderPage } from '../views.ts';
import { describeScope, LEGACY_FULL_ACCESS } from './scopes.ts';
import { isLegacyGrant, recordUserGrant, revokeGrant } from './grants.ts';
import { rememberLegacyGrant, takeLegacyGrants } from '../clients/legacy.ts';
import { INTERACTION_PATH } from './provider.ts';
import type { SignInLimits } from './rate-limits.ts';
import { csrfToken, csrfValid } from '../http/csrf.ts';
import type { Metrics } from '../http/metrics.ts';
import { recordAudit } from '../audit.ts';

type Details = Awaited<ReturnType<Provider['interactionDetails']>>;

const formBody = koaBody({ multipart: false, json: false, urlencoded: true, formLimit: '16kb' });

function field(ctx: Context, name: string): string {
  const value = (ctx.request.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

function requestedScopes(details: Details): string[] {
  return String(details.params.scope ?? '').split(' ').filter(Boolean);
}

export interface InteractionDeps {
  provider: Provider;
  db: Db;
  limits: SignInLimits;
  /** Secret for the forms' CSRF tokens (the current cookie key). */
  csrfSecret: string;
  metrics: Metrics;
}

export function interactionRoutes({ provider, db, limits, csrfSecret, metrics }: InteractionDeps): Router {
  const router = new Router({ prefix: INTERACTION_PATH });

  // The interaction named in the URL must be the one bound to this browser's cookie.
  async function loadInteraction(ctx: Context): Promise<Details> {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    if (details.uid !== ctx.params.uid) throw new errors.SessionNotFound('interaction mismatch');
    return details;
  }

  /** The interaction of a form POST, after the CSRF check. */
  async function loadSubmission(ctx: Context): Promise<Details> {
    const details = await loadInteraction(ctx);
    if (!csrfValid(ctx, csrfSecret, details.uid, field(ctx, 'csrf'))) {
      throw Object.assign(new errors.InvalidRequest('the form was not sent from this site, or it has expired; please start again from the application'), {
        status: 403,
        statusCode: 403,
      });
    }
    return details;
  }

  async function finish(ctx: Context, result: Parameters<Provider['interactionResult']>[2], merge: boolean) {
    const redirectTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: merge });
    ctx.status = 303;
    ctx.redirect(redirectTo);
  }

  /** A pending client is usable only by its owner (testing before review); others get an error page. */
  async function refuseNonOwnerOfPendingClient(details: Details): Promise<void> {
    const client = await provider.Client.find(String(details.params.client_id));
    const owner = (client as unknown as { pending_owner?: string | null } | undefined)?.pending_owner;
    if (owner && owner !== String(details.session?.accountId)) {
      throw Object.assign(new errors.AccessDenied('this app is waiting for review by an administrator; only its developer can use it until then'), {
        status: 403,
        statusCode: 403,
      });
    }
  }

  async function clientName(details: Details): Promise<string> {
    const client = await provider.Client.find(String(details.params.client_id));
    return client?.clientName ?? String(details.params.client_id);
  }

  async function showLogin(ctx: Context, details: Details, error = '', email = '') {
    ctx.type = 'html';
    ctx.body = await renderPage('login', {
      title: 'Sign in',
      clientName: await clientName(details),
      action: `${INTERACTION_PATH}/${details.uid}/login`,
      abortAction: `${INTERACTION_PATH}/${details.uid}/abort`,
      csrf: csrfToken(csrfSecret, details.uid),
      error,
      email,
    });
  }

  router.get('/:uid', async (ctx) => {
    const details = await loadInteraction(ctx);
    if (details.prompt.name === 'login') return showLogin(ctx, details);
    await refuseNonOwnerOfPendingClient(details);

    const user = await findUserById(db, String(details.session?.accountId));
    const requested = requestedScopes(details);
    ctx.type = 'html';
    ctx.body = await renderPage('consent', {
      title: 'Authorize access',
      clientName: await clientName(details),
      userEmail: user?.email ?? '',
      scopes: requested.filter((s) => s !== LEGACY_FULL_ACCESS).map(describeScope),
      fullAccess: requested.includes(LEGACY_FULL_ACCESS),
      action: `${INTERACTION_PATH}/${details.uid}/confirm`,
      denyAction: `${INTERACTION_PATH}/${details.uid}/abort`,
      csrf: csrfToken(csrfSecret, details.uid),
    });
  });

  router.post('/:uid/login', formBody, async (ctx) => {
    const details = await loadSubmission(ctx);
    if (details.prompt.name !== 'login') throw new errors.InvalidRequest('this step does not expect a sign-in');
    const email = field(ctx, 'email').trim();
    const wait = await limits.waitFor(email, ctx.ip);
    if (wait) {
      ctx.status = 429;
      ctx.set('Retry-After', String(wait));
      return showLogin(ctx, details, `Too many sign-in attempts. Please wait ${wait} seconds and try again.`, email);
    }
    const user = email ? await authenticateUser(db, email, field(ctx, 'password')) : undefined;
    if (!user) {
      metrics.authFailures.inc({ kind: 'user' });
      await limits.failed(email, ctx.ip);
      ctx.status = 401;
      return showLogin(ctx, details, 'The email or password is not correct.', email);
    }
    await limits.succeeded(email);
    await finish(ctx, { login: { accountId: String(user.id) } }, false);
  });

  router.post('/:uid/confirm', formBody, async (ctx) => {
    const details = await loadSubmission(ctx);
    if (details.prompt.name !== 'consent') throw new errors.InvalidRequest('this step does not expect a consent');
    await refuseNonOwnerOfPendingClient(details);
    const accountId = String(details.session?.accountId);
    const clientId = String(details.params.client_id);
    const requested = requestedScopes(details);
    const legacyRequest = requested.includes(LEGACY_FULL_ACCESS);

    // A legacy (unscoped) grant and a scoped grant are never merged: each kind has its own.
    let grant = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
    if (grant && isLegacyGrant(grant) !== legacyRequest) grant = undefined;
    grant ??= new provider.Grant({ accountId, clientId });
    grant.addOIDCScope(requested.join(' '));
    const grantId = await grant.save();

    await recordAudit(db, {
      actor: `user:${accountId}`,
      action: 'consent.given',
      clientId,
      userId: Number(accountId),
      details: { scopes: legacyRequest ? 'full access (legacy)' : requested, grant_id: grantId },
    });
    await recordUserGrant(db, accountId, clientId, grantId, (grant.getOIDCScope() ?? '').split(' ').filter(Boolean));
    if (legacyRequest) {
      await rememberLegacyGrant(db, accountId, clientId, grantId);
    } else {
      // Spec 5.6 / 3.4: the user's pre-migration tokens end when they authorize the client again.
      for (const legacyGrantId of await takeLegacyGrants(db, accountId, clientId)) await revokeGrant(provider, legacyGrantId);
    }
    await finish(ctx, { consent: { grantId } }, true);
  });

  router.post('/:uid/abort', formBody, async (ctx) => {
    await loadSubmission(ctx);
    await finish(ctx, { error: 'access_denied', error_description: 'The user denied the request.' }, false);
  });

  return router;
}
