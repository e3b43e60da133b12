// One rule for whether a token may still be used, on every path that answers for one: /v2/me and
// the gateway check (src/api/access.ts), introspection (introspection.ts, and the provider's own
// through its allowedPolicy in provider.ts), the refresh hot path (refresh.ts) and a retry within
// the grace window (refresh-grace.ts). The provider's refresh grant and introspection check the
// same (its validateGrant and introspection action); test/token-liveness.test.ts holds every path
// to one answer.
//
// A token is live when it is present (not revoked), unexpired, its grant is present, unexpired and
// the same client's and user's, and its client is usable (approved, or pending for its owner).
// Revoking a grant destroys the grant first (grants.ts), so from that moment every path refuses
// its tokens, also one a racing rotation saves after the sweep.
import { errors } from 'oidc-provider';
import type Provider from 'oidc-provider';

/**
 * The token's client as the provider finds it, undefined when it cannot be used: a metadata-document
 * client (src/cimd/) whose document is now refused is invalid_client there, and here not usable.
 */
export function usableClient(provider: Provider, clientId: string) {
  return provider.Client.find(clientId).catch((err: unknown) => {
    if (err instanceof errors.InvalidClient) return undefined;
    throw err;
  });
}

interface TokenFacts {
  readonly isExpired: boolean;
  clientId?: string | undefined;
  accountId?: string | undefined;
  grantId?: string | undefined;
}

interface GrantFacts {
  readonly isExpired: boolean;
  clientId?: string | undefined;
  accountId?: string | undefined;
}

/** The rule (see the header); `clientUsable`: the token's client is one the provider finds. */
export function isLive(token: TokenFacts | undefined, grant: GrantFacts | null | undefined, clientUsable: boolean): boolean {
  if (!token || token.isExpired || !token.clientId || !token.accountId || !token.grantId) return false;
  if (!grant || grant.isExpired || grant.clientId !== token.clientId || grant.accountId !== token.accountId) return false;
  return clientUsable;
}

/**
 * An access token by its value, with its grant and client, when it is live. Three reads, the
 * grant's and the client's together: the token (the token cache on Redis), its grant, its client
 * (the record cache, in memory while the change feed runs).
 */
export async function liveAccessToken(provider: Provider, value: string) {
  const token = await provider.AccessToken.find(value);
  return token && liveAccessTokenOf(provider, token);
}

/**
 * A found access token with its grant and client, when it is live. The grant's read is sent at
 * once, so that a caller can write its own reads beside it (introspection.ts).
 */
export async function liveAccessTokenOf(provider: Provider, token: InstanceType<Provider['AccessToken']>) {
  if (!token.grantId || !token.clientId) return undefined;
  const [grant, client] = await Promise.all([provider.Grant.find(token.grantId, { ignoreExpiration: true }), usableClient(provider, token.clientId)]);
  return isLive(token, grant, Boolean(client)) ? { token, grant: grant!, client: client! } : undefined;
}
