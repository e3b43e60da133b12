// Legacy clients and their migration to scopes (spec 5.6), with our order guard: what a legacy
// client asks for, which grants are unscoped, and whether setting client scopes is safe yet.
import type { Db } from '../storage/db.ts';
import { InputError } from '../errors.ts';
import type { ClientRecord } from './store.ts';

export const GUARD_WINDOW_DAYS = 7;
const SUGGESTION_WINDOW_DAYS = 30;

/** Counts one authorization request of a legacy client by the scope set it asked for ([] = none). */
export async function recordLegacyRequest(db: Db, clientId: string, scopes: string[]): Promise<void> {
  const scopeSet = [...scopes].sort().join(' ');
  await db.raw(
    `insert into client_scope_requests (client_id, day, scope_set, count, last_at)
     values (?, current_date, ?, 1, now())
     on conflict (client_id, day, scope_set) do update set count = client_scope_requests.count + 1, last_at = now()`,
    [clientId, scopeSet],
  );
}

interface RequestSummary {
  unscoped: number;
  lastUnscopedAt: Date | null;
  scoped: number;
  requestedScopes: string[];
}

async function recentRequests(db: Db, clientId: string): Promise<RequestSummary> {
  const rows: Array<{ day: Date; scope_set: string; count: number; last_at: Date }> = await db('client_scope_requests')
    .where('client_id', clientId)
    .where('day', '>=', db.raw(`current_date - ?::int`, [SUGGESTION_WINDOW_DAYS]))
    .select('day', 'scope_set', 'count', 'last_at');
  const guardSince = Date.now() - GUARD_WINDOW_DAYS * 86_400_000;
  const unscopedRows = rows.filter((r) => r.scope_set === '' && r.last_at.getTime() >= guardSince);
  const scopedRows = rows.filter((r) => r.scope_set !== '');
  return {
    unscoped: unscopedRows.reduce((n, r) => n + r.count, 0),
    lastUnscopedAt: unscopedRows.reduce<Date | null>((last, r) => (!last || r.last_at > last ? r.last_at : last), null),
    scoped: scopedRows.reduce((n, r) => n + r.count, 0),
    requestedScopes: [...new Set(scopedRows.flatMap((r) => r.scope_set.split(' ')))].sort(),
  };
}

export type MigrationState = 'legacy' | 'migrating' | 'migrated';

export interface MigrationStatus {
  state: MigrationState;
  unscoped_requests_last_7_days: number;
  last_unscoped_request_at: string | null;
  /** Scopes the app asked for in the last 30 days: a suggestion for `clients set-scopes`. */
  requested_scopes_recently: string[];
}

/** Where a legacy client stands in its migration; undefined for clients that were never legacy. */
export async function migrationStatus(db: Db, client: ClientRecord): Promise<MigrationStatus | undefined> {
  if (!client.legacy) return undefined;
  const recent = await recentRequests(db, client.clientId);
  const state: MigrationState = client.scopes.length > 0 ? 'migrated' : recent.scoped > 0 ? 'migrating' : 'legacy';
  return {
    state,
    unscoped_requests_last_7_days: recent.unscoped,
    last_unscoped_request_at: recent.lastUnscopedAt?.toISOString() ?? null,
    requested_scopes_recently: recent.requestedScopes,
  };
}

/**
 * Spec 5.6 point 3: setting client scopes before the authorization URL carries `scope` breaks
 * every user still sent to the old URL. Refuse while such requests were seen recently.
 */
export async function assertSafeToSetScopes(db: Db, client: ClientRecord): Promise<void> {
  if (!client.legacy || client.scopes.length > 0) return;
  const recent = await recentRequests(db, client.clientId);
  if (recent.unscoped === 0) return;
  throw new InputError(
    `refusing to set scopes: this legacy client sent ${recent.unscoped} authorization request(s) without scope in the last ${GUARD_WINDOW_DAYS} days ` +
      `(last at ${recent.lastUnscopedAt!.toISOString()}); those users would be refused. Add scope to the app's authorization URL first, ` +
      `wait until no request without scope arrives, or repeat with --force`,
  );
}

export async function rememberLegacyGrant(db: Db, accountId: string, clientId: string, grantId: string): Promise<void> {
  await db('legacy_grants').insert({ account_id: accountId, client_id: clientId, grant_id: grantId }).onConflict().ignore();
}

/** Forgets and returns the user's unscoped legacy grants for the client. */
export async function takeLegacyGrants(db: Db, accountId: string, clientId: string): Promise<string[]> {
  const rows: Array<{ grant_id: string }> = await db('legacy_grants').where({ account_id: accountId, client_id: clientId }).delete().returning('grant_id');
  return rows.map((r) => r.grant_id);
}
