// Introspection (RFC 7662) of a live access token by a client that authenticates with its secret:
// the question resource servers and gateways ask on every call they serve, answered on the hot
// path (src/fast/dispatch.ts) without the Koa app and the provider's request pipeline, which cost
// more than the answer (docs/benchmark.md). The same models decide — the provider's Client, its
// secret check (client-secrets.ts), and whether the token is live by the rule of every path
// (token-liveness.ts: AccessToken.find through the token cache, Grant.find, Client.find) — and the
// answer is the one the provider gives, byte for byte (test/introspection.test.ts compares them).
//
// Only that plain case is answered here. Anything else — another content type, a query string, a
// repeated or missing parameter, an unusual credential, a secret that does not match, a client
// over its budget, a token that is not a live access token of a live grant, one this client may
// not see, a store that fails — returns undefined, and the provider answers it, errors, counters
// and events included.
import type Provider from 'oidc-provider';
import { rateLimitHeaders, type TokenEndpointLimits } from '../oauth/rate-limits.ts';
import { introspectedAudience, resourceServerMayIntrospect } from '../oauth/provider.ts';
import { visibleScope } from '../scopes.ts';
import { clientOfSecret, HAND_OVER, PROVIDER_HEADERS, singleParams, type AnswerBackChannel } from './back-channel.ts';
import { secretCredentials } from './credentials.ts';
import type { ClientSecrets } from '../oauth/client-secrets.ts';
import { liveAccessTokenOf } from '../oauth/token-liveness.ts';
import type { ArtifactStorage } from '../storage/artifacts.ts';
import { hasOnlyKnownExtra } from './assumptions.ts';
import { refusedAs } from '../credentials/format.ts';
import { factsWithId } from '../directory/facts.ts';

// The parameters the provider reads at this endpoint (lib/actions/introspection.js, with our
// client authentication methods); it refuses any of them sent twice and ignores others.
const PARAMS = ['token', 'token_type_hint', 'client_id', 'client_secret'] as const;

/**
 * `platform`: the platform API's resource (src/oauth/resources.ts), the audience of a token stored
 * without one; `together`: the store's commands sent side by side, written together (ArtifactStorage).
 */
export function introspection(provider: Provider, secrets: ClientSecrets, limits: TokenEndpointLimits, platform: string, together: ArtifactStorage['together']): AnswerBackChannel {
  type AccessToken = InstanceType<Provider['AccessToken']>;
  /** A live access token, which the provider would describe as we do here. */
  async function describable(found: AccessToken) {
    const live = await liveAccessTokenOf(provider, found);
    // Extra claims: only a grant's binding (org_id, team_ids), which the answer spreads as the provider does.
    if (!live || live.token.isSenderConstrained() || live.token.rar || !hasOnlyKnownExtra(live.token.extra)) return undefined;
    return live;
  }

  return async function answerIntrospection({ headers, form, ip, message }) {
    const params = singleParams(form, PARAMS);
    const credentials = params?.token && secretCredentials(headers, params);
    if (!params || !credentials) return HAND_OVER.not_plain;
    // Not an access token (a malformed one of ours, or a refresh token): the provider's to answer (docs/credentials.md).
    if (refusedAs('access_token', params.token!)) return HAND_OVER.token;
    if (limits.heldBack(credentials.clientId, ip)) return HAND_OVER.held_back;
    const { client, secretId } = (await clientOfSecret(provider, secrets, credentials.clientId, credentials.secret)) ?? {};
    if (!client) return HAND_OVER.client;
    // The secret still active, and the token with its grant: the token first (the token cache
    // holds it in memory), then the secret's mark and the grant, written together (one round trip).
    const found = await provider.AccessToken.find(params.token!);
    const [active, live] = await together(() => Promise.all([secrets.isActive(secretId!), found && describable(found)]));
    if (!active) return HAND_OVER.secret;
    if (!live) return HAND_OVER.token;
    const { token } = live;
    // The provider reads the token's client (for pairwise subjects, which we never configure).
    if (token.clientId !== client.clientId && (!resourceServerMayIntrospect(client, token, platform) || live.client.subjectType !== 'public')) return HAND_OVER.not_visible;
    // As the provider records and counts it: after the answer is decided, before it is sent (rate-limits.ts).
    secrets.used(secretId!);
    const budget = await limits.spend(factsWithId(client), ip, message).catch(() => undefined);
    // The provider's fields in its order, as src/oauth/provider.ts reshapes them (ourResponseShapes):
    // active and sub first (set before the rest), then the token's extra claims (a bound grant's
    // org_id and team_ids), then the others.
    const scope = token.scope || undefined;
    const body = {
      active: true,
      sub: token.accountId,
      ...token.extra,
      client_id: token.clientId,
      exp: token.exp,
      iat: token.iat,
      sid: token.sid,
      iss: provider.issuer,
      jti: token.jti !== params.token ? token.jti : undefined,
      aud: token.aud,
      scope: scope === undefined ? undefined : visibleScope(scope),
      token_type: token.tokenType === 'Bearer' ? 'bearer' : token.tokenType,
    };
    // Its audience as the provider's answer says it (ourResponseShapes in src/oauth/provider.ts).
    introspectedAudience(body, platform);
    return { status: 200, headers: budget ? { ...PROVIDER_HEADERS, ...rateLimitHeaders(budget) } : PROVIDER_HEADERS, body };
  };
}
