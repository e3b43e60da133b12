// Grants beyond what the provider does on its own: revocation with all their tokens and the legacy
// marker (the record of who granted what to which client: src/apps-with-access/user-grants.ts).
import type Provider from 'oidc-provider';
import type { Grant } from 'oidc-provider';
import { LEGACY_FULL_ACCESS } from '../scopes.ts';
import { revokeGrantWith, type GrantRevocation } from '../storage/client-artifacts.ts';

/** A grant and what it issued, through the provider's models (each access token's deletion announced). */
const providerGrants = (provider: Provider): GrantRevocation => ({
  grant: (grantId) => provider.Grant.adapter.destroy(grantId),
  artifacts: async (grantId) => {
    await Promise.all([provider.AccessToken, provider.RefreshToken, provider.AuthorizationCode].map((model) => model.revokeByGrantId(grantId)));
  },
});

/** Revokes a grant with every code and token issued from it, in the order revokeGrantWith says. */
export const revokeGrant = (provider: Provider, grantId: string): Promise<void> => revokeGrantWith(providerGrants(provider), grantId);

export function isLegacyGrant(grant: Grant): boolean {
  return (grant.getOIDCScope() ?? '').split(' ').includes(LEGACY_FULL_ACCESS);
}
