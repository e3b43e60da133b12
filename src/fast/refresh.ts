// The rotating refresh (RFC 6749 6; RFC 9700 4.14.2) of a confidential client, answered on the
// hot path (src/fast/dispatch.ts): apps refresh all the time, and the Koa app and the provider's
// request pipeline cost several times the work itself (docs/benchmark.md). The provider's models
// still decide and build everything — Client and its secret check (client-secrets.ts), the
// presented RefreshToken and its Grant as their find() verifies them, the new RefreshToken and
// AccessToken with their ids, lifetimes and payloads — as its grant does
// (lib/actions/grants/refresh_token.js); what differs is that the store is read once (the secret's
// mark, the token and its grant) and written once (the token spent, its successors saved, in one
// atomic step), and that the answer is written here.
//
// Only the plain case is answered here: grant_type, refresh_token and the client's credentials,
// nothing else; a live, unspent token of this client, of a live grant and an existing user. All
// else — a `scope` narrowing, a spent token (reuse detection revokes the grant), a wrong secret,
// a client over its budget, a twin within the grace window — is left to the provider, before
// anything was written. Once the token may be spent, the request is never handed over: the
// provider would take it for reuse.
import type Provider from 'oidc-provider';
import type { Logger } from '../log.ts';
import type { ArtifactStorage, RefreshRotation } from '../storage/artifacts.ts';
import { rateLimitHeaders, type BudgetState, type TokenEndpointLimits } from '../oauth/rate-limits.ts';
import type { RefreshGrace } from '../oauth/refresh-grace.ts';
import { visibleScope } from '../scopes.ts';
import { oauthErrorAnswer } from '../http/envelope.ts';
import { UNAVAILABLE } from '../http/error-view.ts';
import { clientOfSecret, HAND_OVER, TOKEN_ENDPOINT_HEADERS, singleParams, type AnswerBackChannel } from './back-channel.ts';
import { secretCredentials } from './credentials.ts';
import type { ClientSecrets } from '../oauth/client-secrets.ts';
import { isLive } from '../oauth/token-liveness.ts';
import { asNewToken, emitRefreshEvents, fromStore, toSave } from '../seams/oidc-provider.ts';
import { refusedAs } from '../credentials/format.ts';
import { factsOf, factsWithId } from '../directory/facts.ts';

const GRANT = 'refresh_token';
// Exactly these, each at most once: anything more is the provider's to read.
const PARAMS = ['grant_type', 'refresh_token', 'client_id', 'client_secret'] as const;

export interface RefreshDeps {
  provider: Provider;
  secrets: ClientSecrets;
  limits: TokenEndpointLimits;
  /** The grace window's single flights and each client's window (refresh-grace.ts). */
  grace: RefreshGrace;
  /** The store's one-step read and atomic rotation (ArtifactStorage); without them the provider rotates. */
  rotation: RefreshRotation | undefined;
  /** The store's commands sent side by side, written together (ArtifactStorage). */
  together: ArtifactStorage['together'];
  accountExists: (accountId: string) => Promise<boolean>;
  log: Logger;
}

