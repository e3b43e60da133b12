// Edits of a client by its owner (developer settings), and administrators' decisions on the
// pending changes they leave. Each is one transaction: the plan (edit-plan.ts) applied, the
// pending change written, the audit rows — or nothing at all.
import type { Db } from '../storage/db.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { recordAudit } from '../audit.ts';
import { assertSafeToSetScopes } from './legacy.ts';
import { planEdit, type RequestedEdit } from './edit-plan.ts';
import { isUnscopedLegacy, MAX_REDIRECT_URIS, type Actor, type ChangeRequest, type ClientLinks, type ClientRecord, type PendingChange } from './model.ts';
import { validateClientLinks, validateClientName } from './validate.ts';
import { changeClient, type ChangeDeps } from './service.ts';
import * as repo from './repository.ts';
import { webhookEvent } from '../webhooks/events.ts';

export const pendingChangeOf = (db: Db, clientId: string) => repo.pendingChangeOf(db, clientId);
export const pendingChanges = (db: Db) => repo.pendingChanges(db);

export interface EditOutcome {
  client: ClientRecord;
  pending?: PendingChange;
}

const sameList = (a: readonly string[], b: readonly string[]) => a.join('\n') === b.join('\n');

/**
 * Applies an owner's edit: narrowing now, widening of a reviewed client as a pending change
 * (edit-plan.ts). A link the form did not send stays as it is.
 */
export async function editClient(deps: ChangeDeps, clientId: string, requested: Omit<RequestedEdit, 'links'> & { links?: ClientLinks }, by: Actor, { force = false } = {}): Promise<EditOutcome> {
  return changeClient(deps, clientId, by, async (trx, current) => {
    const links = validateClientLinks({ policyUri: requested.links?.policyUri ?? current.policyUri ?? '', tosUri: requested.links?.tosUri ?? current.tosUri ?? '' });
    const plan = planEdit(current, { scopes: requested.scopes, redirectUris: requested.redirectUris, links });
    const linksChange = plan.links.policyUri !== current.policyUri || plan.links.tosUri !== current.tosUri;
    if (linksChange) await repo.updateClient(trx, clientId, plan.links);
    const scopesChange = !sameList(plan.scopes, current.scopes);
    // Selecting scopes of a legacy client is migration step (b): guarded unless confirmed.
    if (scopesChange && isUnscopedLegacy(current) && !force) await assertSafeToSetScopes(trx, current);
    if (scopesChange) await repo.updateClient(trx, clientId, { scopes: plan.scopes });
    if (!sameList(plan.redirectUris, current.redirectUris)) await repo.replaceRedirectUris(trx, clientId, plan.redirectUris);
    await repo.updateClient(trx, clientId, {});
    // A newer edit replaces a pending change.
    await repo.withdrawPendingChange(trx, clientId, by.actor);
    const pending = plan.pending ? await repo.insertChange(trx, clientId, plan.pending, by.actor) : undefined;
    const client = (await repo.readClient(trx, clientId))!;
    const details = {
      ...(scopesChange ? { scopes: { from: current.scopes, to: plan.scopes } } : {}),
      ...(!sameList(plan.redirectUris, current.redirectUris) ? { redirect_uris: { from: current.redirectUris, to: plan.redirectUris } } : {}),
      ...(linksChange ? { links: { from: { policy_uri: current.policyUri, tos_uri: current.tosUri }, to: { policy_uri: plan.links.policyUri, tos_uri: plan.links.tosUri } } } : {}),
      ...(plan.pending ? { requested: changeDetails(plan.pending) } : {}),
      ...(force ? { forced: true } : {}),
    };
    return { result: { client, ...(pending ? { pending } : {}) }, action: plan.pending ? 'client.change_requested' : 'client.edited', details };
  });
}

/** A change request as the audit trail and webhooks spell it. */
function changeDetails(change: ChangeRequest) {
  return {
    add_scopes: change.addScopes,
    add_redirect_uris: change.addRedirectUris,
    ...(change.toFullAccess ? { to_full_access: true as const } : {}),
    ...(change.setLinks ? { set_links: { policy_uri: change.setLinks.policyUri, tos_uri: change.setLinks.tosUri } } : {}),
  };
}

/** An administrator's decision on a pending change: approved, it widens the client. */
export async function decideChange({ db, outbox, records }: ChangeDeps, changeId: number, approve: boolean, by: Actor): Promise<ClientRecord> {
  const clientId: string | undefined = await db('oauth_client_changes').where('id', changeId).first('client_id').then((row) => row?.client_id);
  if (clientId) await outbox.prepare(clientId);
  return db.transaction(async (trx) => {
    const change = await repo.lockPendingChange(trx, changeId);
    if (!change) throw new NotFoundError(`no pending change with id ${changeId}`);
    const client = await repo.lockClient(trx, change.clientId, records);
    if (approve) {
      const uris = [...client.redirectUris, ...change.addRedirectUris.filter((u) => !client.redirectUris.includes(u))];
      if (uris.length > MAX_REDIRECT_URIS) throw new InputError(`approving would exceed ${MAX_REDIRECT_URIS} redirect URIs`);
      // Full access is only a legacy client's (docs/legacy-migration.md); any other keeps its scopes.
      const scopes = change.toFullAccess && client.legacy ? [] : [...client.scopes, ...change.addScopes.filter((s) => !client.scopes.includes(s))];
      await repo.updateClient(trx, client.clientId, { scopes, ...(change.setLinks ?? {}) });
      await repo.replaceRedirectUris(trx, client.clientId, uris);
    }
    await repo.decidePendingChange(trx, changeId, approve, by.actor, by.reason);
    await recordAudit(trx, {
      actor: by.actor,
      action: approve ? 'client.change_approved' : 'client.change_rejected',
      clientId: client.clientId,
      details: { change_id: changeId, ...(by.reason ? { reason: by.reason } : {}) },
    });
    const decided = webhookEvent(client.clientId, 'client.change_decided', {
      change_id: changeId,
      decision: approve ? 'approved' : 'rejected',
      ...changeDetails(change),
      ...(by.reason ? { reason: by.reason } : {}),
    });
    await outbox.enqueue(trx, client.clientId, [decided]);
    return (await repo.readClient(trx, client.clientId))!;
  });
}

/**
 * An owner renames a client only while it waits for review. Once approved, users have agreed to
 * it by this name on the consent page; a new name then goes through an administrator
 * (`clients rename`), as the change review carries only added scopes and redirect URIs.
 */
export async function renameOwnClient(deps: ChangeDeps, clientId: string, name: string, by: Actor): Promise<ClientRecord> {
  const valid = validateClientName(name);
  return changeClient(deps, clientId, by, async (trx, current) => {
    if (current.status !== 'pending') throw new InputError('once a client has been reviewed, only an administrator can rename it: ask one to');
    await repo.updateClient(trx, clientId, { name: valid });
    return { result: (await repo.readClient(trx, clientId))!, action: 'client.renamed', details: { from: current.name, to: valid } };
  });
}
