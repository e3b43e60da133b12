// An administrator's decisions on metadata-document clients (docs/agents.md), for the review page
// (src/web/admin-review.ts) and the operator scripts (src/admin/): approve (the full tier: the
// scopes its document asks for, as any approved client), reject (invalid_client from then on, and
// everything it was issued revoked), block a host (every client whose document it serves refused,
// now and later, with everything they were issued), unblock. Each is recorded in the audit trail.
import type { ClientDeps } from '../clients/service.ts';
import type { Actor } from '../clients/model.ts';
import { recordAudit } from '../audit.ts';
import { NotFoundError } from '../errors.ts';
import { blockedHosts, blockHost, findCimdClient, listCimdClients, setStatus, unblockHost, type CimdClientRow, type CimdStatus } from './store.ts';
import { isUrlClientId } from './client-id.ts';
import { blockName } from './host-blocks.ts';

type Deps = Pick<ClientDeps, 'db' | 'records' | 'artifacts'>;

export { listCimdClients, findCimdClient, blockedHosts };

/** Whether an id names a metadata-document client (a URL) or an openly registered one (a row of cimd_clients). */
export async function isCimdClientId(db: Deps['db'], clientId: string): Promise<boolean> {
  return isUrlClientId(clientId) || (await findCimdClient(db, clientId)) !== undefined;
}

async function seenClient(deps: Deps, clientId: string): Promise<CimdClientRow> {
  const row = await findCimdClient(deps.db, clientId);
  if (!row) throw new NotFoundError(`no client with id ${clientId} has been seen`);
  return row;
}

/** Everything the client was issued ends: its tokens, codes, grants, and its users' "apps with access" rows. */
async function revokeIssued(deps: Deps, clientId: string): Promise<void> {
  await deps.artifacts.revokeClient(clientId);
  await deps.db('user_grants').where('client_id', clientId).delete();
}

export async function decideCimdClient(deps: Deps, clientId: string, to: Exclude<CimdStatus, 'unreviewed'>, by: Actor): Promise<CimdClientRow> {
  const current = await seenClient(deps, clientId);
  if (current.status !== to) {
    await deps.db.transaction(async (trx) => {
      await setStatus(trx, deps.records, clientId, to, by.actor);
      await recordAudit(trx, { actor: by.actor, action: `cimd.${to}`, clientId, details: { from: current.status, host: current.host, ...(by.reason ? { reason: by.reason } : {}) } });
    });
  }
  // Also when already rejected: repeating it sweeps again what a first run could not reach.
  if (to === 'rejected') await revokeIssued(deps, clientId);
  return (await findCimdClient(deps.db, clientId))!;
}

export async function blockCimdHost(deps: Deps, value: string, by: Actor): Promise<{ host: string; blocked: true; clients: string[] }> {
  const host = blockName(value);
  const clients = await deps.db.transaction(async (trx) => {
    const ids = await blockHost(trx, deps.records, host, by.actor, by.reason);
    await recordAudit(trx, { actor: by.actor, action: 'cimd.host_blocked', details: { host, clients: ids, ...(by.reason ? { reason: by.reason } : {}) } });
    return ids;
  });
  for (const clientId of clients) await revokeIssued(deps, clientId);
  return { host, blocked: true, clients };
}

export async function unblockCimdHost(deps: Deps, value: string, by: Actor): Promise<{ host: string; blocked: false }> {
  const host = blockName(value);
  await deps.db.transaction(async (trx) => {
    if (!(await unblockHost(trx, deps.records, host))) throw new NotFoundError(`${host} is not blocked`);
    await recordAudit(trx, { actor: by.actor, action: 'cimd.host_unblocked', details: { host, ...(by.reason ? { reason: by.reason } : {}) } });
  });
  return { host, blocked: false };
}

/** A client as the operator scripts print it. */
export const cimdClientJson = (c: CimdClientRow) => ({
  client_id: c.clientId,
  // A registered client names hosts only in its redirect URIs, which nobody checked: it has none
  // of its own (a document client's is its URL's, which serves the document).
  kind: c.registered ? 'registered' : 'metadata_document',
  host: c.registered ? null : c.host,
  status: c.status,
  host_blocked: c.hostBlocked,
  name: c.name,
  redirect_uris: c.redirectUris,
  scopes: c.scopes,
  token_endpoint_auth_method: c.authMethod,
  users: c.users,
  first_seen_at: c.firstSeenAt.toISOString(),
  last_seen_at: c.lastSeenAt.toISOString(),
});
