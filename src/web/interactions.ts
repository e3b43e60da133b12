// Sign-in and consent pages: the user-facing steps of an authorization request.
// GET shows the page the provider's prompt asks for; each POST finishes one step with a 303.
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { errors } from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { findUserById } from '../accounts/store.ts';
import { LEGACY_FULL_ACCESS } from '../scopes.ts';
import { isLegacyGrant, recordUserGrant } from '../oauth/grants.ts';
import { rememberLegacyGrant } from '../clients/legacy.ts';
import { INTERACTION_PATH } from '../http/paths.ts';
import type { Challenge, SignInLimits } from './sign-in-limits.ts';
import { csrfToken, csrfValid } from '../http/csrf.ts';
import { newRouter } from '../http/router.ts';
import type { Metrics } from '../http/metrics.ts';
import { recordAudit } from '../audit.ts';
import { endAuthorizationSession } from '../oauth/sessions.ts';
import { endSession } from './session.ts';
import { checkSignIn, formChallenge } from './sign-in.ts';
import { consentPageData } from './consent-page.ts';
import { field, formBody, page } from './forms.ts';
import { finishedSteps, type StepOutcome } from './finished-steps.ts';
import type { ArtifactStorage } from '../storage/artifacts.ts';
import { ConflictError, ForbiddenError } from '../errors.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import type { PasswordHashing } from '../accounts/password.ts';

type Details = Awaited<ReturnType<Provider['interactionDetails']>>;
type Client = NonNullable<Awaited<ReturnType<Provider['Client']['find']>>>;

function requestedScopes(details: Details): string[] {
  return String(details.params.scope ?? '').split(' ').filter(Boolean);
}

const csrfFor = (ctx: Context, details: Details) => csrfToken(ctx, `interaction:${details.uid}`);

/** A refusal shown as the error page (never a redirect to the client). */
const refusal = (description: string) => new ForbiddenError(description);

/** A pending client is usable only by its owner (testing before review); others get an error page. */
function refuseNonOwnerOfPendingClient(client: Client, accountId: string | undefined): void {
  const owner = (client as unknown as { pending_owner?: string | null }).pending_owner;
  if (owner && owner !== accountId) throw refusal('this app is waiting for review by an administrator; only its developer can use it until then');
}

export interface InteractionDeps {
  provider: Provider;
  db: Db;
  /** Client and user records (src/storage/record-cache.ts). */
  records: RecordCache;
  passwords: PasswordHashing;
  limits: SignInLimits;
  metrics: Metrics;
  /** PLATFORM_NAME: who reviews apps, as the consent page says it. */
  platformName: string;
  /** Where finished steps are kept (finished-steps.ts): with the provider's artifacts. */
  artifacts: Pick<ArtifactStorage, 'adapterFor'>;
}

