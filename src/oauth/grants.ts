// Grants beyond what the provider does on its own.
import type Provider from 'oidc-provider';
import type { Grant } from 'oidc-provider';
import { LEGACY_FULL_ACCESS } from './scopes.ts';

/** Revokes a grant with every code and token issued from it. */
export async function revokeGrant(provider: Provider, grantId: string): Promise<void> {
  await Promise.all([provider.AccessToken, provider.RefreshToken, provider.AuthorizationCode].map((model) => model.revokeByGrantId(grantId)));
  await (await provider.Grant.find(grantId))?.destroy();
}

export function isLegacyGrant(grant: Grant): boolean {
  return (grant.getOIDCScope() ?? '').split(' ').includes(LEGACY_FULL_ACCESS);
}
