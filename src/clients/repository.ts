// The client registry's SQL, and nothing else: rows in, records out. Every function takes the
// database or the transaction it runs in; the use cases (service.ts, changes.ts) own the
// transactions and the audit trail.
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import { freshSharedReads } from '../storage/fresh-reads.ts';
import { preparedRead } from '../storage/prepared.ts';
import type { CachedDb, RecordCache } from '../storage/record-cache.ts';
import { NotFoundError } from '../errors.ts';
import { isWellFormedClientId } from './secrets.ts';
import type { StoredSecret } from '../directory/facts.ts';
import type { ChangeRequest, ClientKeys, ClientKind, ClientRecord, PendingChange, SecretInfo } from './model.ts';
import type { ClientStatus } from '../directory/status.ts';

type Q = Db | Knex.Transaction;

const CLIENT_COLUMNS = ['id', 'name', 'kind', 'status', 'legacy', 'scopes', 'optional_scopes', 'owner_user_id', 'token_requests_per_minute', 'refresh_grace_seconds', 'policy_uri', 'tos_uri', 'resource_uri', 'dpop_bound_access_tokens', 'require_pushed_authorization_requests', 'high_trust', 'jwks_uri', 'jwks', 'created_at', 'updated_at'] as const;

interface ClientRow {
  id: string;
  name: string;
  kind: ClientKind;
  status: ClientStatus;
  legacy: boolean;
  scopes: string[];
  optional_scopes: string[];
  owner_user_id: number | null;
  token_requests_per_minute: number | null;
  refresh_grace_seconds: number | null;
  policy_uri: string | null;
  tos_uri: string | null;
  resource_uri: string | null;
  dpop_bound_access_tokens: boolean;
  require_pushed_authorization_requests: boolean;
  high_trust: boolean;
  jwks_uri: string | null;
  jwks: { keys: Array<Record<string, unknown>> } | null;
  created_at: Date;
  updated_at: Date;
}

// Client ids are printable ASCII; anything else (a NUL byte, which PostgreSQL text cannot hold,
// control characters, huge values) names no client and must not reach the database.
const PLAUSIBLE_CLIENT_ID = /^[\x21-\x7e]{1,200}$/;

