// The rows of client ID metadata document clients (migrations 026, 029): what each document said
// when last fetched, an administrator's decision and what it covered (approval.ts), and the
// blocked hosts. Every change is announced to
// the record cache under the client's id, so every instance reads the new status at once (and the
// token cache drops what it knew about the client's tokens: src/system.ts).
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import type { CimdDocument } from './document.ts';
import { covers, hostnameOf, hostnameOfHost, siteOf } from './host-blocks.ts';
import { fingerprint, pendingChange, type CimdPendingChange, type ClientAsks } from './approval.ts';
import type { CimdStatus } from '../directory/status.ts';

type Q = Db | Knex.Transaction;

/** What decides a client's tier, read through the record cache. */
export interface CimdStanding {
  status: CimdStatus;
  /** It has a row: its document was fetched and used before (or it registered). */
  known: boolean;
  /** The block that covers its host (host-blocks.ts): refused whatever its status. */
  block: string | undefined;
  /** What its approval covered; null until approved. */
  approved: ClientAsks | null;
  /** Held to the high-trust profile by an administrator (clients set-high-trust; src/oauth/high-trust.ts). */
  highTrust: boolean;
}

/** The `approved` column as stored (migration 029). */
export interface StoredApproval {
  scopes: string[];
  redirect_uris: string[];
  policy_uri: string | null;
  tos_uri: string | null;
}

export const approvalOf = (stored: StoredApproval | null | undefined): ClientAsks | null =>
  stored ? { scopes: stored.scopes, redirectUris: stored.redirect_uris, links: { policyUri: stored.policy_uri, tosUri: stored.tos_uri } } : null;

const storedApproval = (a: ClientAsks): StoredApproval => ({ scopes: a.scopes, redirect_uris: a.redirectUris, policy_uri: a.links.policyUri, tos_uri: a.links.tosUri });

export interface CimdClientRow {
  clientId: string;
  host: string;
  status: CimdStatus;
  name: string | null;
  redirectUris: string[];
  scopes: string[];
  links: ClientAsks['links'];
  authMethod: string | null;
  registered: boolean;
  hostBlocked: boolean;
  firstSeenAt: Date;
  lastSeenAt: Date;
  decidedAt: Date | null;
  decidedBy: string | null;
  users: number;
  /** What its approval covers while it is approved; null otherwise. */
  approved: ClientAsks | null;
  /** An approved client's document asking for more than was approved (rejected: an administrator said no to exactly this). */
  pendingChange: (CimdPendingChange & { rejected: boolean }) | null;
  /** The fingerprint of what the review showed of it (its asks; its pending change once approved). */
  seen: string;
  /** Held to the high-trust profile (clients set-high-trust). */
  highTrust: boolean;
}

/** What a row says the client asks for (its document as last seen, or its registration). */
export const asksOf = (r: { scopes: string[]; redirectUris: string[]; links: ClientAsks['links'] }): ClientAsks => ({ scopes: r.scopes, redirectUris: r.redirectUris, links: r.links });

/** A document client's host as shown and recorded: lower-case, with its port when it has one. */
export const hostOf = (clientId: string) => new URL(clientId).host.toLowerCase();

/** The record cache's key of a site's blocks (announced when one of them is added or removed). */
const siteKey = (site: string) => `cimd-site:${site}`;

/** The blocks within the site of a host name: every block that could cover it (host-blocks.ts). */
function blocksOfSite({ db, records }: { db: Db; records: RecordCache }, site: string): Promise<string[]> {
  return records.read('client', siteKey(site), async () => (await db('cimd_blocked_hosts').where('host', site).orWhereRaw('right(host, ?) = ?', [site.length + 1, `.${site}`]).pluck('host')) as string[]);
}

/** The block covering a host name (as hostnameOf gives it), if one does. */
export async function blockCovering(deps: { db: Db; records: RecordCache }, hostname: string): Promise<string | undefined> {
  return (await blocksOfSite(deps, siteOf(hostname))).find((block) => covers(block, hostname));
}

