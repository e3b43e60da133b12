// Sign-in and consent pages: the user-facing steps of an authorization request.
// GET shows the page the provider's prompt asks for; each POST finishes one step with a 303.
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import { errors } from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { findUserById } from '../accounts/store.ts';
import { isLegacyGrant, revokeGrant } from '../oauth/grants.ts';
import { recordUserGrant } from '../apps-with-access/user-grants.ts';
import { grantRequestedResources } from '../oauth/resources.ts';
import { rememberLegacyGrant } from '../clients/legacy.ts';
import { INTERACTION_PATH, INTERACTION_UPSTREAM_SUFFIX } from '../http/paths.ts';
import { refuseLocalPasswords, type SignInChoices } from './account.ts';
import type { Challenge, SignInLimits } from './sign-in-limits.ts';
import { csrfToken, csrfValid } from '../http/csrf.ts';
import { newRouter } from '../http/router.ts';
import type { Metrics } from '../http/metrics.ts';
import { recordAudit } from '../audit.ts';
import { endAuthorizationSession } from '../oauth/sessions.ts';
import { endSession, startSession, webSessionOf } from './session.ts';
import { checkSignIn, formChallenge } from './sign-in.ts';
import { consentPageData } from './consent-page.ts';
import { field, fields, formBody, page } from './forms.ts';
import { finishedSteps, type StepOutcome } from './finished-steps.ts';
import type { ArtifactStorage } from '../storage/artifacts.ts';
import { ForbiddenError } from '../errors.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import type { PasswordHashing } from '../accounts/password.ts';
import { allowLogos, checkOrgPost, checkStillAllowed, orgOptions, orgsInvolved } from './org-consent.ts';
import { isOrgScope } from '../orgs/consent-rules.ts';
import type { OrgConsentFacts } from '../orgs/consent-data.ts';
import { allowDecision, boundGrantPlan, pageDecision, type ConsentFacts, type FoundGrant } from '../oauth/consent.ts';
import { findClient } from '../clients/service.ts';
import { createBoundGrant, type GrantBindings } from '../orgs/bindings.ts';
import { installApp } from '../orgs/installations.ts';
import { addInstallationRequest } from '../orgs/store.ts';
import type { WebhookOutbox } from '../webhooks/outbox.ts';
import { consentFacts, unreviewedApp, userLimitReached } from '../cimd/tier.ts';
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

type GrantModel = InstanceType<Provider['Grant']>;

/** What the steps of one request found, in the order they ran (see the routes' step lists). */
interface InteractionState {
  details: Details;
  accountId: string;
  client: Client;
  /** The grant the request names, as found (the model Allow adds to when the decision reuses it). */
  found: GrantModel | undefined;
  facts: ConsentFacts<Offered>;
  decision: ReturnType<typeof allowDecision<Offered>>;
}
type Offered = NonNullable<Awaited<ReturnType<typeof orgsInvolved>>>['offered'][number];
type Step = (ctx: Context, next: Next) => Promise<void>;
const state = (ctx: Context) => ctx.state as InteractionState;

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
  /** The password form and "Sign in with …" (account.ts). */
  signInChoices: SignInChoices;
}