function toRecord(row: ClientRow, redirectUris: string[]): ClientRecord {
  return {
    clientId: row.id,
    name: row.name,
    kind: row.kind,
    status: row.status,
    legacy: row.legacy,
    scopes: row.scopes,
    optionalScopes: row.optional_scopes ?? [],
    redirectUris,
    ownerUserId: row.owner_user_id,
    tokenRequestsPerMinute: row.token_requests_per_minute,
    refreshGraceSeconds: row.refresh_grace_seconds,
    policyUri: row.policy_uri,
    tosUri: row.tos_uri,
    resourceUri: row.resource_uri ?? null,
    dpopBoundAccessTokens: row.dpop_bound_access_tokens === true,
    requirePushedAuthorizationRequests: row.require_pushed_authorization_requests === true,
    highTrust: row.high_trust === true,
    keys: row.jwks_uri ? { jwksUri: row.jwks_uri } : row.jwks ? { jwks: row.jwks } : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

async function redirectUrisOf(q: Q, clientId: string): Promise<string[]> {
  return q('oauth_client_redirect_uris').where('client_id', clientId).orderBy('position').pluck('uri');
}

export async function readClient(q: Q, clientId: string): Promise<ClientRecord | undefined> {
  if (!PLAUSIBLE_CLIENT_ID.test(clientId)) return undefined;
  const row: ClientRow | undefined = await q('oauth_clients').where('id', clientId).first(CLIENT_COLUMNS);
  return row ? toRecord(row, await redirectUrisOf(q, clientId)) : undefined;
}

/** The resource server registered for a resource URI (RFC 8707), by its exact spelling. */
export async function resourceServerIdFor(q: Q, resourceUri: string): Promise<string | undefined> {
  const row: { id: string } | undefined = await q('oauth_clients').where({ resource_uri: resourceUri, kind: 'resource_server' }).first('id');
  return row?.id;
}

/**
 * Reads the client and locks its row until the transaction ends: changes to one client take turns.
 * Every change of a client starts here, so the cached copies everywhere drop it at commit.
 */
export async function lockClient(trx: Knex.Transaction, clientId: string, records: RecordCache): Promise<ClientRecord> {
  const row: ClientRow | undefined = PLAUSIBLE_CLIENT_ID.test(clientId) ? await trx('oauth_clients').where('id', clientId).forUpdate().first(CLIENT_COLUMNS) : undefined;
  if (!row) throw new NotFoundError(`no client with id ${clientId}`);
  await records.announce(trx, 'client', clientId);
  return toRecord(row, await redirectUrisOf(trx, clientId));
}

export async function listClientRecords(q: Q, filter: { status?: ClientStatus; ownerUserId?: number } = {}): Promise<ClientRecord[]> {
  const rows: ClientRow[] = await q('oauth_clients')
    .modify((query) => {
      if (filter.status) query.where('status', filter.status);
      if (filter.ownerUserId !== undefined) query.where('owner_user_id', filter.ownerUserId);
    })
    .orderBy('created_at')
    .select(CLIENT_COLUMNS);
  const uris: Array<{ client_id: string; uri: string }> = await q('oauth_client_redirect_uris')
    .whereIn('client_id', rows.map((r) => r.id))
    .orderBy('position')
    .select('client_id', 'uri');
  return rows.map((row) => toRecord(row, uris.filter((u) => u.client_id === row.id).map((u) => u.uri)));
}

export interface ClientFields {
  name: string;
  kind: ClientKind;
  legacy: boolean;
  scopes: string[];
  ownerUserId: number | null;
  policyUri: string | null;
  tosUri: string | null;
  /** A resource server's resource (RFC 8707); null: the platform API. */
  resourceUri?: string | null;
}

export async function insertClient(trx: Knex.Transaction, clientId: string, fields: ClientFields, redirectUris: string[], records: RecordCache): Promise<ClientRecord> {
  const [row] = await trx('oauth_clients')
    .insert({ id: clientId, name: fields.name, kind: fields.kind, legacy: fields.legacy, scopes: JSON.stringify(fields.scopes), owner_user_id: fields.ownerUserId, policy_uri: fields.policyUri, tos_uri: fields.tosUri, resource_uri: fields.resourceUri ?? null })
    .returning(CLIENT_COLUMNS);
  await replaceRedirectUris(trx, clientId, redirectUris);
  await records.announce(trx, 'client', clientId); // an earlier "no such client" may be cached
  return toRecord(row, redirectUris);
}

/** Changes columns of a locked client (see lockClient). */
export async function updateClient(
  trx: Knex.Transaction,
  clientId: string,
  changes: Partial<{ name: string; status: ClientStatus; scopes: string[]; optionalScopes: string[]; tokenRequestsPerMinute: number | null; refreshGraceSeconds: number | null; policyUri: string | null; tosUri: string | null; dpopBoundAccessTokens: boolean; requirePushedAuthorizationRequests: boolean; highTrust: boolean; keys: ClientKeys | null }>,
): Promise<void> {
  await trx('oauth_clients')
    .where('id', clientId)
    .update({
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.status !== undefined ? { status: changes.status } : {}),
      ...(changes.scopes !== undefined ? { scopes: JSON.stringify(changes.scopes) } : {}),
      // Optional scopes stay a subset of the scopes: given, they are stored (the caller checked them);
      // otherwise a change of scopes keeps those optional ones that remain.
      ...(changes.optionalScopes !== undefined
        ? { optional_scopes: JSON.stringify(changes.optionalScopes) }
        : changes.scopes !== undefined
          ? { optional_scopes: trx.raw(`coalesce((select jsonb_agg(o) from jsonb_array_elements(optional_scopes) o where ?::jsonb @> jsonb_build_array(o)), '[]'::jsonb)`, [JSON.stringify(changes.scopes)]) }
          : {}),
      ...(changes.tokenRequestsPerMinute !== undefined ? { token_requests_per_minute: changes.tokenRequestsPerMinute } : {}),
      ...(changes.refreshGraceSeconds !== undefined ? { refresh_grace_seconds: changes.refreshGraceSeconds } : {}),
      ...(changes.policyUri !== undefined ? { policy_uri: changes.policyUri } : {}),
      ...(changes.tosUri !== undefined ? { tos_uri: changes.tosUri } : {}),
      ...(changes.dpopBoundAccessTokens !== undefined ? { dpop_bound_access_tokens: changes.dpopBoundAccessTokens } : {}),
      ...(changes.requirePushedAuthorizationRequests !== undefined ? { require_pushed_authorization_requests: changes.requirePushedAuthorizationRequests } : {}),
      ...(changes.highTrust !== undefined ? { high_trust: changes.highTrust } : {}),
      ...(changes.keys !== undefined
        ? { jwks_uri: changes.keys && 'jwksUri' in changes.keys ? changes.keys.jwksUri : null, jwks: changes.keys && 'jwks' in changes.keys ? JSON.stringify(changes.keys.jwks) : null }
        : {}),
      updated_at: trx.fn.now(),
    });
}

/**
 * Removes a locked client's rows: redirect URIs, secrets and pending changes go with it (ON DELETE
 * CASCADE); the tables that name it without a foreign key are cleared here. Not the audit trail.
 */
export async function deleteClientRows(trx: Knex.Transaction, clientId: string): Promise<void> {
  for (const table of ['user_grants', 'legacy_grants', 'client_scope_requests', 'legacy_scope_switch', 'webhook_deliveries']) await trx(table).where('client_id', clientId).delete();
  await trx('oauth_clients').where('id', clientId).delete();
}

/** The users who granted the client access (user_grants), each once. */
export async function usersWithGrants(q: Q, clientId: string): Promise<string[]> {
  return q('user_grants').where('client_id', clientId).distinct('account_id').orderBy('account_id').pluck('account_id');
}

/** The client's redirect URIs become exactly this list, in this order. */
export async function replaceRedirectUris(trx: Knex.Transaction, clientId: string, uris: string[]): Promise<void> {
  await trx('oauth_client_redirect_uris').where('client_id', clientId).delete();
  if (uris.length) await trx('oauth_client_redirect_uris').insert(uris.map((uri, position) => ({ client_id: clientId, uri, position })));
}

/** Neither revoked nor expired (docs/secret-rotation.md). */
const isActiveSecret = (q: Knex.QueryBuilder, now: Knex.Raw) => q.whereNull('revoked_at').where((e) => e.whereNull('expires_at').orWhere('expires_at', '>', now));

export async function activeSecrets(q: Q, clientId: string): Promise<SecretInfo[]> {
  // Numbered per client in the order made, revoked and expired ones counted: a secret keeps its number.
  const number = q.raw('(select count(*)::int from oauth_client_secrets o where o.client_id = oauth_client_secrets.client_id and o.id <= oauth_client_secrets.id) as number');
  const rows: Array<{ id: number; number: number; created_at: Date; last_used_at: Date | null; expires_at: Date | null }> = await isActiveSecret(q('oauth_client_secrets').where('client_id', clientId), q.raw('now()')).orderBy('id').select('id', number, 'created_at', 'last_used_at', 'expires_at');
  return rows.map((r) => ({ id: r.id, number: Number(r.number), createdAt: r.created_at, lastUsedAt: r.last_used_at, expiresAt: r.expires_at }));
}

/** A new secret's row; `expiresInSeconds`: its lifetime (none: it never expires). The row with its id and expiry. */
export async function insertSecret(trx: Knex.Transaction, clientId: string, hash: string, expiresInSeconds?: number): Promise<{ id: number; expiresAt: Date | null }> {
  const expires_at = expiresInSeconds === undefined ? null : trx.raw(`now() + make_interval(secs => ?)`, [expiresInSeconds]);
  const [row] = await trx('oauth_client_secrets').insert({ client_id: clientId, secret_hash: hash, expires_at }).returning(['id', 'expires_at']);
  return { id: row.id as number, expiresAt: row.expires_at as Date | null };
}

/** Makes an active secret expire within `seconds` (never later than it would have); its new expiry. */
export async function shortenSecretLife(trx: Knex.Transaction, clientId: string, secretId: number, seconds: number): Promise<Date> {
  const deadline = trx.raw(`now() + make_interval(secs => ?)`, [seconds]);
  const [row] = await trx('oauth_client_secrets')
    .where({ id: secretId, client_id: clientId })
    // The rotation's own secret.expiring event is its notice: the sweep does not send another.
    .update({ expires_at: trx.raw(`least(coalesce(expires_at, 'infinity'), ?)`, [deadline]), expiring_notified_at: trx.fn.now() })
    .returning('expires_at');
  return row.expires_at as Date;
}

/** Marks an active secret revoked; false when the client has no such active secret. */
export async function revokeSecretRow(trx: Knex.Transaction, clientId: string, secretId: number): Promise<boolean> {
  const updated = await trx('oauth_client_secrets').where({ id: secretId, client_id: clientId }).whereNull('revoked_at').update({ revoked_at: trx.fn.now() });
  return updated > 0;
}

/** Sets last_used_at of these secrets, skipping those another instance set within the minute. */
export async function markSecretsUsed(db: Db, secretIds: number[]): Promise<void> {
  await db('oauth_client_secrets')
    .whereIn('id', secretIds)
    .where((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<', db.raw(`now() - interval '1 minute'`)))
    .update({ last_used_at: db.fn.now() });
}

const activeSecretById = preparedRead<{ id: number }, [string]>('active_secret_by_id', (db, secretId) =>
  isActiveSecret(db('oauth_client_secrets').where('id', secretId), db.raw('now()')).select('id'),
);

/**
 * Whether a secret is still active, read from the database itself (one reader per database, made
 * by its owner: src/oauth/client-secrets.ts). A cached client record learns of a revocation made
 * by another process only when the change notification arrives; the spec wants a revoked secret
 * refused at once (5.7), so authentication asks the database. Concurrent requests of one client
 * share reads that were sent after they arrived (freshSharedReads): a revocation committed before
 * a request arrives is always seen.
 */
export function activeSecretReader(db: Db): (secretId: number) => Promise<boolean> {
  return freshSharedReads(async (id: number) => (await activeSecretById(db, String(id))).length > 0);
}

export interface UsableClient {
  client: ClientRecord;
  secrets: StoredSecret[];
}

// One round trip, prepared, and cached while the change feed runs: this is on every token request.
const usableClientById = preparedRead<ClientRow & { redirect_uris: string[]; secrets: StoredSecret[] }, [string]>('usable_client_by_id', (db, clientId) =>
  db('oauth_clients as c')
    .where('c.id', clientId)
    .where((q) => q.where('c.status', 'approved').orWhere((p) => p.where('c.status', 'pending').whereNotNull('c.owner_user_id')))
    .first(
      ...CLIENT_COLUMNS.map((column) => `c.${column}`),
      db.raw(`coalesce((select json_agg(u.uri order by u.position) from oauth_client_redirect_uris u where u.client_id = c.id), '[]') as redirect_uris`),
      db.raw(
        `coalesce((select json_agg(json_build_object('id', s.id, 'hash', s.secret_hash, 'expires', floor(extract(epoch from s.expires_at) * 1000)) order by s.id)
           from oauth_client_secrets s where s.client_id = c.id and s.revoked_at is null and (s.expires_at is null or s.expires_at > now())), '[]') as secrets`,
      ),
    ),
);

/**
 * A client the provider may use, with its active secret hashes: an approved one, or a pending one
 * that has an owner (the owner may try it before review; src/oauth/authorization-outcomes.ts and
 * the consent step keep everyone else out). Undefined otherwise.
 */
export async function findUsableClient({ db, records }: CachedDb, clientId: string): Promise<UsableClient | undefined> {
  // What anyone may claim at the OAuth endpoints: only an id of the registry's own form is looked
  // up (and its absence cached), so junk ids cost no query and size no cache entry.
  if (!isWellFormedClientId(clientId)) return undefined;
  return records.read('client', clientId, async () => {
    const [row] = await usableClientById(db, clientId);
    return row ? { client: toRecord(row, row.redirect_uris), secrets: row.secrets } : undefined;
  });
}

// Pending changes of approved clients (table oauth_client_changes).

interface ChangeRow {
  id: number;
  client_id: string;
  add_scopes: string[];
  add_redirect_uris: string[];
  to_full_access: boolean;
  set_links: { policy_uri: string | null; tos_uri: string | null } | null;
  requested_by: string;
  requested_at: Date;
  state: 'pending' | 'approved' | 'rejected' | 'withdrawn';
}

const toChange = (row: ChangeRow): PendingChange => ({
  id: row.id,
  clientId: row.client_id,
  addScopes: row.add_scopes,
  addRedirectUris: row.add_redirect_uris,
  toFullAccess: row.to_full_access,
  ...(row.set_links ? { setLinks: { policyUri: row.set_links.policy_uri, tosUri: row.set_links.tos_uri } } : {}),
  requestedBy: row.requested_by,
  requestedAt: row.requested_at,
});

export async function pendingChangeOf(q: Q, clientId: string): Promise<PendingChange | undefined> {
  const row: ChangeRow | undefined = await q('oauth_client_changes').where({ client_id: clientId, state: 'pending' }).first();
  return row ? toChange(row) : undefined;
}

export async function pendingChanges(q: Q): Promise<PendingChange[]> {
  const rows: ChangeRow[] = await q('oauth_client_changes').where('state', 'pending').orderBy('requested_at');
  return rows.map(toChange);
}

/** A pending change, locked until the transaction ends; undefined when it is not pending. */
export async function lockPendingChange(trx: Knex.Transaction, changeId: number): Promise<PendingChange | undefined> {
  const row: ChangeRow | undefined = await trx('oauth_client_changes').where('id', changeId).forUpdate().first();
  return row?.state === 'pending' ? toChange(row) : undefined;
}

export async function insertChange(trx: Knex.Transaction, clientId: string, change: ChangeRequest, requestedBy: string): Promise<PendingChange> {
  const links = change.setLinks ? JSON.stringify({ policy_uri: change.setLinks.policyUri, tos_uri: change.setLinks.tosUri }) : null;
  const [row] = await trx('oauth_client_changes')
    .insert({
      client_id: clientId,
      add_scopes: JSON.stringify(change.addScopes),
      add_redirect_uris: JSON.stringify(change.addRedirectUris),
      to_full_access: change.toFullAccess,
      set_links: links,
      requested_by: requestedBy,
    })
    .returning('*');
  return toChange(row);
}

/** Ends the client's pending change, if any, as withdrawn (replaced by a newer edit). */
export async function withdrawPendingChange(trx: Knex.Transaction, clientId: string, by: string): Promise<void> {
  await trx('oauth_client_changes').where({ client_id: clientId, state: 'pending' }).update({ state: 'withdrawn', decided_by: by, decided_at: trx.fn.now() });
}

export async function decidePendingChange(trx: Knex.Transaction, changeId: number, approved: boolean, by: string, reason: string | undefined): Promise<void> {
  await trx('oauth_client_changes')
    .where('id', changeId)
    .update({ state: approved ? 'approved' : 'rejected', decided_by: by, decided_at: trx.fn.now(), reason: reason ?? null });
}

// The administrators' review table (src/web/admin-review.ts): one page of the clients of a status,
// or of all, that match a search on name, client id or owner e-mail, and the count of each status
// under the same search. Filtering, counting and paging happen here, in SQL, whatever the total.

export interface ReviewFilter {
  status: ClientStatus | 'all';
  search: string;
  offset: number;
  limit: number;
}

export interface ReviewRow {
  client: ClientRecord;
  /** The owner's e-mail address; null for a client an operator created. */
  ownerEmail: string | null;
  hasPendingChange: boolean;
}

export interface ReviewListing {
  rows: ReviewRow[];
  counts: Record<ClientStatus, number>;
}

/** The search as a LIKE pattern that matches it literally (its %, _ and \ escaped). */
const containing = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export async function reviewListing(q: Q, filter: ReviewFilter): Promise<ReviewListing> {
  const matching = () =>
    q('oauth_clients as c')
      .leftJoin('users as u', 'u.id', 'c.owner_user_id')
      .modify((query) => {
        if (!filter.search) return;
        const pattern = containing(filter.search);
        query.where((w) => w.whereILike('c.name', pattern).orWhereILike('c.id', pattern).orWhereILike('u.email', pattern));
      });
  // The queue (pending) oldest first; the other tabs newest first; "all" by status, then newest.
  const order = filter.status === 'pending' ? 'c.created_at asc, c.id asc' : 'c.created_at desc, c.id desc';
  const rank = `case c.status when 'pending' then 0 when 'approved' then 1 when 'suspended' then 2 else 3 end`;
  const [countRows, rows] = await Promise.all([
    matching().groupBy('c.status').select('c.status').count('* as n') as unknown as Promise<Array<{ status: ClientStatus; n: string | number }>>,
    matching()
      .modify((query) => {
        if (filter.status !== 'all') query.where('c.status', filter.status);
      })
      .orderByRaw(filter.status === 'all' ? `${rank}, ${order}` : order)
      .limit(filter.limit)
      .offset(filter.offset)
      .select(
        ...CLIENT_COLUMNS.map((column) => `c.${column}`),
        'u.email as owner_email',
        q.raw(`exists (select 1 from oauth_client_changes ch where ch.client_id = c.id and ch.state = 'pending') as has_pending_change`),
      ) as Promise<Array<ClientRow & { owner_email: string | null; has_pending_change: boolean }>>,
  ]);
  const uris: Array<{ client_id: string; uri: string }> = rows.length
    ? await q('oauth_client_redirect_uris').whereIn('client_id', rows.map((r) => r.id)).orderBy('position').select('client_id', 'uri')
    : [];
  const counts: Record<ClientStatus, number> = { pending: 0, approved: 0, rejected: 0, suspended: 0 };
  for (const row of countRows) counts[row.status] = Number(row.n);
  return {
    rows: rows.map((row) => ({
      client: toRecord(row, uris.filter((u) => u.client_id === row.id).map((u) => u.uri)),
      ownerEmail: row.owner_email,
      hasPendingChange: row.has_pending_change,
    })),
    counts,
  };
}

export interface ExpiryNotice {
  id: number;
  client_id: string;
  expires_at: Date;
}

/** The clients with a secret whose expiry notice (within `noticeSeconds`) or expiry is due at `now` and not yet told. */
export async function clientsWithExpiryDue(db: Db, noticeSeconds: number, now: Knex.Raw): Promise<string[]> {
  return db('oauth_client_secrets')
    .whereNull('revoked_at')
    .whereNotNull('expires_at')
    .where((q) =>
      q
        .where((n) => n.whereNull('expiring_notified_at').where('expires_at', '<=', db.raw(`? + make_interval(secs => ?)`, [now, noticeSeconds])))
        .orWhere((e) => e.whereNull('expired_notified_at').where('expires_at', '<=', now)),
    )
    .distinct('client_id')
    .pluck('client_id');
}

/**
 * Claims the notices due at `now`, each once whichever instance sweeps (the update locks the rows; a
 * second sweep finds them told): secrets expiring within `noticeSeconds`, and secrets that expired.
 */
export async function claimExpiryNotices(trx: Knex.Transaction, noticeSeconds: number, now: Knex.Raw): Promise<{ expiring: ExpiryNotice[]; expired: ExpiryNotice[] }> {
  const due = () => trx('oauth_client_secrets').whereNull('revoked_at').whereNotNull('expires_at');
  const expired: ExpiryNotice[] = await due()
    .whereNull('expired_notified_at')
    .where('expires_at', '<=', now)
    .update({ expired_notified_at: trx.fn.now(), expiring_notified_at: trx.raw('coalesce(expiring_notified_at, now())') })
    .returning(['id', 'client_id', 'expires_at']);
  const expiring: ExpiryNotice[] = await due()
    .whereNull('expiring_notified_at')
    .where('expires_at', '<=', trx.raw(`? + make_interval(secs => ?)`, [now, noticeSeconds]))
    .update({ expiring_notified_at: trx.fn.now() })
    .returning(['id', 'client_id', 'expires_at']);
  return { expiring, expired };
}
