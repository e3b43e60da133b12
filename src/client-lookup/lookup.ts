// The client directory: one lookup answers "who is this client, what kind, what status, what may
// it ask for, who owns it, what was reviewed" for an id of any kind — a registry client's
// (oauth_clients, src/clients/), a metadata document's URL or a self-registered client's id
// (cimd_clients, src/cimd/). The operator scripts and the review page find clients here; an id of
// no kind (garbage, over-long, control characters) is refused with one clear reason before any
// query. The provider's hot path keeps its own cached reads (src/oauth/client-adapter.ts).
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import type { ClientKind, ClientRecord } from '../clients/model.ts';
import { readClient } from '../clients/repository.ts';
import { findCimdClient, type CimdClientRow } from '../cimd/store.ts';
import type { CimdStatus, ClientStatus } from '../directory/status.ts';
import type { ClientAsks } from '../cimd/approval.ts';
import { isUrlClientId, MAX_CLIENT_ID_URL } from '../cimd/client-id.ts';
import { InputError, NotFoundError } from '../errors.ts';

type Q = Db | Knex.Transaction;

interface Common {
  clientId: string;
  name: string | null;
  scopes: string[];
  redirectUris: string[];
}

/** A client of the registry: an operator or a developer registered it; an administrator reviews it. */
export interface RegistryClient extends Common {
  source: 'registry';
  kind: ClientKind;
  status: ClientStatus;
  /** The user who registered it in the developer settings; null when an operator did. */
  ownerUserId: number | null;
  record: ClientRecord;
}

/** A client described by a metadata document (its URL) or registered by itself (RFC 7591). */
export interface ReviewedClient extends Common {
  source: 'document' | 'registered';
  kind: 'metadata_document' | 'registered';
  status: CimdStatus;
  /** A document client's host (which serves its document); null for a registered one, which has none. */
  host: string | null;
  /** What an administrator's approval covered; null until approved. */
  approved: ClientAsks | null;
  row: CimdClientRow;
}

export type DirectoryClient = RegistryClient | ReviewedClient;

const registryClient = (record: ClientRecord): RegistryClient => ({
  source: 'registry',
  clientId: record.clientId,
  name: record.name,
  kind: record.kind,
  status: record.status,
  scopes: record.scopes,
  redirectUris: record.redirectUris,
  ownerUserId: record.ownerUserId,
  record,
});

const reviewedClient = (row: CimdClientRow): ReviewedClient => ({
  source: row.registered ? 'registered' : 'document',
  clientId: row.clientId,
  name: row.name,
  kind: row.registered ? 'registered' : 'metadata_document',
  status: row.status,
  scopes: row.scopes,
  redirectUris: row.redirectUris,
  host: row.registered ? null : row.host,
  approved: row.approved,
  row,
});

/**
 * Why an id names no client whatever its kind, or undefined: empty, longer than any id (a
 * document URL's limit), or with spaces or control characters (no kind's id has them).
 */
export function idOfNoKind(clientId: string): string | undefined {
  if (clientId.length === 0) return 'no client has an empty id';
  if (clientId.length > MAX_CLIENT_ID_URL) return `no client has an id of ${clientId.length} characters (at most ${MAX_CLIENT_ID_URL})`;
  if (/[\s\x00-\x1f\x7f]/.test(clientId)) return 'no client has an id with spaces or control characters';
  return undefined;
}

/** The client with this id, of whatever kind; undefined when none has it (or it is of no kind). */
export async function findDirectoryClient(q: Q, clientId: string): Promise<DirectoryClient | undefined> {
  if (idOfNoKind(clientId)) return undefined;
  if (!isUrlClientId(clientId)) {
    const record = await readClient(q, clientId);
    if (record) return registryClient(record);
  }
  // A URL is a document client's id; a registered client's never is (src/registration/registration.ts).
  const row = await findCimdClient(q, clientId);
  return row && reviewedClient(row);
}

/** The client with this id, or a refusal saying why none is: the one answer every script and page gives. */
export async function directoryClient(q: Q, clientId: string): Promise<DirectoryClient> {
  const noKind = idOfNoKind(clientId);
  if (noKind) throw new InputError(noKind);
  const found = await findDirectoryClient(q, clientId);
  if (found) return found;
  if (!/^https?:\/\//i.test(clientId)) throw new NotFoundError(`no client with id ${clientId}`);
  // A document's client is known once its document was fetched and used (or an administrator
  // decided); its id is its URL exactly as written, which another spelling is not.
  const normal = URL.canParse(clientId) ? new URL(clientId).href : clientId;
  throw new NotFoundError(`no client with id ${clientId} has been seen${normal !== clientId ? ` (a client_id is compared as written: its normal form is ${normal})` : ''}`);
}
