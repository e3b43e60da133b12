// The client registry: one service layer for the operator scripts, the provider and (later) the pages.
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { generateClientId, generateClientSecret, hashClientSecret, type StoredSecret } from './secrets.ts';
import { validateClientName, validateClientScopes, validateRedirectUris, type ClientKind } from './validate.ts';

export type ClientStatus = 'pending' | 'approved' | 'rejected' | 'suspended';

export interface ClientRecord {
  clientId: string;
  name: string;
  kind: ClientKind;
  status: ClientStatus;
  legacy: boolean;
  scopes: string[];
  redirectUris: string[];
  createdAt: Date;
  updatedAt: Date;
}

export interface SecretInfo {
  id: number;
  createdAt: Date;
  lastUsedAt: Date | null;
}

interface ClientRow {
  id: string;
  name: string;
  kind: ClientKind;
  status: ClientStatus;
  legacy: boolean;
  scopes: string[];
  created_at: Date;
  updated_at: Date;
}

export interface NewClient {
  name: string;
  redirectUris: string[];
  scopes: string[];
  kind: ClientKind;
  legacy: boolean;
}

export interface CreatedClient {
  client: ClientRecord;
  /** Present for confidential clients: the only time the secret is ever available. */
  secret?: { id: number; value: string };
}

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
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function createClient(db: Db, input: NewClient): Promise<CreatedClient> {
  const name = validateClientName(input.name);
  const redirectUris = validateRedirectUris(input.redirectUris, input.kind);
  const scopes = validateClientScopes(input.scopes, input.legacy);
  const clientId = generateClientId();
  const secretValue = input.kind === 'confidential' ? generateClientSecret() : undefined;

  return db.transaction(async (trx) => {
    const [row] = await trx('oauth_clients')
      .insert({ id: clientId, name, kind: input.kind, legacy: input.legacy, scopes: JSON.stringify(scopes) })
      .returning('*');
    await trx('oauth_client_redirect_uris').insert(redirectUris.map((uri, position) => ({ client_id: clientId, uri, position })));
    let secret: CreatedClient['secret'];
    if (secretValue) {
      const [secretRow] = await trx('oauth_client_secrets')
        .insert({ client_id: clientId, secret_hash: hashClientSecret(secretValue) })
        .returning('id');
      secret = { id: secretRow.id, value: secretValue };
    }
    return { client: toRecord(row, redirectUris), ...(secret ? { secret } : {}) };
  });
}

export async function findClient(db: Db, clientId: string): Promise<ClientRecord | undefined> {
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

export async function changeClientStatus(db: Db, clientId: string, to: ClientStatus): Promise<ClientRecord> {
  return db.transaction(async (trx) => {
    const row: ClientRow | undefined = await trx('oauth_clients').where('id', clientId).forUpdate().first();
    if (!row) throw new NotFoundError(`no client with id ${clientId}`);
    if (!TRANSITIONS[row.status].includes(to)) {
      throw new InputError(`a ${row.status} client cannot become ${to}`);
    }
    const [updated] = await trx('oauth_clients').where('id', clientId).update({ status: to, updated_at: trx.fn.now() }).returning('*');
    return toRecord(updated, await redirectUrisOf(trx, clientId));
  });
}

export interface UsableClient {
  client: ClientRecord;
  secrets: StoredSecret[];
}

/** An approved client with its active secret hashes, for the provider; undefined otherwise. */
export async function findUsableClient(db: Db, clientId: string): Promise<UsableClient | undefined> {
  const [row, secrets] = await Promise.all([
    db('oauth_clients').where({ id: clientId, status: 'approved' }).first() as Promise<ClientRow | undefined>,
    db('oauth_client_secrets').where('client_id', clientId).whereNull('revoked_at').orderBy('id').select('id', 'secret_hash'),
  ]);
  if (!row) return undefined;
  return {
    client: toRecord(row, await redirectUrisOf(db, clientId)),
    secrets: secrets.map((s: { id: number; secret_hash: string }) => ({ id: s.id, hash: s.secret_hash })),
  };
}

export async function markSecretUsed(db: Db, secretId: number): Promise<void> {
  await db('oauth_client_secrets').where('id', secretId).update({ last_used_at: db.fn.now() });
}
