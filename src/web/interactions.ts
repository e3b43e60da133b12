// Sign-in and consent pages: the user-facing steps of an authorization request.
// GET shows the page the provider's prompt asks for; each POST finishes one step with a 303.
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { errors } from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { findUserById } from '../accounts/store.ts';
import { LEGACY_FULL_ACCESS } from '../scopes.ts';
import { isLegacyGrant, revokeGrant } from '../oauth/grants.ts';
import { recordUserGrant } from '../apps-with-access/user-grants.ts';
import { grantRequestedResources } from '../oauth/resources.ts';
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
import { field, fields, formBody, page } from './forms.ts';
import { finishedSteps, type StepOutcome } from './finished-steps.ts';
import type { ArtifactStorage } from '../storage/artifacts.ts';
import { ConflictError, ForbiddenError, InputError } from '../errors.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import type { PasswordHashing } from '../accounts/password.ts';
import { allowLogos, checkOrgPost, checkStillAllowed, orgOptions, orgsInvolved } from './org-consent.ts';
import { grantedScopes, isOrgScope, newScopes } from '../orgs/consent-rules.ts';
import { findClient } from '../clients/service.ts';
import { createBoundGrant, type GrantBindings } from '../orgs/bindings.ts';
import { installApp } from '../orgs/installations.ts';
import { addInstallationRequest } from '../orgs/store.ts';
import type { WebhookOutbox } from '../webhooks/outbox.ts';
import { consentFacts, tierScopes, unreviewedApp, userLimitReached } from '../cimd/tier.ts';
import { usableBy, WAITING_FOR_REVIEW } from '../directory/facts.ts';

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
  if (!usableBy(client, accountId)) throw refusal(WAITING_FOR_REVIEW);
}

const sameIds = (a: number[], b: number[]) => a.length === b.length && [...a].sort().join() === [...b].sort().join();

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
  artifacts: Pick<ArtifactStorage, 'adapterFor' | 'revokeGrant'>;
  /** Grants bound to an organization and teams (src/orgs/bindings.ts). */
  bindings: GrantBindings;
  /** Where an admin's installation writes its webhook events (src/orgs/installations.ts). */
  outbox: WebhookOutbox;
  /** CIMD_MAX_USERS: users an unreviewed metadata-document client may have (src/cimd/tier.ts). */
  cimdMaxUsers: number;
}

