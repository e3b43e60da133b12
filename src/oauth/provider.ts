// The oidc-provider configuration, read top to bottom: one object, with the reasons inline.
// Plain OAuth 2.0 authorization code + refresh token grants with our scope names (no `openid`).
import Provider, { errors, type Adapter, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import type { Config } from '../config.ts';
import { ClientAdapter, clientView } from './client-adapter.ts';
import type { ArtifactStorage } from '../storage/artifacts.ts';
import { findUserById } from '../accounts/store.ts';
import type { ClientSecrets } from './client-secrets.ts';
import { ALL_SCOPES, isKnownScope, LEGACY_FULL_ACCESS, parseScopeList, visibleScope } from '../scopes.ts';
import { recordLegacyRequest } from '../clients/legacy.ts';
import { APP_AUTHORIZE_PATH, INTERACTION_PATH, PROVIDER_PATH } from '../http/paths.ts';
import { oauthErrorAnswer } from '../http/envelope.ts';
import { describeError, UNAVAILABLE } from '../http/error-view.ts';
import { errorPageHtml, sameSitePath } from '../http/error-pages.ts';
import { isStorageUnavailable } from '../storage/unavailable.ts';
import { endLegacyGrantsOnScopedAuthorization, keepPendingClientsFromRedirecting } from './authorization-outcomes.ts';
import type { TokenEndpointLimits } from './rate-limits.ts';
import { AnsweredAgain, refreshGrace, type RefreshGrace } from './refresh-grace.ts';
import type { Clock } from '../clock.ts';
import { keepBuiltClients } from './built-clients.ts';
import { boundedParams, checkLength } from './authorization-params.ts';
import { revokeGrant } from './grants.ts';
import { describeCodeRefusal, plainAuthorizationError, plainAuthorizationRedirects } from './error-descriptions.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import { bindingClaims, isBoundGrantId, type GrantBindings } from '../orgs/bindings.ts';
import { makeTokenIds, replaceReplayDetection } from '../seams/oidc-provider.ts';
import { DPOP_ALGS, dpopHeader, singleUse, spendProofBeforeCode } from './dpop.ts';
import { requestUrisOfTheirClients } from './par.ts';
import { hkdfSync } from 'node:crypto';
import { generateCredential, TOKEN_MODEL_KINDS } from '../credentials/format.ts';
import { audienceOf, checkCodeResourceFirst, checkGrantedResource, platformResource, resourceIndicators, type WithAudience } from './resources.ts';
import { usableClient } from './token-liveness.ts';
import { UNREVIEWED_REFRESH_TTL, type CimdClients } from '../cimd/clients.ts';
import { isUserScope } from '../cimd/approval.ts';
import { defaultScopes, FACT_NAMES, factsOf, isUnreviewed } from '../directory/facts.ts';
import { registeredClientId } from '../registration/registration.ts';
import { POLICY } from '../settings.ts';
import { ID_TOKEN_TTL } from './signing-keys.ts';
import { checkAssertionLifetime, CLIENT_AUTH_ALGS, keepJwksCurrent } from './client-keys.ts';
import { checkAssertionAudience, CLIENT_ENDPOINT_ERRORS, fapiProfile, nameProfileRefusal, pkceRequired } from './high-trust.ts';


export const ACCESS_TOKEN_TTL = POLICY.ACCESS_TOKEN_TTL.value; // the token response's expires_in (docs/endpoints.md)
/** Seconds an authorization code may be exchanged (also told on the demo's callback page). */
export const AUTHORIZATION_CODE_TTL = POLICY.AUTHORIZATION_CODE_TTL.value;
const REFRESH_TOKEN_TTL = POLICY.REFRESH_TOKEN_TTL.value; // sliding: each rotation gets a fresh one…
const REFRESH_TOKEN_MAX_AGE = POLICY.REFRESH_TOKEN_MAX_AGE.value; // …but never past this after the user's consent
const SESSION_TTL = POLICY.SESSION_TTL.value;
const CLOCK_TOLERANCE_SECONDS = POLICY.CLOCK_TOLERANCE_SECONDS.value;

export interface ProviderDeps {
  config: Config;
  db: Db;
  /** Client and user records (src/storage/record-cache.ts). */
  records: RecordCache;
  artifacts: ArtifactStorage;
  /** The client secret check (docs/secret-rotation.md; client-secrets.ts), shared with the hot paths. */
  secrets: ClientSecrets;
  /** The token-signing keys at start, the signing one first (src/oauth/signing-keys.ts keeps them current after). */
  jwks: { keys: object[] };
  /** Counts and throttles client authentication at the token, revocation and introspection endpoints. */
  tokenLimits: TokenEndpointLimits;
  /** Grants bound to an organization and teams (src/orgs/bindings.ts). */
  bindings: Pick<GrantBindings, 'forGrant'>;
  /** Client ID metadata document clients (src/cimd/clients.ts): URL client_ids. */
  cimd: CimdClients;
  /** The time the refresh grace window ends by (src/clock.ts). */
  clock: Clock;
  /** The refresh grace windows (src/oauth/refresh-grace.ts), the same the fast refresh answers by. */
  graceWindows: RefreshGrace;
}

function adapterFactory({ db, records, artifacts, cimd, config }: ProviderDeps) {
  const clients = { db, records };
  return (model: string): Adapter => (model === 'Client' ? new ClientAdapter(clients, cimd, config.dynamicRegistration) : artifacts.adapterFor(model));
}

/**
 * The scope value of the authorization request as sent, split on spaces and commas. A pushed
 * request's (RFC 9126) was sent to the PAR endpoint, judged there and stored as judged: at the
 * authorization endpoint it is the request's own (`value`), not the browser's query — without the
 * full-access marker an unmigrated legacy client's request was given there.
 */
function requestedScopes(ctx: KoaContextWithOIDC, value: unknown): string[] | undefined {
  if (isPushed(ctx)) return typeof value === 'string' ? parseScopeList(value).filter((s) => s !== LEGACY_FULL_ACCESS) : undefined;
  const raw = ctx.method === 'POST' ? (ctx.oidc.body as Record<string, unknown> | undefined)?.scope : ctx.query.scope;
  return typeof raw === 'string' ? parseScopeList(raw) : undefined;
}

/** An authorization request that arrived as a request_uri (RFC 9126): pushed, and judged, before. */
const isPushed = (ctx: KoaContextWithOIDC): boolean => 'PushedAuthorizationRequest' in ctx.oidc.entities;

/** 429 slow_down with Retry-After: one client refreshing one user's tokens too often. */
function tooManyRefreshes(ctx: KoaContextWithOIDC, wait: number): Error {
  ctx.set('Retry-After', String(wait));
  const err = new errors.SlowDown(`too many refreshes of this user's tokens; retry after ${wait} seconds`);
  return Object.assign(err, { status: 429, statusCode: 429 });
}

export function createProvider(deps: ProviderDeps): Provider {
  const { config, db } = deps;
  const cached = { db, records: deps.records };
  const platform = platformResource(config.baseUrl);
  const resources = resourceIndicators(cached, config.baseUrl);
  const grace = refreshGrace(deps.graceWindows, deps.tokenLimits);

  const configuration: Configuration = {
    adapter: adapterFactory(deps),
    jwks: deps.jwks as Configuration['jwks'],
    cookies: { keys: config.cookieKeys },

    // Our scope names are the provider's "static" scopes: only listed scopes reach a token.
    scopes: [...ALL_SCOPES, LEGACY_FULL_ACCESS],
    responseTypes: ['code'],
    // private_key_jwt (RFC 7523, docs/private-key-jwt.md) for every client with keys: registry
    // clients' (clients set-keys), metadata documents' and registered ones'. A jwks_uri is fetched
    // under the documents' address rules (src/cimd/fetch.ts ruledFetch): the provider's only fetch.
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none', 'private_key_jwt'],
    fetch: deps.cimd.fetch as unknown as Configuration['fetch'],
    // Called with an assertion whose signature the client's keys verified: refused if it lives too
    // long (client-keys.ts); else this request's client authenticated (rate-limits.ts counts it
    // so), unless the library then finds the assertion replayed (its one later check, answered
    // 401). Its default's one check, FAPI 2.0's audience, is high-trust.ts's, for the clients held to it.
    assertJwtClientAuthClaimsAndHeader: (ctx, claims, _header, client) => {
      checkAssertionLifetime(claims);
      checkAssertionAudience(claims, client, config.issuer);
      deps.tokenLimits.authenticated(ctx);
    },
    // How long past its exp an assertion still passes, and its jti is kept (the library's default,
    // said here: small).
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
    // Spec 4.1: redirect_uri is required even when a client has only one.
    allowOmittingSingleRegisteredRedirectUri: false,
    // Public clients and high-trust ones (high-trust.ts) must use PKCE; S256 is the library's only method.
    pkce: { required: pkceRequired },
    // Proofs signed with asymmetric algorithms only (RFC 9449 4.2), the same on every path (dpop.ts).
    // Client assertions too: never HS256 (a shared secret) nor none (client-keys.ts).
    enabledJWA: {
      dPoPSigningAlgValues: [...DPOP_ALGS] as NonNullable<Configuration['enabledJWA']>['dPoPSigningAlgValues'],
      clientAuthSigningAlgValues: [...CLIENT_AUTH_ALGS] as NonNullable<Configuration['enabledJWA']>['clientAuthSigningAlgValues'],
    },

    features: {
      // On by default in v9 and not part of this service.
      devInteractions: { enabled: false },
      // FAPI 2.0 Security Profile for the clients held to the high-trust profile (high-trust.ts,
      // docs/security.md#the-high-trust-profile), none for the others: the library then requires
      // redirect_uri and PKCE of them; what else the profile asks is in their provider view
      // (src/directory/view.ts) and high-trust.ts.
      fapi: { enabled: true, profile: fapiProfile },
      // DPoP (RFC 9449, docs/dpop.md): a token request with a proof gets a token bound to its key
      // (and a public client's refresh token too); server nonces offered (DPoP-Nonce), not required.
      // The secret derives from the first cookie key, so every instance issues and accepts the same.
      dPoP: { enabled: true, nonceSecret: dpopNonceSecret(config.cookieKeys[0]!) },
      // Pushed authorization requests (RFC 9126, docs/par.md): a client authenticates as at the token
      // endpoint and posts its request; the browser then carries only client_id and the request_uri
      // (single use, 60 s: the library's own lifetime). A client may require them
      // (require_pushed_authorization_requests, per client: clients set-par, the developer page).
      // Redirect URIs are still matched exactly against the registered ones: none unregistered.
      pushedAuthorizationRequests: { enabled: true, requirePushedAuthorizationRequests: false, allowUnregisteredRedirectUris: false },
      rpInitiatedLogout: { enabled: false },
      userinfo: { enabled: false },
      // RFC 8707 (src/oauth/resources.ts, docs/resources.md): `resource` names the platform API or
      // a registered resource server; without it, a token is for the platform API as before.
      resourceIndicators: resources,
      // Open dynamic registration (RFC 7591) only when an operator sets DYNAMIC_REGISTRATION=open:
      // registered clients are unreviewed, in the limited tier (src/registration/registration.ts); no
      // registration access token (no RFC 7592 management), no secret.
      registration: { enabled: config.dynamicRegistration, initialAccessToken: false, issueRegistrationAccessToken: false, idFactory: registeredClientId },
      // A client may revoke (RFC 7009) and introspect (RFC 7662) only the tokens issued to it.
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx, client, token) => {
          if (token.clientId !== client.clientId) throw new errors.InvalidRequest('the token was not issued to this client');
          return true;
        },
      },
      // A resource server (RFC 7662 2.1: an API or gateway with credentials of its own) may also
      // introspect the access tokens of other clients — only those with one of its scopes, if it
      // lists any — but never their refresh tokens. Another client's token also needs its client
      // usable, as every path does (token-liveness.ts): a token that outlived its client (a row
      // deleted before the sweep) is inactive, where the library would read the missing client's
      // subject type and fail (a 500). And only tokens for the resource it serves (RFC 8707).
      introspection: {
        enabled: true,
        allowedPolicy: async (ctx, client, token) =>
          token.clientId === client.clientId ||
          (resourceServerMayIntrospect(client, token, platform) && Boolean(token.clientId && (await usableClient(ctx.oidc.provider, token.clientId)))),
      },
    },

    routes: {
      authorization: '/authorize',
      token: '/token',
      revocation: '/revoke',
      introspection: '/introspect',
      pushed_authorization_request: '/par',
      jwks: '/jwks',
      registration: '/register',
    },

    ttl: {
      AccessToken: ACCESS_TOKEN_TTL,
      AuthorizationCode: AUTHORIZATION_CODE_TTL,
      // An unreviewed client's (src/cimd/clients.ts) never past 7 days after the user's consent:
      // its access ends then unless the user authorizes it again (docs/agents.md). Reads only the
      // token and the client, as the fast path requires (src/fast/assumptions.ts).
      RefreshToken: (_ctx, token, client) => {
        const consented = token.iiat ?? token.iat ?? Math.floor(Date.now() / 1000);
        const maxAge = isUnreviewed(client) ? UNREVIEWED_REFRESH_TTL : REFRESH_TOKEN_MAX_AGE;
        const untilMaxAge = consented + maxAge - Math.floor(Date.now() / 1000);
        return Math.max(1, Math.min(REFRESH_TOKEN_TTL, untilMaxAge));
      },
      Grant: REFRESH_TOKEN_MAX_AGE,
      Session: SESSION_TTL,
      Interaction: POLICY.INTERACTION_TTL.value,
      // The library's default, said here because a rotated signing key stays published this long
      // after its successor signs (src/oauth/signing-keys.ts); no ID token is issued while `openid` is refused.
      IdToken: ID_TOKEN_TTL,
    },
    // A refresh token with every code exchange, without the OpenID `offline_access` scope…
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // …and tokens that outlive the browser session that created them.
    expiresWithSession: async () => false,
    // Every refresh spends the presented token; reuse of a spent one revokes the grant (RFC 9700 4.14.2).
    rotateRefreshToken: true,
    // The provider sweeps a grant's tokens and destroys the grant at once; we destroy it first and
    // sweep twice (revokeGrant), wherever the provider revokes one: reuse detection, a code
    // replayed, a refresh token revoked. Revoking an access token keeps its grant (its default).
    async revokeGrantPolicy(ctx) {
      if (ctx.oidc.route === 'revocation' && ctx.oidc.entities.AccessToken) return false;
      const grantId = await grantBeingRevoked(ctx);
      if (grantId) await revokeGrant(ctx.oidc.provider, grantId);
      return true;
    },

    // An access token of a grant bound to an organization and teams carries the binding
    // (src/orgs/bindings.ts): the check and /v2/me read it from the token, introspection shows it.
    // Called with no request context too (the fast refresh, src/fast/refresh.ts): it reads only the
    // token. An unbound grant's id is not marked, so it costs nothing.
    async extraTokenClaims(_ctx, token) {
      const { grantId } = token as { grantId?: string };
      if (!isBoundGrantId(grantId)) return undefined;
      return { ...bindingClaims(await deps.bindings.forGrant(grantId)) };
    },

    // Strict scopes (docs/scopes.md): unknown names and names outside the client's set are refused,
    // not silently dropped as the provider would; registry clients must send `scope` (docs/scopes.md).
    // An agent that sends none asks for the scope its metadata declared (RFC 6749 3.3; docs/agents.md),
    // judged exactly as if it had sent it. A legacy client that sends none gets the full-access
    // marker (docs/legacy-migration.md), and its requests are counted for the migration guard.
    extraParams: {
      // Bounded lengths first (authorization-params.ts): nothing oversized is kept with the request.
      ...boundedParams,
      async scope(ctx, value, client) {
        checkLength(ctx, 'scope', value);
        const sent = requestedScopes(ctx, value) ?? [];
        const scopes = sent.length ? sent : defaultScopes(client);
        // What the consent page, the grant and the token read from here on; a pushed request is
        // stored with it, its commas made spaces (the authorization endpoint's query is so already).
        if ((!sent.length && scopes.length) || ctx.oidc.route === 'pushed_authorization_request') ctx.oidc.params!.scope = scopes.length ? scopes.join(' ') : undefined;
        const unmigratedLegacy = factsOf(client).legacy === true;
        if (scopes.length === 0 && !unmigratedLegacy) throw new errors.InvalidScope('the scope parameter is required', undefined as unknown as string);
        const allowed = new Set(client.scope?.split(' ') ?? []);
        const refused = scopes.filter((s) => !isKnownScope(s) || !allowed.has(s));
        if (refused.length) throw new errors.InvalidScope('requested scope is not allowed for this client', refused.join(' '));
        // The limited tier of an unreviewed metadata-document client (docs/agents.md): user scopes only.
        const beyondTier = isUnreviewed(client) ? scopes.filter((s) => !isUserScope(s)) : [];
        if (beyondTier.length) throw new errors.InvalidScope('this app has not been reviewed yet: it may ask only for scopes of your own data, not TEAM_ or ORG_ scopes', beyondTier.join(' '));
        // A pushed request was counted, and given the marker, when it was pushed.
        if (!unmigratedLegacy || isPushed(ctx)) return;
        await recordLegacyRequest(db, client.clientId, scopes);
        if (scopes.length === 0) ctx.oidc.params!.scope = LEGACY_FULL_ACCESS;
      },
      // Incremental consent (docs/org-consent.md): add to the grant this client already has;
      // the consent page then asks only for what is new. Only `true` or `false`.
      include_granted_scopes(_ctx, value) {
        if (value !== undefined && value !== 'true' && value !== 'false') throw new errors.InvalidRequest('include_granted_scopes must be true or false');
      },
    },

    extraClientMetadata: {
      properties: [...FACT_NAMES],
      validator() {},
    },

    // The grant the session holds for this client, as the library finds it; with
    // include_granted_scopes=true and nothing new asked, the token says all the grant holds.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session?.grantIdFor(ctx.oidc.client!.clientId);
      const grant = grantId ? await ctx.oidc.provider.Grant.find(grantId) : undefined;
      if (grant && ctx.oidc.params?.include_granted_scopes === 'true') includeGrantedScopes(ctx, grant);
      return grant;
    },

    async findAccount(ctx, sub, token) {
      // The refresh grant looks the account up once the client authenticated and the token proved
      // its own, before it spends the token or detects reuse: where a retry within the grace
      // window is recognised and answered with the first answer (refresh-grace.ts).
      const presented = token?.kind === 'RefreshToken' && ctx?.oidc?.route === 'token' ? ctx.oidc.params?.refresh_token : undefined;
      if (typeof presented === 'string' && (await grace.answersAgain(ctx, presented))) throw new AnsweredAgain();
      // The refresh grant looks the account up before it spends the token: a client over its
      // budget of refreshes for this user (rate-limits.ts) is refused here, with nothing written.
      const clientId = token?.kind === 'RefreshToken' ? ctx?.oidc?.client?.clientId : undefined;
      const wait = clientId ? deps.tokenLimits.refreshHeldBack(clientId, sub) : 0;
      if (wait) throw tooManyRefreshes(ctx, wait);
      // Its `resource` too (RFC 8707): refused here, before the token is spent (resources.ts).
      if (clientId) await checkGrantedResource(ctx, token as { resource?: string | string[] }, 'refresh token', resources);
      const user = await findUserById(cached, sub);
      if (!user) return undefined;
      return { accountId: String(user.id), claims: async () => ({ sub: String(user.id) }) };
    },

    interactions: {
      url: (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}`,
    },

    // The same error page as ours (src/http/error-pages.ts), for what cannot be redirected.
    async renderError(ctx, out, error) {
      ctx.type = 'html';
      // The error's class tells causes that share a code apart (src/http/error-causes.ts).
      const plain = typeof out.error_description === 'string' ? { error_description: plainAuthorizationError(out.error_description, ctx.oidc?.params, ctx.oidc?.client) } : {};
      const view = isStorageUnavailable(error) ? UNAVAILABLE : describeError({ status: ctx.status, ...out, ...plain, name: error.name });
      // The address as the browser sent it (src/oauth/mount.ts keeps it), for "Try again".
      const sent = (ctx.req as { originalUrl?: string }).originalUrl;
      ctx.body = await errorPageHtml(view, undefined, { retryUrl: ctx.method === 'GET' && sent ? sameSitePath(sent) : undefined, layout: { platformName: config.platformName } });
    },
  };

  const provider = new Provider(config.issuer, configuration);
  // Tokens and codes that say what they are and carry a checksum (docs/credentials.md), on the
  // provider's path and the fast refresh alike (src/seams/oidc-provider.ts makeTokenIds).
  makeTokenIds(provider, (model) => generateCredential(TOKEN_MODEL_KINDS[model]));
  // A code exchange's `resource` (RFC 8707) is checked before the code is spent, as a refresh's
  // is in findAccount (resources.ts): a refused resource leaves the code for the corrected retry.
  checkCodeResourceFirst(provider, resources);
  // A proof's (or client assertion's) jti is used once across every instance: one atomic claim (dpop.ts).
  const unique = singleUse(deps.artifacts.flights);
  replaceReplayDetection(provider, unique);
  spendProofBeforeCode(provider, unique);
  // A request_uri (RFC 9126) is found only by the client that pushed it (par.ts).
  requestUrisOfTheirClients(provider);
  // The mount (src/oauth/mount.ts) replaces the X-Forwarded-* headers with what our app decided
  // (trusted hops, https APP_URL), so the provider may trust them: it sees the request as we do.
  provider.proxy = true;
  // Built clients for all clients in use, found without hashing their records (src/oauth/built-clients.ts).
  keepBuiltClients(provider, (clientId) => clientView(cached, clientId));
  // A client's jwks_uri keys kept current: a rotated key works at once, a removed one stops (client-keys.ts).
  keepJwksCurrent(provider, deps.clock);

  // Around every request of the provider, outermost first (each runs its part after the provider answered).
  provider.use(boundedDpopHeader);
  provider.use(grace.middleware);
  provider.use(deps.tokenLimits.clientAuthentication);
  provider.use(keepPendingClientsFromRedirecting);
  provider.use(endLegacyGrantsOnScopedAuthorization(db, provider));
  provider.use(ourResponseShapes(config, platform));
  provider.use(plainAuthorizationRedirects);
  provider.use(storageOutagesAs503);

  // Two active secrets per client, stored as hashes, a revoked one refused at once everywhere
  // (docs/secret-rotation.md; client-secrets.ts): the supported hook for this.
  const { secrets } = deps;
  provider.Client.prototype.compareClientSecret = async function compareClientSecret(this: object, presented: string) {
    const secretId = secrets.match(this, presented);
    if (secretId === undefined || !(await secrets.isActive(secretId))) return false;
    secrets.used(secretId);
    // This request's client authenticated: what its budget counts (rate-limits.ts), said here
    // and by the assertion check above. The provider runs each request in its context (Provider.ctx).
    const ctx = Provider.ctx;
    if (ctx) deps.tokenLimits.authenticated(ctx);
    return true;
  };

  // The provider answers its own errors; it reports a storage outage as server_error first.
  provider.on('server_error', (ctx, err) => {
    if (isStorageUnavailable(err)) ctx.state.storageUnavailable = true;
  });
  // An expired or spent code, in words (src/oauth/error-descriptions.ts); invalid_grant stays the code.
  provider.on('grant.error', describeCodeRefusal);
  // A high-trust client is told what its profile asks for (high-trust.ts).
  for (const event of CLIENT_ENDPOINT_ERRORS) provider.on(event as 'grant.error', nameProfileRefusal);

  return provider;
}

type Step = (ctx: KoaContextWithOIDC, next: () => Promise<void>) => Promise<void>;

/**
 * Incremental consent (docs/org-consent.md): when the existing grant already covers every scope
 * asked, the request's scope widens to what the grant holds (within the client's scopes now), so
 * the token says all of it. When something is new, the consent page asks for it and sets the
 * scope itself (src/web/interactions.ts).
 */
function includeGrantedScopes(ctx: KoaContextWithOIDC, grant: InstanceType<Provider['Grant']>): void {
  const held = (grant.getOIDCScope() ?? '').split(' ').filter(Boolean);
  if (held.includes(LEGACY_FULL_ACCESS)) return;
  const requested = [...ctx.oidc.requestParamScopes];
  if (!requested.every((s) => held.includes(s))) return;
  const allowed = new Set(ctx.oidc.client?.scope?.split(' ') ?? []);
  ctx.oidc.params!.scope = [...new Set([...requested, ...held.filter((s) => allowed.has(s))])].join(' ');
}

/** The DPoP nonces' secret (32 bytes, as the library requires), derived from a cookie key. */
function dpopNonceSecret(cookieKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', cookieKey, '', 'dpop-nonce', 32));
}

/**
 * One DPoP header, of a bounded length (dpop.ts), before the provider reads it: Node joins
 * repeated headers, and the provider would verify whatever came. Refused as the token endpoint
 * refuses a proof (RFC 9449 7: 400 invalid_dpop_proof), with nothing read or written.
 */
const boundedDpopHeader: Step = async function boundedDpopHeader(ctx, next) {
  // The token and PAR endpoints are the provider's only ones that read proofs (a pushed request's
  // proof binds its code, RFC 9449 10.1; no userinfo here).
  if (ctx.method !== 'POST' || !(ctx.path === '/token' || ctx.path === '/par')) return next();
  const header = dpopHeader(ctx.headers, ctx.req.rawHeaders);
  if (typeof header !== 'object') return next();
  ctx.status = 400;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error: 'invalid_dpop_proof', error_description: header.refused };
};

/** A storage outage inside the provider is our 503 with a retry hint, not its 500. */
const storageOutagesAs503: Step = async function storageOutagesAs503(ctx, next) {
  await next();
  if (!ctx.state.storageUnavailable || ctx.status !== 500) return;
  ctx.status = UNAVAILABLE.status;
  ctx.set('Retry-After', String(UNAVAILABLE.retryAfter));
  const body = ctx.body as Record<string, unknown> | undefined;
  if (body && typeof body === 'object' && 'error' in body) Object.assign(body, oauthErrorAnswer(UNAVAILABLE.status, UNAVAILABLE.code, UNAVAILABLE.message).body);
};

/** Token and introspection answers as docs/endpoints.md describes them; discovery with our public addresses. */
function ourResponseShapes(config: Config, platform: string): Step {
  return async function ourResponseShapes(ctx, next) {
    await next();
    const body = ctx.body as Record<string, unknown> | undefined;
    if (!body || typeof body !== 'object') return;
    if (ctx.oidc?.route === 'token' || ctx.oidc?.route === 'introspection') {
      // Spec 2.2: token_type is exactly `bearer`; the provider hard-codes `Bearer`.
      if (body.token_type === 'Bearer') body.token_type = 'bearer';
      if (typeof body.scope === 'string') body.scope = visibleScope(body.scope);
    }
    // An access token's audience (RFC 8707): one stored without any is for the platform API.
    if (ctx.oidc?.route === 'introspection') introspectedAudience(body, platform);
    if (ctx.oidc?.route === 'discovery') publishOurAddresses(body, config);
  };
}

// Discovery builds URLs from the request's host; publish the configured public addresses, and the
// authorization endpoint on APP_URL (docs/endpoints.md).
function publishOurAddresses(metadata: Record<string, unknown>, config: Config): void {
  for (const [key, value] of Object.entries(metadata)) {
    if ((key.endsWith('_endpoint') || key === 'jwks_uri') && typeof value === 'string') {
      const { pathname } = new URL(value);
      metadata[key] = `${config.baseUrl}${pathname.slice(pathname.indexOf(PROVIDER_PATH))}`;
    }
  }
  metadata.authorization_endpoint = `${config.appUrl}${APP_AUTHORIZE_PATH}`;
  metadata.scopes_supported = [...ALL_SCOPES];
  metadata.response_modes_supported = ['query'];
  // Client ID metadata documents (docs/agents.md): said either way, for clients that look.
  metadata.client_id_metadata_document_supported = config.cimd.enabled;
  // Advertise exactly what works: this is an OAuth 2.0 server, not an OpenID Provider.
  for (const key of OPENID_ONLY_METADATA) delete metadata[key];
}

const OPENID_ONLY_METADATA = [
  'claims_supported',
  'claim_types_supported',
  'claims_parameter_supported',
  'subject_types_supported',
  'id_token_signing_alg_values_supported',
  'request_uri_parameter_supported',
  'request_parameter_supported',
];

/** The grant the provider is revoking: of the refresh token it holds, or of the authorization code replayed. */
async function grantBeingRevoked(ctx: KoaContextWithOIDC): Promise<string | undefined> {
  const refreshToken = ctx.oidc.entities.RefreshToken;
  if (refreshToken) return refreshToken.grantId;
  const code = ctx.oidc.params?.grant_type === 'authorization_code' ? ctx.oidc.params.code : undefined;
  return typeof code === 'string' ? (await ctx.oidc.provider.AuthorizationCode.find(code, { ignoreExpiration: true }))?.grantId : undefined;
}

/**
 * An introspection answer's `aud` (RFC 7662 2.2): the provider answers a stored audience; an active
 * access token stored without one (no `resource` asked, as every token before resources) is for
 * the platform API. Shared with the hot path (src/fast/introspection.ts), which must answer alike.
 */
export function introspectedAudience(body: Record<string, unknown>, platform: string): void {
  if (body.active === true && body.token_type !== undefined && body.aud === undefined) body.aud = platform;
}

/**
 * Whether a resource server may introspect another client's token (RFC 7662 2.1; see
 * features.introspection): an access token for the resource it serves (its resource URI, or the
 * platform API when it has none), with one of its scopes if it lists any.
 */
export function resourceServerMayIntrospect(client: object, token: WithAudience & { kind: string; scope?: string | undefined }, platform: string): boolean {
  const { resource_server: isResourceServer, introspect_scopes: wanted = [], resource_uri: serves } = factsOf(client);
  if (!isResourceServer || token.kind !== 'AccessToken') return false;
  if (!audienceOf(token, platform).includes(serves ?? platform)) return false;
  const scopes = (token.scope ?? '').split(' ');
  // An unscoped legacy token may do everything its user can: it carries every scope.
  return wanted.length === 0 || scopes.includes(LEGACY_FULL_ACCESS) || wanted.some((s) => scopes.includes(s));
}