export function interactionRoutes({ provider, db, records, passwords, limits, metrics, platformName, artifacts }: InteractionDeps) {
  const users = { db, records };
  const router = newRouter();
  const finished = finishedSteps(artifacts.adapterFor('FinishedStep'));
  const path = (suffix = '') => `${INTERACTION_PATH}/:uid${suffix}`;

  // The interaction named in the URL must be the one bound to this browser's cookie.
  async function loadInteraction(ctx: Context): Promise<Details> {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    if (details.uid !== ctx.params.uid) throw new errors.SessionNotFound('interaction mismatch');
    return details;
  }

  /** The interaction of a form POST, after the CSRF check. */
  async function loadSubmission(ctx: Context): Promise<Details> {
    const details = await loadInteraction(ctx);
    if (!csrfValid(ctx, `interaction:${details.uid}`, field(ctx, 'csrf'))) {
      throw new ForbiddenError('the form was not sent from this site, or it has expired; please start again from the application', 'invalid_request');
    }
    return details;
  }

  /** The client as it is now (not as it was when the request started); gone if no longer usable. */
  async function currentClient(details: Details): Promise<Client> {
    const client = await provider.Client.find(String(details.params.client_id));
    if (!client) throw refusal('this app can no longer be authorized; nothing was shared with it');
    return client;
  }

  async function finish(ctx: Context, details: Details, result: Parameters<Provider['interactionResult']>[2], merge: boolean) {
    // Back to this step's page later finds it finished (src/web/finished-steps.ts).
    const outcome: StepOutcome = 'login' in result ? 'signed_in' : 'consent' in result ? 'allowed' : 'denied';
    await finished.remember(ctx, details, outcome);
    const redirectTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: merge });
    ctx.status = 303;
    ctx.redirect(redirectTo);
  }

  /**
   * Ends the authorization session this interaction started in (another account signs in, or the
   * user asked to use another account). The interaction is detached from it, so the provider does
   * not look for it again, and the next sign-in starts a fresh session.
   */
  async function leaveCurrentAccount(ctx: Context, details: Details): Promise<void> {
    await endAuthorizationSession(ctx, provider);
    await endSession(ctx, db);
    delete details.session;
    await details.save(Math.max(1, details.exp - Math.floor(Date.now() / 1000)));
  }

  /** Sign-in is due when the provider asks for it, or after the user chose another account. */
  const signInDue = (details: Details) => details.prompt.name === 'login' || !details.session?.accountId;

  async function showLogin(ctx: Context, details: Details, challenge: Challenge | undefined, error = '', email = '') {
    const client = await provider.Client.find(String(details.params.client_id));
    await page(ctx, 'login', {
      title: 'Sign in',
      clientName: client?.clientName ?? String(details.params.client_id),
      action: `${INTERACTION_PATH}/${details.uid}/login`,
      abortAction: `${INTERACTION_PATH}/${details.uid}/abort`,
      csrf: csrfFor(ctx, details),
      error,
      email,
      challenge,
    });
  }

  router.get(path(), async (ctx) => {
    let details: Details;
    try {
      details = await loadInteraction(ctx);
    } catch (err) {
      // Back after this step finished: say so, with the way on, rather than "not found".
      if (err instanceof errors.SessionNotFound && (await finished.show(ctx, provider))) return;
      throw err;
    }
    if (signInDue(details)) return showLogin(ctx, details, await formChallenge(ctx, limits));
    const accountId = String(details.session!.accountId);
    const client = await currentClient(details);
    refuseNonOwnerOfPendingClient(client, accountId);

    const user = await findUserById(users, accountId);
    const redirectUri = typeof details.params.redirect_uri === 'string' ? details.params.redirect_uri : undefined;
    await page(ctx, 'consent', {
      title: 'Authorize access',
      platformName,
      userEmail: user?.email ?? '',
      ...(await consentPageData(users, { clientId: client.clientId, clientName: client.clientName ?? client.clientId, requested: requestedScopes(details), redirectUri })),
      action: `${INTERACTION_PATH}/${details.uid}/confirm`,
      denyAction: `${INTERACTION_PATH}/${details.uid}/abort`,
      switchAction: `${INTERACTION_PATH}/${details.uid}/switch-account`,
      csrf: csrfFor(ctx, details),
    });
  });

  router.post(path('/login'), formBody, async (ctx) => {
    const details = await loadSubmission(ctx);
    if (!signInDue(details)) throw new errors.InvalidRequest('this step does not expect a sign-in');
    const email = field(ctx, 'email').trim();
    const user = await checkSignIn(ctx, { db, passwords, limits, metrics }, email, field(ctx, 'password'));
    if ('refused' in user) return showLogin(ctx, details, user.challenge, user.refused, email);
    const accountId = String(user.id);
    // prompt=login by someone else: the previous account's session ends before the new one starts.
    if (details.session?.accountId && details.session.accountId !== accountId) await leaveCurrentAccount(ctx, details);
    // A persistent authorization session only when asked for; otherwise it ends with the browser.
    await finish(ctx, details, { login: { accountId, remember: field(ctx, 'remember') === 'yes' } }, false);
  });

  // "Not you? Use another account": sign out here, then sign in again for the same request.
  router.post(path('/switch-account'), formBody, async (ctx) => {
    const details = await loadSubmission(ctx);
    await leaveCurrentAccount(ctx, details);
    ctx.status = 303;
    ctx.redirect(`${INTERACTION_PATH}/${details.uid}`);
  });

  router.post(path('/confirm'), formBody, async (ctx) => {
    const details = await loadSubmission(ctx);
    if (details.prompt.name !== 'consent' || !details.session?.accountId) throw new errors.InvalidRequest('this step does not expect a consent');
    const accountId = String(details.session.accountId);
    // Allow grants what the client may have now: it may have been narrowed, migrated or
    // suspended while the page was open.
    const client = await currentClient(details);
    refuseNonOwnerOfPendingClient(client, accountId);
    const allowed = new Set(client.scope?.split(' ') ?? []); // holds the legacy marker only while unmigrated
    const requested = requestedScopes(details);
    const granted = requested.filter((s) => allowed.has(s));
    if (granted.length === 0) throw new ConflictError('what this app may ask for changed while the page was open; nothing was shared. Please start again from the app');
    if (granted.length < requested.length) {
      details.params.scope = granted.join(' ');
      await details.save(Math.max(1, details.exp - Math.floor(Date.now() / 1000)));
    }
    const legacyRequest = granted.includes(LEGACY_FULL_ACCESS);

    // A legacy (unscoped) grant and a scoped grant are never merged: each kind has its own.
    let grant = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
    if (grant && isLegacyGrant(grant) !== legacyRequest) grant = undefined;
    grant ??= new provider.Grant({ accountId, clientId: client.clientId });
    grant.addOIDCScope(granted.join(' '));
    const grantId = await grant.save();

    await recordAudit(db, {
      actor: `user:${accountId}`,
      action: 'consent.given',
      clientId: client.clientId,
      userId: Number(accountId),
      details: { scopes: legacyRequest ? 'full access (legacy)' : granted, grant_id: grantId },
    });
    await recordUserGrant(db, accountId, client.clientId, grantId, (grant.getOIDCScope() ?? '').split(' ').filter(Boolean));
    // The user's pre-migration grants end when the code of a scoped authorization is issued (provider.ts).
    if (legacyRequest) await rememberLegacyGrant(db, accountId, client.clientId, grantId);
    await finish(ctx, details, { consent: { grantId } }, true);
  });

  router.post(path('/abort'), formBody, async (ctx) => {
    const details = await loadSubmission(ctx);
    await finish(ctx, details, { error: 'access_denied', error_description: 'The user denied the request.' }, false);
  });

  return router;
}