export function interactionRoutes({ provider, db, records, passwords, limits, metrics, platformName, artifacts, bindings, outbox, cimdMaxUsers }: InteractionDeps) {
  const users = { db, records };
  const installations = { db, outbox, artifacts, bindings, records };
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

  /**
   * What this consent is about, from current data: the organizations involved (org-context consent),
   * the client's optional scopes among those shown, and, for include_granted_scopes=true, the grant
   * this request adds to and what it already holds (the page then shows only what is new).
   */
  async function consentContext(details: Details, client: Client, accountId: string) {
    const requested = requestedScopes(details);
    const clientScopes = client.scope?.split(' ') ?? [];
    const involved = await orgsInvolved(db, Number(accountId), client.clientId, clientScopes, requested);
    const found = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
    const existing = found && !isLegacyGrant(found) ? found : undefined;
    const binding = existing?.jti ? await bindings.forGrant(existing.jti) : undefined;
    // A bound grant is joined only in its organization; an unbound one only outside any.
    const joinable = involved ? involved.offered.some((o) => o.facts.org.id === binding?.orgId) : !binding;
    let held: string[] = [];
    if (details.params.include_granted_scopes === 'true' && existing && joinable) {
      held = (existing.getOIDCScope() ?? '').split(' ').filter((s) => s && clientScopes.includes(s));
    }
    let orgs = involved;
    if (involved && binding && held.length) orgs = { ...involved, offered: involved.offered.filter((o) => o.facts.org.id === binding.orgId) };
    const fresh = newScopes(requested, held);
    const shown = fresh.length ? fresh : requested;
    const optional = ((await findClient(db, client.clientId))?.optionalScopes ?? []).filter((s) => shown.includes(s));
    return { requested, orgs, existing, binding, held: fresh.length ? held : [], shown, optional };
  }

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
    if (signInDue(details)) return showLogin(ctx, details, await formChallenge(ctx, limits, passwords));
    const accountId = String(details.session!.accountId);
    const client = await currentClient(details);
    refuseNonOwnerOfPendingClient(client, accountId);
    const full = await userLimitReached(db, client, accountId, cimdMaxUsers);
    if (full) return finish(ctx, details, { error: 'access_denied', error_description: full }, false);

    const user = await findUserById(users, accountId);
    const redirectUri = typeof details.params.redirect_uri === 'string' ? details.params.redirect_uri : undefined;
    const cx = await consentContext(details, client, accountId);
    // Every organization blocks the app (or allows nothing it asks): no page, the app hears access_denied.
    if (cx.orgs && cx.orgs.offered.length === 0) return finish(ctx, details, { error: 'access_denied', error_description: 'Your organization does not allow this app.' }, false);
    const orgChoice = cx.orgs ? await orgOptions(users, cx.orgs.offered, cx.binding?.orgId ?? undefined) : undefined;
    if (orgChoice) allowLogos(ctx, orgChoice.map((o) => o.logoUrl));
    await page(ctx, 'consent', {
      title: 'Authorize access',
      platformName,
      userEmail: user?.email ?? '',
      ...(await consentPageData(users, { clientId: client.clientId, clientName: client.clientName ?? client.clientId, requested: cx.shown, redirectUri })),
      ...consentFacts(client),
      optional: cx.optional,
      incremental: cx.held.length > 0,
      unreviewedApp: unreviewedApp(client),
      orgChoice,
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
    const full = await userLimitReached(db, client, accountId, cimdMaxUsers);
    if (full) return finish(ctx, details, { error: 'access_denied', error_description: full }, false);
    // An unreviewed metadata-document client's tier: user scopes only (src/cimd/tier.ts).
    const allowed = new Set(tierScopes(client)); // holds the legacy marker only while unmigrated
    const requested = requestedScopes(details);
    let granted = requested.filter((s) => allowed.has(s));
    if (granted.length === 0) throw new ConflictError('what this app may ask for changed while the page was open; nothing was shared. Please start again from the app');
    const cx = await consentContext(details, client, accountId);
    if (cx.orgs) return confirmInOrganization(ctx, details, client, accountId, cx as typeof cx & { orgs: NonNullable<typeof cx.orgs> });

    // Granular consent: the optional scopes the page showed are granted only when left ticked.
    granted = grantedScopes(granted, cx.optional, fields(ctx, 'optional_scope'));
    if (granted.length === 0) throw new InputError('choose at least one permission to share, or deny the request');
    // Incremental consent: the token then says everything the grant holds (include_granted_scopes).
    const tokenScopes = [...new Set([...cx.held, ...granted])];
    if (tokenScopes.join(' ') !== requested.join(' ')) {
      details.params.scope = tokenScopes.join(' ');
      await details.save(Math.max(1, details.exp - Math.floor(Date.now() / 1000)));
    }
    const legacyRequest = granted.includes(LEGACY_FULL_ACCESS);

    // A legacy (unscoped) grant and a scoped grant are never merged: each kind has its own; nor
    // is a grant bound to an organization joined outside it.
    let grant = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
    if (grant && isLegacyGrant(grant) !== legacyRequest) grant = undefined;
    if (grant?.jti && (await bindings.forGrant(grant.jti))) grant = undefined;
    grant ??= new provider.Grant({ accountId, clientId: client.clientId });
    grant.addOIDCScope(granted.join(' '));
    // The resources the request named (RFC 8707), each with what its token is to say (what was
    // held and what was granted now): the audience of the tokens issued from this consent.
    grantRequestedResources(grant, details.params.resource, tokenScopes);
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

  type OrgContext = Awaited<ReturnType<typeof consentContext>> & { orgs: NonNullable<Awaited<ReturnType<typeof consentContext>>['orgs']> };

  /**
   * Allow in an organization's context: the choice checked again from current data, then either a
   * request to the admins (policy approval), or a grant bound to the organization and teams chosen,
   * with an admin's choice installing the app for the organization first.
   */
  async function confirmInOrganization(ctx: Context, details: Details, client: Client, accountId: string, cx: OrgContext) {
    const clientId = client.clientId;
    const userId = Number(accountId);
    const decision = checkOrgPost(ctx, cx.orgs.offered, cx.orgs.all, cx.optional);
    const orgId = decision.facts.org.id;
    if (decision.kind === 'request') {
      await addInstallationRequest(db, { clientId, orgId, userId, scopes: decision.scopes });
      await recordAudit(db, { actor: `user:${accountId}`, action: 'installation.requested', clientId, userId, details: { org_id: orgId, scopes: decision.scopes } });
      // The request stays open: the app hears access_denied only when the user leaves (the page's button).
      return page(ctx, 'consent-requested', {
        title: 'Request sent',
        clientName: client.clientName ?? clientId,
        orgName: decision.facts.org.name,
        backAction: `${INTERACTION_PATH}/${details.uid}/abort`,
        csrf: csrfFor(ctx, details),
      });
    }

    let installationId = decision.facts.installation?.id ?? null;
    if (decision.installs) {
      const scopes = [...new Set([...(decision.facts.installation?.scopes ?? []), ...decision.scopes.filter(isOrgScope)])];
      const input = { clientId, orgId, allTeams: decision.allTeams, teamIds: decision.allTeams ? [] : decision.teamIds, scopes, by: userId };
      installationId = (await installApp(installations, input, decision.facts.installation?.id)).installation.id;
    }
    // A binding never changes: the existing grant is joined only with the very same one.
    const { binding } = cx;
    const same = Boolean(!decision.installs && cx.existing && binding && binding.orgId === orgId && binding.installationId === installationId && sameIds(binding.teamIds, decision.teamIds));
    const grant = same ? cx.existing! : createBoundGrant(provider, { accountId, clientId });
    grant.addOIDCScope(decision.scopes.join(' '));
    grantRequestedResources(grant, details.params.resource, [...new Set([...(same ? cx.held : []), ...decision.scopes])]);
    const grantId = await grant.save();
    try {
      // Bound in a transaction that holds the organization's, installation's and memberships' rows:
      // a change (block, uninstall, a member leaving) either waits and then revokes this grant, or
      // came first and is seen here (src/orgs/installations.ts).
      await db.transaction(async (trx) => {
        await checkStillAllowed(trx, decision, userId, installationId);
        if (!same) await bindings.bind(trx, grantId, { accountId, clientId, orgId, teamIds: decision.teamIds, installationId });
      });
    } catch (err) {
      await revokeGrant(provider, grantId);
      throw err;
    }

    const tokenScopes = [...new Set([...(same ? cx.held : []), ...decision.scopes])];
    details.params.scope = tokenScopes.join(' ');
    await details.save(Math.max(1, details.exp - Math.floor(Date.now() / 1000)));
    await recordAudit(db, {
      actor: `user:${accountId}`,
      action: 'consent.given',
      clientId,
      userId,
      details: { scopes: decision.scopes, grant_id: grantId, org_id: orgId, team_ids: decision.teamIds, installation_id: installationId, installed: decision.installs },
    });
    await recordUserGrant(db, accountId, clientId, grantId, (grant.getOIDCScope() ?? '').split(' ').filter(Boolean));
    await finish(ctx, details, { consent: { grantId } }, true);
  }

  router.post(path('/abort'), formBody, async (ctx) => {
    const details = await loadSubmission(ctx);
    await finish(ctx, details, { error: 'access_denied', error_description: 'The user denied the request.' }, false);
  });

  return router;
}
