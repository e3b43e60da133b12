// The client registry: one service layer for the operator scripts, the provider and (later) the pages.
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import { preparedRead } from '../storage/prepared.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { recordAudit } from '../audit.ts';
import { assertSafeToSetScopes } from './legacy.ts';
import { generateClientId, generateClientSecret, hashClientSecret, type StoredSecret } from './secrets.ts';
import { validateClientName, validateClientScopes, validateRedirectUri, validateRedirectUris, MAX_REDIRECT_URIS, type ClientKind } from './validate.ts';

/** Who makes a change, and why: recorded in the audit trail. */
export interface Actor {
  actor: string;
  reason?: string | undefined;
}

export const MAX_ACTIVE_SECRETS = 2; // spec 5.7

export type ClientStatus = 'pending' | 'approved' | 'rejected' | 'suspended';

export interface ClientRecord {
  clientId: string;
  name: string;
  kind: ClientKind;
  status: ClientStatus;
  legacy: boolean;
  scopes: string[];
  redirectUris: string[];
  /** The user who registered it in the developer settings; null when an operator did. */
  ownerUserId: number | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface SecretInfo {
  id: number;
  createdAt: Date;
  lastUsedAt: Date | null;
}

const CLIENT_COLUMNS = ['id', 'name', 'kind', 'status', 'legacy', 'scopes', 'owner_user_id', 'created_at', 'updated_at'] as const;

interface ClientRow {
  id: string;
  name: string;
  kind: ClientKind;
  status: ClientStatus;
  legacy: boolean;
  scopes: string[];
  owner_user_id: number | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewClient {
  name: string;
  redirectUris: string[];
  scopes: string[];
  kind: ClientKind;
  legacy: boolean;
  ownerUserId?: number;
}

export interface CreatedClient {
  client: ClientRecord;
  /** Present for confidential clients: the only time the secret is ever available. */
  secret?: { id: number; value: string };
}

function auditOf(by: Actor) {
  return { actor: by.actor, details: by.reason ? { reason: by.reason } : {} };
}

// Client ids are printable ASCII; anything else (a NUL byte, which PostgreSQL text cannot hold,
// control characters, huge values) names no client and must not reach the database.
const PLAUSIBLE_CLIENT_ID = /^[\x21-\x7e]{1,200}$/;

async function redirectUrisOf(db: Db | Knex.Transaction, clientId: string): Promise<string[]> {
  return db('oauth_client_redirect_uris').where('client_id', clientId).orderBy('position').pluck('uri');
}

function toRecord(row: ClientRow, redirectUris: string[]): ClientRecord {
  return {
    clientId: row.id,
    name: row.name,
    kind: row.kind,
    status: row.status,
    legacy: row.legacy,
    scopes: row.scopes,
    redirectUris,
    ownerUserId: row.owner_user_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function createClient(db: Db, input: NewClient, by: Actor): Promise<CreatedClient> {
  const name = validateClientName(input.name);
  const redirectUris = validateRedirectUris(input.redirectUris, input.kind);
  const scopes = validateClientScopes(input.scopes, input.legacy);
  const clientId = generateClientId();
  const secretValue = input.kind === 'confidential' ? generateClientSecret() : undefined;

  return db.transaction(async (trx) => {
    const [row] = await trx('oauth_clients')
      .insert({ id: clientId, name, kind: input.kind, legacy: input.legacy, scopes: JSON.stringify(scopes), owner_user_id: input.ownerUserId ?? null })
      .returning('*');
    await trx('oauth_client_redirect_uris').insert(redirectUris.map((uri, position) => ({ client_id: clientId, uri, position })));
    let secret: CreatedClient['secret'];
    if (secretValue) {
      const [secretRow] = await trx('oauth_client_secrets')
        .insert({ client_id: clientId, secret_hash: hashClientSecret(secretValue) })
        .returning('id');
      secret = { id: secretRow.id, value: secretValue };
    }
    await recordAudit(trx, { ...auditOf(by), action: 'client.created', clientId, details: { kind: input.kind, legacy: input.legacy, scopes, redirectUris } });
    return { client: toRecord(row, redirectUris), ...(secret ? { secret } : {}) };
  });
}

export async function findClient(db: Db, clientId: string): Promise<ClientRecord | undefined> {
  if (!PLAUSIBLE_CLIENT_ID.test(clientId)) return undefined;
  const row: ClientRow | undefined = await db('oauth_clients').where('id', clientId).first();
  return row ? toRecord(row, await redirectUrisOf(db, clientId)) : undefined;
}

export async function getClient(db: Db, clientId: string): Promise<ClientRecord> {
  const client = await findClient(db, clientId);
  if (!client) throw new NotFoundError(`no client with id ${clientId}`);
  return client;
}

export async function listActiveSecrets(db: Db, clientId: string): Promise<SecretInfo[]> {
  const rows = await db('oauth_client_secrets')
    .where('client_id', clientId)
    .whereNull('revoked_at')
    .orderBy('id')
    .select('id', 'created_at', 'last_used_at');
  return rows.map((r) => ({ id: r.id, createdAt: r.created_at, lastUsedAt: r.last_used_at }));
}

// Which status changes are allowed; everything else is refused.
const TRANSITIONS: Record<ClientStatus, ClientStatus[]> = {
  pending: ['approved', 'rejected'],
  approved: ['suspended'],
  suspended: ['approved'],
  rejected: [],
};

export async function changeClientStatus(db: Db, clientId: string, to: ClientStatus, by: Actor): Promise<ClientRecord> {
  return db.transaction(async (trx) => {
    const row = await lockClient(trx, clientId);
    if (!TRANSITIONS[row.status].includes(to)) {
      throw new InputError(`a ${row.status} client cannot become ${to}`);
    }
    const [updated] = await trx('oauth_clients').where('id', clientId).update({ status: to, updated_at: trx.fn.now() }).returning('*');
    await recordAudit(trx, { actor: by.actor, action: `client.${to}`, clientId, details: { from: row.status, ...(by.reason ? { reason: by.reason } : {}) } });
    return toRecord(updated, await redirectUrisOf(trx, clientId));
  });
}

/** Reads the client row and locks it until the transaction ends (serialises changes to one client). */
async function lockClient(trx: Knex.Transaction, clientId: string): Promise<ClientRow> {
  const row: ClientRow | undefined = await trx('oauth_clients').where('id', clientId).forUpdate().first();
  if (!row) throw new NotFoundError(`no client with id ${clientId}`);
  return row;
}

export async function listClients(db: Db, filter: { status?: ClientStatus; ownerUserId?: number } = {}): Promise<ClientRecord[]> {
  const rows: ClientRow[] = await db('oauth_clients')
    .modify((q) => {
      if (filter.status) q.where('status', filter.status);
      if (filter.ownerUserId !== undefined) q.where('owner_user_id', filter.ownerUserId);
    })
    .orderBy('created_at');
  const uris: Array<{ client_id: string; uri: string }> = await db('oauth_client_redirect_uris')
    .whereIn('client_id', rows.map((r) => r.id))
    .orderBy('position')
    .select('client_id', 'uri');
  return rows.map((row) => toRecord(row, uris.filter((u) => u.client_id === row.id).map((u) => u.uri)));
}

/**
 * Replaces the client's scopes (at least one; all from the catalogue). For a legacy client this is
 * migration step (b) of spec 5.6, refused by the order guard unless forced.
 */
export async function setClientScopes(db: Db, clientId: string, scopes: string[], by: Actor, { force = false } = {}): Promise<ClientRecord> {
  const valid = validateClientScopes(scopes, false);
  if (!force) await assertSafeToSetScopes(db, await getClient(db, clientId));
  return db.transaction(async (trx) => {
    const row = await lockClient(trx, clientId);
    const [updated] = await trx('oauth_clients').where('id', clientId).update({ scopes: JSON.stringify(valid), updated_at: trx.fn.now() }).returning('*');
    const details = { from: row.scopes, to: valid, ...(force ? { forced: true } : {}), ...auditOf(by).details };
    await recordAudit(trx, { actor: by.actor, action: 'client.scopes_set', clientId, details });
    return toRecord(updated, await redirectUrisOf(trx, clientId));
  });
}

export async function addRedirectUri(db: Db, clientId: string, uri: string, by: Actor): Promise<ClientRecord> {
  return db.transaction(async (trx) => {
    const row = await lockClient(trx, clientId);
    const valid = validateRedirectUri(uri, row.kind);
    const current = await redirectUrisOf(trx, clientId);
    if (current.includes(valid)) throw new InputError(`the client already has the redirect URI ${valid}`);
    if (current.length >= MAX_REDIRECT_URIS) throw new InputError(`at most ${MAX_REDIRECT_URIS} redirect URIs per client`);
    await trx('oauth_client_redirect_uris').insert({ client_id: clientId, uri: valid, position: current.length });
    await trx('oauth_clients').where('id', clientId).update({ updated_at: trx.fn.now() });
    await recordAudit(trx, { ...auditOf(by), action: 'client.redirect_uri_added', clientId, details: { uri: valid, ...auditOf(by).details } });
    return toRecord(row, [...current, valid]);
  });
}

export async function removeRedirectUri(db: Db, clientId: string, uri: string, by: Actor): Promise<ClientRecord> {
  return db.transaction(async (trx) => {
    const row = await lockClient(trx, clientId);
    const current = await redirectUrisOf(trx, clientId);
    if (!current.includes(uri)) throw new InputError(`the client has no redirect URI ${uri}`);
    if (current.length === 1) throw new InputError('a client needs at least one redirect URI; add another before removing this one');
    await trx('oauth_client_redirect_uris').where({ client_id: clientId, uri }).delete();
    await trx('oauth_clients').where('id', clientId).update({ updated_at: trx.fn.now() });
    await recordAudit(trx, { ...auditOf(by), action: 'client.redirect_uri_removed', clientId, details: { uri, ...auditOf(by).details } });
    return toRecord(row, current.filter((u) => u !== uri));
  });
}

/**
 * A new secret for a confidential client, refused while it has MAX_ACTIVE_SECRETS active. The
 * client row lock makes concurrent calls take turns, so they can never exceed the limit.
 */
export async function generateSecret(db: Db, clientId: string, by: Actor): Promise<{ id: number; value: string }> {
  const value = generateClientSecret();
  return db.transaction(async (trx) => {
    const row = await lockClient(trx, clientId);
    if (row.kind !== 'confidential') throw new InputError('a public client has no secrets');
    const active = await trx('oauth_client_secrets').where('client_id', clientId).whereNull('revoked_at').pluck('id');
    if (active.length >= MAX_ACTIVE_SECRETS) {
      throw new InputError(`the client already has ${MAX_ACTIVE_SECRETS} active secrets; revoke one first`);
    }
    const [secret] = await trx('oauth_client_secrets').insert({ client_id: clientId, secret_hash: hashClientSecret(value) }).returning('id');
    await recordAudit(trx, { ...auditOf(by), action: 'secret.generated', clientId, details: { secret_id: secret.id, ...auditOf(by).details } });
    return { id: secret.id as number, value };
  });
}

/** Revokes a secret; the next token request with it is refused (the provider reads secrets per request). */
export async function revokeSecret(db: Db, clientId: string, secretId: number, by: Actor): Promise<void> {
  await db.transaction(async (trx) => {
    await lockClient(trx, clientId);
    const updated = await trx('oauth_client_secrets')
      .where({ id: secretId, client_id: clientId })
      .whereNull('revoked_at')
      .update({ revoked_at: trx.fn.now() });
    if (updated === 0) throw new NotFoundError(`the client has no active secret with id ${secretId}`);
    await recordAudit(trx, { ...auditOf(by), action: 'secret.revoked', clientId, details: { secret_id: secretId, ...auditOf(by).details } });
  });
}

export interface UsableClient {
  client: ClientRecord;
  secrets: StoredSecret[];
}

/**
 * A client the provider may use, with its active secret hashes: an approved one, or a pending one
 * that has an owner (the owner may try it before review; src/oauth/interactions.ts keeps everyone
 * else out). Undefined otherwise.
 */
// One round trip, prepared: this runs on every token request.
const usableClientById = preparedRead<ClientRow & { redirect_uris: string[]; secrets: StoredSecret[] }, [string]>('usable_client_by_id', (db, clientId) =>
  db('oauth_clients as c')
    .where('c.id', clientId)
    .where((q) => q.where('c.status', 'approved').orWhere((p) => p.where('c.status', 'pending').whereNotNull('c.owner_user_id')))
    .first(
      ...CLIENT_COLUMNS.map((column) => `c.${column}`),
      db.raw(`coalesce((select json_agg(u.uri order by u.position) from oauth_client_redirect_uris u where u.client_id = c.id), '[]') as redirect_uris`),
      db.raw(
        `coalesce((select json_agg(json_build_object('id', s.id, 'hash', s.secret_hash) order by s.id)
           from oauth_client_secrets s where s.client_id = c.id and s.revoked_at is null), '[]') as secrets`,
      ),
    ),
);

export async function findUsableClient(db: Db, clientId: string): Promise<UsableClient | undefined> {
  if (!PLAUSIBLE_CLIENT_ID.test(clientId)) return undefined;
  const [row] = await usableClientById(db, clientId);
  if (!row) return undefined;
  return { client: toRecord(row, row.redirect_uris), secrets: row.secrets };
}

export async function markSecretUsed(db: Db, secretId: number): Promise<void> {
  await db('oauth_client_secrets').where('id', secretId).update({ last_used_at: db.fn.now() });
}