export async function readStanding(deps: { db: Db; records: RecordCache }, clientId: string): Promise<CimdStanding> {
  // Two records: the client's (announced on decisions and when first recorded) and its site's
  // blocks (announced on block and unblock, which also reaches clients never seen, without rows).
  const [row, block] = await Promise.all([
    deps.records.read('client', clientId, async () => (await deps.db('cimd_clients').where('client_id', clientId).first('status', 'approved', 'high_trust')) ?? null),
    blockCovering(deps, hostnameOf(clientId)),
  ]);
  return { status: (row?.status ?? 'unreviewed') as CimdStatus, known: row !== null, block, approved: approvalOf(row?.approved), highTrust: row?.high_trust === true };
}

/** An administrator's high-trust mark (src/review/review.ts checks it may be set), seen by every instance at once. */
export async function setHighTrust(q: Q, records: RecordCache, clientId: string, on: boolean): Promise<void> {
  await q('cimd_clients').where('client_id', clientId).update({ high_trust: on });
  await records.announce(q, 'client', clientId);
}

/** A fetched document, recorded: new clients appear in the review list as unreviewed. */
export async function recordSighting(q: Q, records: RecordCache, doc: CimdDocument): Promise<void> {
  const seen = {
    name: doc.name,
    redirect_uris: JSON.stringify(doc.redirectUris),
    scopes: JSON.stringify(doc.scopes),
    policy_uri: doc.links.policyUri,
    tos_uri: doc.links.tosUri,
    token_endpoint_auth_method: doc.authMethod,
    last_seen_at: q.fn.now(),
  };
  // Its status does not change (no row reads as unreviewed), but a first row makes it known (its
  // fetches no longer limited: fetch-limits.ts): announced once, when inserted.
  const [row] = await q('cimd_clients').insert({ client_id: doc.clientId, host: hostOf(doc.clientId), ...seen }).onConflict('client_id').merge(Object.keys(seen)).returning(q.raw('(xmax = 0) as inserted'));
  if (row?.inserted) await records.announce(q, 'client', doc.clientId);
}

/** A decision; an approval records what it covers (`approved`: what the administrator saw). */
export async function setStatus(q: Q, records: RecordCache, clientId: string, status: CimdStatus, by: string, approved?: ClientAsks): Promise<boolean> {
  const covered = approved ? { approved: JSON.stringify(storedApproval(approved)), change_rejected: null } : {};
  const changed = await q('cimd_clients').where('client_id', clientId).update({ status, decided_at: q.fn.now(), decided_by: by, ...covered });
  await records.announce(q, 'client', clientId);
  return changed > 0;
}

/** An approved client's approval, widened by a change an administrator approved. */
export async function setApproval(q: Q, records: RecordCache, clientId: string, approved: ClientAsks): Promise<void> {
  await q('cimd_clients').where('client_id', clientId).update({ approved: JSON.stringify(storedApproval(approved)), change_rejected: null });
  await records.announce(q, 'client', clientId);
}

/** Remembers that an administrator rejected this pending change (nothing the client uses changes). */
export async function setChangeRejected(q: Q, clientId: string, change: CimdPendingChange): Promise<void> {
  await q('cimd_clients').where('client_id', clientId).update({ change_rejected: fingerprint(change) });
}

/**
 * The host names blocks are matched against for a client: a document client's URL's; every
 * redirect URI's of a registered client (it has no host of its own: registration.ts).
 */
const hostnamesOf = (r: { host: string; registered: boolean; redirect_uris: string[] }) => (r.registered ? r.redirect_uris.map(hostnameOf) : [hostnameOfHost(r.host)]);

const isCovered = (blocks: readonly string[], r: { host: string; registered: boolean; redirect_uris: string[] }) => hostnamesOf(r).some((name) => blocks.some((block) => covers(block, name)));

/** The clients (document or registered) a block covers. */
async function clientsCoveredBy(q: Q, block: string): Promise<string[]> {
  const rows: Array<{ client_id: string; host: string; registered: boolean; redirect_uris: string[] }> = await q('cimd_clients')
    .whereRaw('strpos(host, ?) > 0', [block])
    .orWhereRaw('registered and strpos(redirect_uris::text, ?) > 0', [block])
    .select('client_id', 'host', 'registered', 'redirect_uris');
  return rows.filter((r) => isCovered([block], r)).map((r) => r.client_id);
}