export function interactionRoutes({ provider, db, records, passwords, limits, metrics, platformName, artifacts, bindings, outbox, cimdMaxUsers, signInChoices }: InteractionDeps) {
  const { localPasswords, upstream } = signInChoices;
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
      localPasswords,
      upstreamName: upstream?.name,
      upstreamAction: `${INTERACTION_PATH}/${details.uid}${INTERACTION_UPSTREAM_SUFFIX}`,
    });
  }

  /**
   * The authorization flow's sign-in, after the password or the upstream provider said who this
   * is: prompt=login by someone else ends the previous account's session first; one sign-in across
   * the site starts the pages' session too (a new one: whoever's was here ends).
   */
  async function signedIn(ctx: Context, details: Details, userId: number, remember: boolean, upstreamIdToken?: string) {
    const accountId = String(userId);
    if (details.session?.accountId && details.session.accountId !== accountId) await leaveCurrentAccount(ctx, details);
    await startSession(ctx, db, userId, { remember, upstreamIdToken });
    // A persistent authorization session only when asked for; otherwise it ends with the browser.
    await finish(ctx, details, { login: { accountId, remember } }, false);
  }

  // The steps of the routes below, in the order the routes list them. Each one either calls
  // next() or answers (a page, a redirect) and ends the request; what it found is in ctx.state.

  /** The interaction named in the URL; back after this step finished, a page saying so. */
  const interactionOrFinished: Step = async (ctx, next) => {
    try {
      state(ctx).details = await loadInteraction(ctx);
    } catch (err) {
      // Back after this step finished: say so, with the way on, rather than "not found".
      if (err instanceof errors.SessionNotFound && (await finished.show(ctx, provider))) return;
      throw err;
    }
    await next();
  };

  /** The interaction of a form POST, after the CSRF check. */
  const submission: Step = async (ctx, next) => {
    state(ctx).details = await loadSubmission(ctx);
    await next();
  };

  /**
   * One sign-in across the site: a browser signed in to the pages is signed in here too, when a
   * session is all the request needs. Anything more (prompt=login; max_age or id_token_hint, should
   * openid ever be offered) asks for the password, as without one: the provider accepts whatever
   * login we hand it.
   */
  async function signedInOnPages(ctx: Context, details: Details): Promise<{ accountId: string; ts: number } | undefined> {
    // A session already here: the sign-in is asked for again, or another account was chosen.
    if (details.session?.accountId || !details.prompt.reasons.every((reason) => reason === 'no_session')) return undefined;
    const web = await webSessionOf(ctx, users);
    return web && { accountId: String(web.user.id), ts: Math.floor(web.signedInAt.getTime() / 1000) };
  }

  const signInIfDue: Step = async (ctx, next) => {
    const { details } = state(ctx);
    if (!signInDue(details)) return next();
    const signedIn = await signedInOnPages(ctx, details);
    // The provider's session starts from the pages' (transient: the pages' cookie is the one kept).
    if (signedIn) return finish(ctx, details, { login: { ...signedIn, remember: false } }, false);
    return showLogin(ctx, details, localPasswords ? await formChallenge(ctx, limits, passwords) : undefined);
  };

  const consentExpected: Step = async (ctx, next) => {
    const { details } = state(ctx);
    if (details.prompt.name !== 'consent' || !details.session?.accountId) throw new errors.InvalidRequest('this step does not expect a consent');
    await next();
  };

  /** The signed-in user and the client as it is now; a pending client only for its owner. */
  const userAndClient: Step = async (ctx, next) => {
    const s = state(ctx);
    s.accountId = String(s.details.session!.accountId);
    s.client = await currentClient(s.details);
    refuseNonOwnerOfPendingClient(s.client, s.accountId);
    await next();
  };

  /** What the consent decision reads, from current data (src/oauth/consent.ts). */
  const consentFactsRead: Step = async (ctx, next) => {
    const s = state(ctx);
    const { details, client, accountId } = s;
    const requested = requestedScopes(details);
    s.found = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
    s.facts = {
      client,
      requested,
      includeGrantedScopes: details.params.include_granted_scopes === 'true',
      userLimit: await userLimitReached(db, client, accountId, cimdMaxUsers),
      orgs: await orgsInvolved(db, Number(accountId), client.clientId, client.scope?.split(' ') ?? [], requested),
      grant: s.found && (await foundGrant(s.found)),
      optionalScopes: (await findClient(db, client.clientId))?.optionalScopes ?? [],
    };
    await next();
  };

  async function foundGrant(grant: GrantModel): Promise<FoundGrant> {
    const binding = grant.jti ? await bindings.forGrant(grant.jti) : undefined;
    return { id: grant.jti!, scopes: (grant.getOIDCScope() ?? '').split(' ').filter(Boolean), legacy: isLegacyGrant(grant), binding: binding ?? undefined };
  }

  const consentPage: Step = async (ctx) => {
    const { details, client, accountId, facts } = state(ctx);
    const decision = pageDecision(facts);
    if (decision.kind === 'denied') return finish(ctx, details, { error: 'access_denied', error_description: decision.description }, false);
    const { view } = decision;
    const user = await findUserById(users, accountId);
    const redirectUri = typeof details.params.redirect_uri === 'string' ? details.params.redirect_uri : undefined;
    const orgChoice = view.orgs ? await orgOptions(users, view.orgs.offered, view.existing?.binding?.orgId ?? undefined) : undefined;
    if (orgChoice) allowLogos(ctx, orgChoice.map((o) => o.logoUrl));
    await page(ctx, 'consent', {
      title: 'Authorize access',
      platformName,
      userEmail: user?.email ?? '',
      ...(await consentPageData(users, { clientId: client.clientId, clientName: client.clientName ?? client.clientId, requested: view.shown, redirectUri })),
      ...consentFacts(client),
      optional: view.optional,
      incremental: view.held.length > 0,
      unreviewedApp: unreviewedApp(client),
      orgChoice,
      action: `${INTERACTION_PATH}/${details.uid}/confirm`,
      denyAction: `${INTERACTION_PATH}/${details.uid}/abort`,
      switchAction: `${INTERACTION_PATH}/${details.uid}/switch-account`,
      csrf: csrfFor(ctx, details),
    });
  };

  const allowDecided: Step = async (ctx, next) => {
    const s = state(ctx);
    s.decision = allowDecision(s.facts, fields(ctx, 'optional_scope'));
    if (s.decision.kind === 'denied') return finish(ctx, s.details, { error: 'access_denied', error_description: s.decision.description }, false);
    await next();
  };

  /** Allow outside any organization: the grant added to or made, its resources, the audit record. */
  const consentGranted: Step = async (ctx) => {
    const { details, client, accountId, found, decision } = state(ctx);
    if (decision.kind !== 'grant') return;
    const { granted, tokenScopes, legacy } = decision;
    // Incremental consent: the token then says everything the grant holds (include_granted_scopes).
    if (tokenScopes.join(' ') !== requestedScopes(details).join(' ')) {
      details.params.scope = tokenScopes.join(' ');
      await details.save(Math.max(1, details.exp - Math.floor(Date.now() / 1000)));
    }
    const grant = decision.reuse && found ? found : new provider.Grant({ accountId, clientId: client.clientId });
    grant.addOIDCScope(granted.join(' '));
    // The resources the request named (RFC 8707), each with what its token is to say (what was
    // held and what was granted now): the audience of the tokens issued from this consent.
    grantRequestedResources(grant, details.params.resource, tokenScopes);
    const grantId = await grant.save();

    await recordAudit(db, { actor: `user:${accountId}`, action: 'consent.given', clientId: client.clientId, userId: Number(accountId), details: { ...decision.audit, grant_id: grantId } });
    await recordUserGrant(db, accountId, client.clientId, grantId, (grant.getOIDCScope() ?? '').split(' ').filter(Boolean));
    // The user's pre-migration grants end when the code of a scoped authorization is issued (provider.ts).
    if (legacy) await rememberLegacyGrant(db, accountId, client.clientId, grantId);
    await finish(ctx, details, { consent: { grantId } }, true);
  };

  /**
   * Allow in an organization's context: the choice checked again from current data, then either a
   * request to the admins (policy approval), or a grant bound to the organization and teams chosen,
   * with an admin's choice installing the app for the organization first.
   */
  const consentInOrganization: Step = async (ctx, next) => {
    const { details, client, accountId, found, decision: allow } = state(ctx);
    if (allow.kind !== 'organization') return next();
    const { view } = allow;
    const clientId = client.clientId;
    const userId = Number(accountId);
    const decision = checkOrgPost(ctx, view.orgs.offered, view.orgs.all as OrgConsentFacts[], view.optional);
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
    const plan = boundGrantPlan(view, { orgId, scopes: decision.scopes, teamIds: decision.teamIds, installs: decision.installs }, installationId);
    const grant = plan.reuse && found ? found : createBoundGrant(provider, { accountId, clientId });
    grant.addOIDCScope(decision.scopes.join(' '));
    grantRequestedResources(grant, details.params.resource, plan.tokenScopes);
    const grantId = await grant.save();
    try {
      // Bound in a transaction that holds the organization's, installation's and memberships' rows:
      // a change (block, uninstall, a member leaving) either waits and then revokes this grant, or
      // came first and is seen here (src/orgs/installations.ts).
      await db.transaction(async (trx) => {
        await checkStillAllowed(trx, decision, userId, installationId);
        if (!plan.reuse) await bindings.bind(trx, grantId, { accountId, clientId, ...plan.binding });
      });
    } catch (err) {
      await revokeGrant(provider, grantId);
      throw err;
    }

    details.params.scope = plan.tokenScopes.join(' ');
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
  };

  // The consent page: the user signed in, the client usable by them, then what to ask.
  router.get(path(), interactionOrFinished, signInIfDue, userAndClient, consentFactsRead, consentPage);

  router.post(path('/login'), formBody, async (ctx) => {
    const details = await loadSubmission(ctx);
    if (!signInDue(details)) throw new errors.InvalidRequest('this step does not expect a sign-in');
    if (!localPasswords) refuseLocalPasswords(upstream!.name);
    const email = field(ctx, 'email').trim();
    const user = await checkSignIn(ctx, { db, passwords, limits, metrics }, email, field(ctx, 'password'));
    if ('refused' in user) return showLogin(ctx, details, user.challenge, user.refused, email);
    await signedIn(ctx, details, user.id, field(ctx, 'remember') === 'yes');
  });

  if (upstream) {
    // "Sign in with …" for this request: to the upstream provider (src/web/upstream-sign-in.ts)…
    router.post(path(INTERACTION_UPSTREAM_SUFFIX), formBody, async (ctx) => {
      const details = await loadSubmission(ctx);
      if (!signInDue(details)) throw new errors.InvalidRequest('this step does not expect a sign-in');
      await upstream.begin(ctx, { kind: 'interaction', uid: details.uid, remember: field(ctx, 'remember') === 'yes' });
    });
    // …and back, handed over by the callback to this interaction's path: the same sign-in as a password's.
    router.get(path(INTERACTION_UPSTREAM_SUFFIX), async (ctx) => {
      const details = await loadInteraction(ctx);
      const { userId, remember, idToken } = await upstream.takeHandover(ctx, details.uid);
      if (!signInDue(details)) throw new errors.InvalidRequest('this step does not expect a sign-in');
      await signedIn(ctx, details, userId, remember, idToken);
    });
  }

  // "Not you? Use another account": sign out here, then sign in again for the same request.
  router.post(path('/switch-account'), formBody, async (ctx) => {
    const details = await loadSubmission(ctx);
    await leaveCurrentAccount(ctx, details);
    ctx.status = 303;
    ctx.redirect(`${INTERACTION_PATH}/${details.uid}`);
  });

  // Allow: decided again from current data (the client may have been narrowed, migrated or
  // suspended while the page was open), then granted in an organization's context or outside any.
  router.post(path('/confirm'), formBody, submission, consentExpected, userAndClient, consentFactsRead, allowDecided, consentInOrganization, consentGranted);

  router.post(path('/abort'), formBody, async (ctx) => {
    const details = await loadSubmission(ctx);
    await finish(ctx, details, { error: 'access_denied', error_description: 'The user denied the request.' }, false);
  });

  return router;
}
