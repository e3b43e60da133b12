// Edits of a client by its owner (developer settings). Narrowing applies at once; widening an
// approved client (a new redirect URI, more scopes) waits for an administrator as a pending
// change, while the approved configuration keeps working for existing users.
import type { Db } from '../storage/db.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { recordAudit } from '../audit.ts';
import { addRedirectUri, getClient, removeRedirectUri, setClientScopes, type Actor, type ClientRecord } from './store.ts';
import { validateClientScopes, validateRedirectUris, MAX_REDIRECT_URIS } from './validate.ts';

export interface PendingChange {
  id: number;
  clientId: string;
  addScopes: string[];
  addRedirectUris: string[];
  requestedBy: string;
  requestedAt: Date;
}

interface ChangeRow {
  id: number;
  client_id: string;
  add_scopes: string[];
  add_redirect_uris: string[];
  requested_by: string;
  requested_at: Date;
}

const toChange = (row: ChangeRow): PendingChange => ({
  id: row.id,
  clientId: row.client_id,
  addScopes: row.add_scopes,
  addRedirectUris: row.add_redirect_uris,
  requestedBy: row.requested_by,
  requestedAt: row.requested_at,
});

export async function pendingChangeOf(db: Db, clientId: string): Promise<PendingChange | undefined> {
  const row: ChangeRow | undefined = await db('oauth_client_changes').where({ client_id: clientId, state: 'pending' }).first();
  return row ? toChange(row) : undefined;
}

export async function pendingChanges(db: Db): Promise<PendingChange[]> {
  const rows: ChangeRow[] = await db('oauth_client_changes').where('state', 'pending').orderBy('requested_at');
  return rows.map(toChange);
}

export interface ClientEdit {
  scopes: string[];
  redirectUris: string[];
}

export interface EditOutcome {
  client: ClientRecord;
  pending?: PendingChange;
}

const minus = (a: string[], b: string[]) => a.filter((x) => !b.includes(x));

/** Applies an owner's edit: narrowing now, widening of a reviewed client as a pending change. */
export async function editClient(db: Db, clientId: string, edit: ClientEdit, by: Actor, { force = false } = {}): Promise<EditOutcome> {
  const current = await getClient(db, clientId);
  const redirectUris = validateRedirectUris(edit.redirectUris, current.kind);
  const scopes = validateClientScopes(edit.scopes, current.legacy);
  const unscopedLegacy = current.legacy && current.scopes.length === 0;

  // A legacy client that still has full access narrows by selecting any scopes (spec 5.6 b).
  const addScopes = unscopedLegacy ? [] : minus(scopes, current.scopes);
  const removeScopes = unscopedLegacy ? [] : minus(current.scopes, scopes);
  const addUris = minus(redirectUris, current.redirectUris);
  const removeUris = minus(current.redirectUris, redirectUris);
  const reviewed = current.status !== 'pending';
  const widening = reviewed && (addScopes.length > 0 || addUris.length > 0);

  if (widening && removeUris.length === current.redirectUris.length) {
    throw new InputError('keep at least one of the approved redirect URIs until the new ones are reviewed');
  }

  // Narrowing, and everything for a client that has not been reviewed yet, applies now.
  const scopesNow = widening ? minus(current.scopes, removeScopes) : scopes;
  if (unscopedLegacy ? scopes.length > 0 : scopesNow.join(' ') !== current.scopes.join(' ')) {
    await setClientScopes(db, clientId, scopesNow, by, { force });
  }
  for (const uri of widening ? [] : addUris) await addRedirectUri(db, clientId, uri, by);
  for (const uri of removeUris) await removeRedirectUri(db, clientId, uri, by);

  let pending: PendingChange | undefined;
  if (widening) {
    await db('oauth_client_changes').where({ client_id: clientId, state: 'pending' }).update({ state: 'withdrawn', decided_by: by.actor, decided_at: db.fn.now() });
    const [row] = await db('oauth_client_changes')
      .insert({ client_id: clientId, add_scopes: JSON.stringify(addScopes), add_redirect_uris: JSON.stringify(addUris), requested_by: by.actor })
      .returning('*');
    await recordAudit(db, { actor: by.actor, action: 'client.change_requested', clientId, details: { add_scopes: addScopes, add_redirect_uris: addUris } });
    pending = toChange(row);
  } else {
    await db('oauth_client_changes').where({ client_id: clientId, state: 'pending' }).update({ state: 'withdrawn', decided_by: by.actor, decided_at: db.fn.now() });
  }
  return { client: await getClient(db, clientId), ...(pending ? { pending } : {}) };
}

/** An administrator's decision on a pending change. */
export async function decideChange(db: Db, changeId: number, approve: boolean, by: Actor): Promise<ClientRecord> {
  const row: (ChangeRow & { state: string }) | undefined = await db('oauth_client_changes').where('id', changeId).first();
  if (!row || row.state !== 'pending') throw new NotFoundError(`no pending change with id ${changeId}`);
  const client = await getClient(db, row.client_id);
  if (approve) {
    const uris = row.add_redirect_uris.filter((u) => !client.redirectUris.includes(u));
    if (client.redirectUris.length + uris.length > MAX_REDIRECT_URIS) throw new InputError(`approving would exceed ${MAX_REDIRECT_URIS} redirect URIs`);
    const scopes = [...client.scopes, ...row.add_scopes.filter((s) => !client.scopes.includes(s))];
    if (scopes.length !== client.scopes.length) await setClientScopes(db, client.clientId, scopes, by, { force: true });
    for (const uri of uris) await addRedirectUri(db, client.clientId, uri, by);
  }
  await db('oauth_client_changes')
    .where('id', changeId)
    .update({ state: approve ? 'approved' : 'rejected', decided_by: by.actor, decided_at: db.fn.now(), reason: by.reason ?? null });
  await recordAudit(db, { actor: by.actor, action: approve ? 'client.change_approved' : 'client.change_rejected', clientId: client.clientId, details: { change_id: changeId, ...(by.reason ? { reason: by.reason } : {}) } });
  return getClient(db, client.clientId);
}