export function refreshGrant(deps: RefreshDeps): AnswerBackChannel | undefined {
  const { provider, secrets, limits, grace, rotation, together } = deps;
  if (!rotation) return undefined;
  type Client = NonNullable<Awaited<ReturnType<typeof clientOfSecret>>>['client'];
  type Token = InstanceType<typeof provider.RefreshToken>;
  type Grant = InstanceType<typeof provider.Grant>;

  /**
   * The presented token and its grant, when the provider would rotate them as we do here: read in
   * one round trip, then verified and made models as the provider's RefreshToken.find and
   * Grant.find make them.
   */
  async function rotatable(value: string, client: Client) {
    const stored = await rotation!.read(value);
    const token = stored && (await fromStore<Token>(provider.RefreshToken, stored.token));
    if (!stored || !token?.grantId || token.clientId !== client.clientId || token.consumed) return undefined;
    if (token.isSenderConstrained() || token.attestationJkt || token.rar || token.resource !== undefined) return undefined;
    // A token saved before it kept its grant's key: the grant is read on its own.
    const grant = stored.grant === undefined ? await provider.Grant.find(token.grantId, { ignoreExpiration: true }) : stored.grant && (await fromStore<Grant>(provider.Grant, stored.grant));
    // The rule of every path (token-liveness.ts); the client authenticated, so it is usable.
    if (!grant || !isLive(token, grant, true)) return undefined;
    if (!(await deps.accountExists(token.accountId!))) return undefined;
    return { token, grant };
  }

  /** The successors, field by field as the provider's refresh grant makes them. */
  async function successors(found: NonNullable<Awaited<ReturnType<typeof rotatable>>>, client: Client) {
    const { token, grant } = found;
    const refresh = asNewToken(new provider.RefreshToken({
      accountId: token.accountId,
      acr: token.acr,
      amr: token.amr,
      authTime: token.authTime,
      claims: token.claims,
      client,
      expiresWithSession: token.expiresWithSession,
      iiat: token.iiat,
      grantId: token.grantId,
      gty: token.gty,
      nonce: token.nonce,
      resource: token.resource,
      rotations: typeof token.rotations === 'number' ? token.rotations + 1 : 1,
      scope: token.scope,
      sessionUid: token.sessionUid,
      sid: token.sid,
    } as ConstructorParameters<typeof provider.RefreshToken>[0]));
    if (refresh.gty && !refresh.gty.endsWith(GRANT)) refresh.gty = `${refresh.gty} ${GRANT}`;
    const access = asNewToken(new provider.AccessToken({
      accountId: token.accountId,
      client,
      expiresWithSession: refresh.expiresWithSession,
      grantId: refresh.grantId,
      gty: refresh.gty,
      sessionUid: refresh.sessionUid,
      sid: refresh.sid,
    } as ConstructorParameters<typeof provider.AccessToken>[0]));
    access.claims = refresh.claims;
    access.scope = grant.getOIDCScopeFiltered(refresh.scopes);
    const saved = { refresh: await toSave(refresh), access: await toSave(access) };
    const scope = refresh.scope ? access.scope : access.scope || undefined;
    // The provider's token response (buildTokenResponse), as src/oauth/provider.ts reshapes it.
    const body = {
      access_token: access.jti,
      expires_in: access.expiration,
      refresh_token: refresh.jti,
      scope: scope === undefined ? undefined : visibleScope(scope),
      token_type: 'bearer',
    };
    return { ...saved, body, models: { refresh, access } };
  }

  return async function answerRefresh({ headers, form, ip, message }) {
    const params = singleParams(form, PARAMS, true);
    const presented = params?.grant_type === GRANT ? params.refresh_token : undefined;
    const credentials = presented && secretCredentials(headers, params!);
    // A metadata-document client (a URL client_id, src/cimd/) is never plain: its document may
    // have to be fetched and its tier sets the refresh token's lifetime — the provider's to do.
    // secretCredentials takes only ids of the registry's form, so it is handed over here, before
    // any read or write (test/fast-path-parity.test.ts).
    if (!presented || !credentials) return HAND_OVER.not_plain;
    // A malformed credential of ours: the provider refuses it, also without reading a store (docs/credentials.md).
    if (refusedAs('refresh_token', presented)) return HAND_OVER.token;
    if (limits.heldBack(credentials.clientId, ip)) return HAND_OVER.held_back;
    const { client, secretId } = (await clientOfSecret(provider, secrets, credentials.clientId, credentials.secret)) ?? {};
    if (!client?.grantTypeAllowed(GRANT) || client.tlsClientCertificateBoundAccessTokens || client.dpopBoundAccessTokens) return HAND_OVER.client;
    // The secret still active, and the token with its grant: both read at once, in one write.
    const [active, found] = await together(() => Promise.all([secrets.isActive(secretId!), rotatable(presented, client)]));
    if (!active) return HAND_OVER.secret;
    if (!found) return HAND_OVER.token;
    // Over its budget of refreshes for this user: the provider refuses it (429), as it would.
    if (limits.refreshHeldBack(client.clientId, found.token.accountId!)) return HAND_OVER.held_back;
    const next = await successors(found, client);
    // The grace window's single flight is claimed and settled with this answer in the same step:
    // a retry or twin gets the same answer from the provider (refresh-grace.ts), and when another
    // presentation holds the flight already, this one is the provider's to answer too.
    // No DPoP proof here (one is the provider's to read): a retry must send none either.
    const answered = { clientId: client.clientId, body: next.body };
    const seconds = grace.secondsFor(factsOf(client));
    // The client authenticated: its budget counts this request (rate-limits.ts), sent with the
    // rotation in one write; if the provider answers after all, it does not count it again.
    let spent: Promise<BudgetState | undefined> | undefined;
    let rotated: Awaited<ReturnType<RefreshRotation['rotate']>>;
    try {
      rotated = await together(() => {
        // With the (client, user) count, which holds back later refreshes: one command (rate-limits.ts).
        spent = limits.spendWithRefresh(factsWithId(client), ip, message, found.token.accountId!).catch(() => undefined);
        return rotation.rotate(presented, next.refresh, next.access, seconds > 0 ? grace.flights.settled(presented, answered, seconds) : undefined);
      });
    } catch (err) {
      // The store failed mid-step: the token may be spent. A 503 to retry; never the provider.
      // Its message only: a Redis error carries the command's arguments (keys and payloads).
      deps.log.error({ message: (err as Error).message }, 'refresh rotation failed');
      // The client authenticated: its budget is told, as on any answer (if it could be counted).
      const budget = await spent;
      const told = budget ? rateLimitHeaders(budget) : {};
      return oauthErrorAnswer(UNAVAILABLE.status, UNAVAILABLE.code, UNAVAILABLE.message, { ...TOKEN_ENDPOINT_HEADERS, 'Retry-After': String(UNAVAILABLE.retryAfter), ...told });
    }
    const budget = await spent;
    // Spent meanwhile (reuse detection), its grant revoked, or a twin's flight: nothing was written.
    if (rotated !== 'rotated') return HAND_OVER.not_rotated;
    // Nothing after the rotation may throw: the listener would hand the request to the provider,
    // which would take the spent token for reuse.
    secrets.used(secretId!);
    try {
      // The provider's events, as its path emits them (src/oauth/events.ts: counted, the grant's last use).
      emitRefreshEvents(provider, { consumed: found.token, ...next.models, grant: found.grant, client, ip, headers });
    } catch (err) {
      deps.log.error({ message: (err as Error).message }, 'a listener of the refresh events failed');
    }
    return { status: 200, headers: budget ? { ...TOKEN_ENDPOINT_HEADERS, ...rateLimitHeaders(budget) } : TOKEN_ENDPOINT_HEADERS, body: next.body };
  };
}
