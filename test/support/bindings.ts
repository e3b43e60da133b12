// Tokens of grants bound to an organization and teams (src/orgs/bindings.ts), made as consent in an
// organization's context makes them — a marked grant, its binding, the grant saved — and issued by
// the provider's own token endpoint from an authorization code of that grant (its models, as
// bench/lib/seed.ts mints), so that the token's claims come from the provider's request path.
import { expect } from 'vitest';
import type { TestServer } from './server.ts';
import { REDIRECT, type TestClient } from './fixtures.ts';
import { tokenRequest } from './oauth.ts';
import { createBoundGrant } from '../../src/orgs/bindings.ts';
import { recordUserGrant } from '../../src/apps-with-access/user-grants.ts';

export interface BindingSpec {
  orgId: number | null;
  teamIds: number[];
  installationId?: number | null;
}

/** A saved grant for `scope`: bound as `binding` says, unbound (the library's own id) without one; `bind: false` leaves a marked grant unbound. */
export async function grantFor(server: TestServer, client: TestClient, accountId: string, scope: string, binding?: BindingSpec, { bind = true } = {}): Promise<string> {
  const { provider, bindings, db } = server.system;
  const grant = binding ? createBoundGrant(provider, { accountId, clientId: client.client_id }) : new provider.Grant({ accountId, clientId: client.client_id });
  grant.addOIDCScope(scope);
  if (binding && bind) {
    await bindings.bind(db, grant.jti!, { accountId, clientId: client.client_id, orgId: binding.orgId, teamIds: binding.teamIds, installationId: binding.installationId ?? null });
  }
  const grantId = await grant.save();
  // As consent records it ("apps with access", the grant's last use).
  await recordUserGrant(db, accountId, client.client_id, grantId, scope.split(' '));
  return grantId;
}

/** The token response of a code exchange for a grant (the provider's token endpoint). */
export async function tokensOfGrant(server: TestServer, client: TestClient, accountId: string, grantId: string, scope: string) {
  const { provider } = server.system;
  const found = await provider.Client.find(client.client_id);
  // As the authorization endpoint saves one (no gty: the code grant names itself).
  const properties = { accountId, client: found!, grantId, scope, redirectUri: REDIRECT, authTime: Math.floor(Date.now() / 1000) };
  const code = await new provider.AuthorizationCode(properties as ConstructorParameters<typeof provider.AuthorizationCode>[0]).save();
  const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...client });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { access_token: string; refresh_token: string; scope: string };
}

/** A bound (or, without `binding`, unbound) grant and its first tokens. */
export async function boundTokensFor(server: TestServer, client: TestClient, accountId: string, scope: string, binding?: BindingSpec, options?: { bind?: boolean }) {
  const grantId = await grantFor(server, client, accountId, scope, binding, options);
  return { grantId, ...(await tokensOfGrant(server, client, accountId, grantId, scope)) };
}
