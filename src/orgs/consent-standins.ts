// STAND-INS (H3, branch orgs-consent) for the pieces of H2 (src/orgs/bindings.ts) and H4
// (src/orgs/installations.ts) that the consent flow calls, written while those branches had not
// landed them. The consent flow uses them only through `OrgConsentServices`; the lead wires the
// real ones in src/system.ts / src/web/index.ts and deletes this file.
import type Provider from 'oidc-provider';
import { randomBytes } from 'node:crypto';
import type { Db } from '../storage/db.ts';
import { saveInstallation, settleRequests } from './store.ts';

export interface Binding {
  accountId: string;
  clientId: string;
  orgId: number | null;
  teamIds: number[];
  installationId: number | null;
}

/** What the consent flow needs of the binding (H2) and installation (H4) services. */
export interface OrgConsentServices {
  /** A new grant whose id marks it bound (H2's createBoundGrant). */
  createBoundGrant(provider: Provider, owner: { accountId: string; clientId: string }): InstanceType<Provider['Grant']>;
  /** Records the binding of a saved grant (H2's grantBindings(db).bind). */
  bind(grantId: string, binding: Binding): Promise<void>;
  /** The binding of a grant, if bound (H2's grantBindings(db).forGrant). */
  forGrant(grantId: string): Promise<Binding | undefined>;
  /** Creates or updates the organization's installation (H4's installApp); returns its id. */
  installApp(input: { clientId: string; orgId: number; allTeams: boolean; teamIds: number[]; scopes: string[]; by: number }): Promise<{ id: number }>;
}

/**
 * In-memory bindings (one process), marked ids as H2 notes describe ('bound.' + 43 chars), and an
 * installation saved with H1's store (no revocation of members' grants, no webhook: H4's job).
 */
export function standInOrgServices(db: Db): OrgConsentServices {
  const bindings = new Map<string, Binding>();
  return {
    createBoundGrant(provider, { accountId, clientId }) {
      const Grant = provider.Grant as unknown as new (input: object) => InstanceType<Provider['Grant']>;
      return new Grant({ jti: `bound.${randomBytes(32).toString('base64url')}`, accountId, clientId });
    },
    async bind(grantId, binding) {
      bindings.set(grantId, binding);
    },
    async forGrant(grantId) {
      return grantId.startsWith('bound.') ? bindings.get(grantId) : undefined;
    },
    async installApp({ clientId, orgId, allTeams, teamIds, scopes, by }) {
      return db.transaction(async (trx) => {
        const installation = await saveInstallation(trx, { clientId, orgId, allTeams, teamIds, scopes, installedBy: by });
        await settleRequests(trx, { clientId, orgId }, 'approved');
        return installation;
      });
    },
  };
}
