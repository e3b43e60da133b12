// An administrator's decisions on metadata-document clients (docs/agents.md), for the review page
// (src/web/admin-review.ts) and the operator scripts (src/admin/): approve (the full tier, for the
// scopes, redirect URIs and links its document asked for when last seen: what the administrator
// saw, recorded with the decision), reject (invalid_client from then on, and everything it was
// issued revoked), decide a pending change (what an approved client's document asks for beyond
// its approval: src/cimd/approval.ts), block a host (every client whose document it serves refused, now and
// later, with everything they were issued), unblock. Each is recorded in the audit trail.
import type { ClientDeps } from '../clients/service.ts';
import type { Actor } from '../clients/model.ts';
import { recordAudit } from '../audit.ts';
import { ConflictError, InputError, NotFoundError } from '../errors.ts';
import { asksOf, blockedHosts, blockHost, findCimdClient, listCimdClients, setApproval, setChangeRejected, setHighTrust, setStatus, unblockHost, type CimdClientRow } from '../cimd/store.ts';
import { widenApproval, type CimdPendingChange, type ClientAsks, type ClientDocLinks } from '../cimd/approval.ts';
import { blockName } from '../cimd/host-blocks.ts';
import { mayMove, type CimdStatus } from '../directory/status.ts';

type Deps = Pick<ClientDeps, 'db' | 'records' | 'artifacts'>;

export { listCimdClients, findCimdClient, blockedHosts };

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

/** What a decision was made on: the fingerprint the review page showed (CimdClientRow.seen), when it has one. */
export interface Seen {
  seen?: string | undefined;
}

const changedSinceSeen = () => new ConflictError('what this app asks for changed since it was shown: nothing was decided; look at it again');

export async function decideCimdClient(deps: Deps, clientId: string, to: Exclude<CimdStatus, 'unreviewed'>, by: Actor, { seen }: Seen = {}): Promise<CimdClientRow> {
  await seenClient(deps, clientId);
  await deps.db.transaction(async (trx) => {
    const current = (await findCimdClient(trx, clientId, { lock: true }))!;
    if (current.status === to) return;
    // Always possible for these two decisions; asked all the same, so that one table says so.
    if (!mayMove(current.registered ? 'registered' : 'document', current.status, to)) throw new ConflictError(`a ${current.status} client cannot become ${to}`);
    if (to === 'approved' && seen !== undefined && seen !== current.seen) throw changedSinceSeen();
    // An approval covers what its document asked for as last seen: what the review showed.
    const covers = to === 'approved' ? asksOf(current) : undefined;
    await setStatus(trx, deps.records, clientId, to, by.actor, covers);
    const details = { from: current.status, host: current.host, ...(covers ? { approved: approvalJson(covers) } : {}) };
    await recordAudit(trx, { actor: by.actor, action: `cimd.${to}`, clientId, details: { ...details, ...(by.reason ? { reason: by.reason } : {}) } });
  });
  // Also when already rejected: repeating it sweeps again what a first run could not reach.
  if (to === 'rejected') await revokeIssued(deps, clientId);
  return (await findCimdClient(deps.db, clientId))!;
}

/**
 * An administrator's high-trust mark on a metadata-document or registered client (the profile:
 * src/oauth/high-trust.ts, docs/security.md#the-high-trust-profile). Only one that authenticates with
 * keys as last seen: what else it asks is its document's or registration's. Should its document
 * later say otherwise, its requests are refused, naming why (src/directory/view.ts).
 */
export async function setCimdHighTrust(deps: Deps, clientId: string, on: boolean, by: Actor): Promise<CimdClientRow> {
  await seenClient(deps, clientId);
  await deps.db.transaction(async (trx) => {
    const current = (await findCimdClient(trx, clientId, { lock: true }))!;
    const source = current.registered ? 'its registration' : 'its document (as last fetched)';
    if (on && current.authMethod !== 'private_key_jwt') throw new InputError(`the high-trust profile authenticates with keys only (private_key_jwt): ${source} says token_endpoint_auth_method ${current.authMethod ?? 'client_secret_basic'}`);
    if (current.highTrust === on) return;
    await setHighTrust(trx, deps.records, clientId, on);
    await recordAudit(trx, { actor: by.actor, action: 'client.high_trust_set', clientId, details: { from: current.highTrust, to: on } });
  });
  return (await findCimdClient(deps.db, clientId))!;
}

/**
 * An administrator's decision on what an approved client's document asks for beyond its approval:
 * approved, the approval covers it from then on; rejected, the client keeps what was approved and
 * the change is not shown again while its document asks for exactly that.
 */
export async function decideCimdChange(deps: Deps, clientId: string, approve: boolean, by: Actor, { seen }: Seen = {}): Promise<CimdClientRow> {
  await seenClient(deps, clientId);
  await deps.db.transaction(async (trx) => {
    const current = (await findCimdClient(trx, clientId, { lock: true }))!;
    const change = current.pendingChange;
    if (current.status !== 'approved' || !current.approved || !change || (!approve && change.rejected)) {
      throw new NotFoundError(`${clientId} has no pending change: ${current.status === 'approved' ? 'its document asks for nothing beyond what was approved' : `it is ${current.status}; decide on the app itself`}`);
    }
    if (seen !== undefined && seen !== current.seen) throw changedSinceSeen();
    if (approve) await setApproval(trx, deps.records, clientId, widenApproval(current.approved, change));
    else await setChangeRejected(trx, clientId, change);
    const details = { host: current.host, ...changeJson(change), ...(by.reason ? { reason: by.reason } : {}) };
    await recordAudit(trx, { actor: by.actor, action: approve ? 'cimd.change_approved' : 'cimd.change_rejected', clientId, details });
  });
  return (await findCimdClient(deps.db, clientId))!;
}

const linksJson = (links: ClientDocLinks) => ({ policy_uri: links.policyUri, tos_uri: links.tosUri });
const approvalJson = (a: ClientAsks) => ({ scopes: a.scopes, redirect_uris: a.redirectUris, links: linksJson(a.links) });

/** A pending change as the scripts and the audit trail spell it. */
const changeJson = (change: CimdPendingChange) => ({
  add_scopes: change.addScopes,
  add_redirect_uris: change.addRedirectUris,
  set_links: change.setLinks && linksJson(change.setLinks),
});

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
  links: linksJson(c.links),
  // What the approval covered, and what the document asks for beyond it (approval.ts).
  approved: c.approved && approvalJson(c.approved),
  pending_change: c.pendingChange && { ...changeJson(c.pendingChange), status: c.pendingChange.rejected ? 'rejected' : 'pending' },
  token_endpoint_auth_method: c.authMethod,
  // Held to the high-trust profile by an administrator (clients set-high-trust; docs/security.md).
  high_trust: c.highTrust,
  users: c.users,
  first_seen_at: c.firstSeenAt.toISOString(),
  last_seen_at: c.lastSeenAt.toISOString(),
});