/** Blocks `block` (as blockName gives it); answers the clients seen that it covers. */
export async function blockHost(q: Q, records: RecordCache, block: string, by: string, reason: string | undefined): Promise<string[]> {
  await q('cimd_blocked_hosts').insert({ host: block, blocked_by: by, reason: reason ?? null }).onConflict('host').ignore();
  const ids = await clientsCoveredBy(q, block);
  for (const id of [siteKey(siteOf(block)), ...ids]) await records.announce(q, 'client', id);
  return ids;
}

export async function unblockHost(q: Q, records: RecordCache, block: string): Promise<boolean> {
  const removed = await q('cimd_blocked_hosts').where('host', block).delete();
  for (const id of [siteKey(siteOf(block)), ...(await clientsCoveredBy(q, block))]) await records.announce(q, 'client', id);
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
  policy_uri: string | null;
  tos_uri: string | null;
  token_endpoint_auth_method: string | null;
  registered: boolean;
  approved: StoredApproval | null;
  change_rejected: string | null;
  first_seen_at: Date;
  last_seen_at: Date;
  decided_at: Date | null;
  decided_by: string | null;
  high_trust: boolean;
  users: string | number;
}

function toRow(r: Row, blocks: string[]): CimdClientRow {
  const asks = { scopes: r.scopes, redirectUris: r.redirect_uris, links: { policyUri: r.policy_uri, tosUri: r.tos_uri } };
  const approved = r.status === 'approved' ? approvalOf(r.approved) : null;
  const change = approved ? pendingChange(asks, approved) : undefined;
  return {
    clientId: r.client_id,
    host: r.host,
    status: r.status,
    name: r.name,
    ...asks,
    authMethod: r.token_endpoint_auth_method,
    registered: r.registered,
    hostBlocked: isCovered(blocks, r),
    firstSeenAt: r.first_seen_at,
    lastSeenAt: r.last_seen_at,
    decidedAt: r.decided_at,
    decidedBy: r.decided_by,
    users: Number(r.users),
    approved,
    pendingChange: change ? { ...change, rejected: fingerprint(change) === r.change_rejected } : null,
    seen: fingerprint(change ?? asks),
    highTrust: r.high_trust === true,
  };
}

function listing(q: Q) {
  return q('cimd_clients as c')
    .select('c.*', q.raw('(select count(distinct g.account_id) from user_grants g where g.client_id = c.client_id) as users'));
}

export async function listCimdClients(q: Q, filter: { status?: CimdStatus; limit?: number } = {}): Promise<CimdClientRow[]> {
  let query = listing(q).orderByRaw("case c.status when 'unreviewed' then 0 when 'approved' then 1 else 2 end").orderBy('c.last_seen_at', 'desc');
  if (filter.status) query = query.where('c.status', filter.status);
  if (filter.limit) query = query.limit(filter.limit);
  const [rows, blocks] = await Promise.all([query as Promise<Row[]>, q('cimd_blocked_hosts').pluck('host') as Promise<string[]>]);
  return rows.map((r) => toRow(r, blocks));
}

/** One client, as listed; `lock`: its row locked for a decision (within a transaction). */
export async function findCimdClient(q: Q, clientId: string, { lock = false } = {}): Promise<CimdClientRow | undefined> {
  if (lock) await q('cimd_clients').where('client_id', clientId).forUpdate().first('client_id');
  const [row, blocks] = await Promise.all([listing(q).where('c.client_id', clientId).first() as Promise<Row | undefined>, q('cimd_blocked_hosts').pluck('host') as Promise<string[]>]);
  return row && toRow(row, blocks);
}

/** Distinct users holding a grant of the client, and whether `accountId` is one of them. */
export async function usersOf(q: Q, clientId: string, accountId: string): Promise<{ count: number; includes: boolean }> {
  const [row] = await q('user_grants')
    .where('client_id', clientId)
    .select(q.raw('count(distinct account_id) as count'), q.raw('bool_or(account_id = ?) as includes', [accountId]));
  return { count: Number(row?.count ?? 0), includes: Boolean(row?.includes) };
}
