// The rows of client ID metadata document clients (migration 026): what each document said when
// last fetched, an administrator's decision, and the blocked hosts. Every change is announced to
// the record cache under the client's id, so every instance reads the new status at once (and the
// token cache drops what it knew about the client's tokens: src/system.ts).
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import type { CimdDocument } from './document.ts';

type Q = Db | Knex.Transaction;

export type CimdStatus = 'unreviewed' | 'approved' | 'rejected';
export const CIMD_STATUSES: readonly CimdStatus[] = ['unreviewed', 'approved', 'rejected'];

/** What decides a client's tier, read through the record cache. */
export interface CimdStanding {
  status: CimdStatus;
  /** Its host is blocked: refused whatever its status. */
  hostBlocked: boolean;
}

export interface CimdClientRow {
  clientId: string;
  host: string;
  status: CimdStatus;
  name: string | null;
  redirectUris: string[];
  scopes: string[];
  authMethod: string | null;
  registered: boolean;
  hostBlocked: boolean;
  firstSeenAt: Date;
  lastSeenAt: Date;
  decidedAt: Date | null;
  decidedBy: string | null;
  users: number;
}

/** The host a block applies to: lower-case, with its port when it has one. */
export const hostOf = (clientId: string) => new URL(clientId).host.toLowerCase();

/** The record cache's key of a host's block (announced when it is blocked or unblocked). */
const hostKey = (host: string) => `cimd-host:${host}`;

export async function readStanding({ db, records }: { db: Db; records: RecordCache }, clientId: string): Promise<CimdStanding> {
  const host = hostOf(clientId);
  // Two records: the client's (announced on decisions) and its host's (announced on block and
  // unblock, which also reaches clients never seen, whose rows do not exist).
  const [row, blocked] = await Promise.all([
    records.read('client', clientId, async () => (await db('cimd_clients').where('client_id', clientId).first('status')) ?? null),
    records.read('client', hostKey(host), async () => Boolean(await db('cimd_blocked_hosts').where('host', host).first('host'))),
  ]);
  return { status: (row?.status ?? 'unreviewed') as CimdStatus, hostBlocked: blocked };
}

/** A fetched document, recorded: new clients appear in the review list as unreviewed. */
export async function recordSighting(q: Q, doc: CimdDocument): Promise<void> {
  const seen = {
    name: doc.name,
    redirect_uris: JSON.stringify(doc.redirectUris),
    scopes: JSON.stringify(doc.scopes),
    token_endpoint_auth_method: doc.authMethod,
    last_seen_at: q.fn.now(),
  };
  // Its standing does not change (no row reads as unreviewed): nothing to announce.
  await q('cimd_clients').insert({ client_id: doc.clientId, host: hostOf(doc.clientId), ...seen }).onConflict('client_id').merge(Object.keys(seen));
}

export async function setStatus(q: Q, records: RecordCache, clientId: string, status: CimdStatus, by: string): Promise<boolean> {
  const changed = await q('cimd_clients').where('client_id', clientId).update({ status, decided_at: q.fn.now(), decided_by: by });
  await records.announce(q, 'client', clientId);
  return changed > 0;
}

export async function blockHost(q: Q, records: RecordCache, host: string, by: string, reason: string | undefined): Promise<string[]> {
  await q('cimd_blocked_hosts').insert({ host, blocked_by: by, reason: reason ?? null }).onConflict('host').ignore();
  const ids: string[] = (await q('cimd_clients').where('host', host).select('client_id')).map((r: { client_id: string }) => r.client_id);
  for (const id of [hostKey(host), ...ids]) await records.announce(q, 'client', id);
  return ids;
}

export async function unblockHost(q: Q, records: RecordCache, host: string): Promise<boolean> {
  const removed = await q('cimd_blocked_hosts').where('host', host).delete();
  await records.announce(q, 'client', hostKey(host));
  for (const { client_id } of await q('cimd_clients').where('host', host).select('client_id')) await records.announce(q, 'client', client_id);
  return removed > 0;
}

export async function blockedHosts(q: Q): Promise<Array<{ host: string; blockedBy: string; reason: string | null; blockedAt: Date }>> {
  const rows = await q('cimd_blocked_hosts').orderBy('host');
  return rows.map((r: { host: string; blocked_by: string; reason: string | null; blocked_at: Date }) => ({ host: r.host, blockedBy: r.blocked_by, reason: r.reason, blockedAt: r.blocked_at }));
}

interface Row {
  client_id: string;
  host: string;
  status: CimdStatus;
  name: string | null;
  redirect_uris: string[];
  scopes: string[];
  token_endpoint_auth_method: string | null;
  registered: boolean;
  first_seen_at: Date;
  last_seen_at: Date;
  decided_at: Date | null;
  decided_by: string | null;
  blocked: string | null;
  users: string | number;
}

const toRow = (r: Row): CimdClientRow => ({
  clientId: r.client_id,
  host: r.host,
  status: r.status,
  name: r.name,
  redirectUris: r.redirect_uris,
  scopes: r.scopes,
  authMethod: r.token_endpoint_auth_method,
  registered: r.registered,
  hostBlocked: r.blocked !== null,
  firstSeenAt: r.first_seen_at,
  lastSeenAt: r.last_seen_at,
  decidedAt: r.decided_at,
  decidedBy: r.decided_by,
  users: Number(r.users),
});

function listing(q: Q) {
  return q('cimd_clients as c')
    .leftJoin('cimd_blocked_hosts as b', 'b.host', 'c.host')
    .select('c.*', 'b.host as blocked', q.raw('(select count(distinct g.account_id) from user_grants g where g.client_id = c.client_id) as users'));
}

export async function listCimdClients(q: Q, filter: { status?: CimdStatus; limit?: number } = {}): Promise<CimdClientRow[]> {
  let query = listing(q).orderByRaw("case c.status when 'unreviewed' then 0 when 'approved' then 1 else 2 end").orderBy('c.last_seen_at', 'desc');
  if (filter.status) query = query.where('c.status', filter.status);
  if (filter.limit) query = query.limit(filter.limit);
  return ((await query) as Row[]).map(toRow);
}

export async function findCimdClient(q: Q, clientId: string): Promise<CimdClientRow | undefined> {
  const row = (await listing(q).where('c.client_id', clientId).first()) as Row | undefined;
  return row && toRow(row);
}

/** Distinct users holding a grant of the client, and whether `accountId` is one of them. */
export async function usersOf(q: Q, clientId: string, accountId: string): Promise<{ count: number; includes: boolean }> {
  const [row] = await q('user_grants')
    .where('client_id', clientId)
    .select(q.raw('count(distinct account_id) as count'), q.raw('bool_or(account_id = ?) as includes', [accountId]));
  return { count: Number(row?.count ?? 0), includes: Boolean(row?.includes) };
}
