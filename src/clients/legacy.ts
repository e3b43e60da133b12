// Legacy clients and their migration to scopes (docs/legacy-migration.md), with our order guard: what a legacy
// client asks for, which grants are unscoped, and whether setting client scopes is safe yet.
import type { Db } from '../storage/db.ts';
import { InputError } from '../errors.ts';
import type { ClientRecord } from './model.ts';
import { POLICY } from '../settings.ts';

export const GUARD_WINDOW_DAYS = POLICY.GUARD_WINDOW_DAYS.value;
const SUGGESTION_WINDOW_DAYS = 30;

/**
 * Counts one authorization request of a legacy client by the scope set it asked for ([] = none),
 * per day, and remembers the switch: when the app first sent scope, and the requests without
 * scope that still came after it (what the order guard judges).
 */
export async function recordLegacyRequest(db: Db, clientId: string, scopes: string[]): Promise<void> {
  // One statement, so both tables note the same now().
  const switchChange =
    scopes.length > 0
      ? `insert into legacy_scope_switch (client_id, first_scoped_at) values (:clientId, now()) on conflict (client_id) do nothing`
      : `update legacy_scope_switch set unscoped_since = unscoped_since + 1, last_unscoped_at = now() where client_id = :clientId`;
  await db.raw(
    `with counted as (
       insert into client_scope_requests (client_id, day, scope_set, count, last_at)
       values (:clientId, current_date, :scopeSet, 1, now())
       on conflict (client_id, day, scope_set) do update set count = client_scope_requests.count + 1, last_at = now()
     )
     ${switchChange}`,
    { clientId, scopeSet: [...scopes].sort().join(' ') },
  );
}

interface RequestSummary {
  /** Requests without scope in the guard window, and the last one (in the 30 days kept). */
  unscopedInWindow: number;
  lastUnscopedAt: Date | null;
  scoped: number;
  requestedScopes: string[];
  /** When the app first sent scope, and the requests without scope since then. */
  switch: { firstScopedAt: Date; unscopedSince: number; lastUnscopedSinceAt: Date | null } | undefined;
}

async function recentRequests(db: Db, clientId: string): Promise<RequestSummary> {
  const [rows, switchRow]: [Array<{ day: Date; scope_set: string; count: number; last_at: Date }>, { first_scoped_at: Date; unscoped_since: number; last_unscoped_at: Date | null } | undefined] =
    await Promise.all([
      db('client_scope_requests')
        .where('client_id', clientId)
        .where('day', '>=', db.raw(`current_date - ?::int`, [SUGGESTION_WINDOW_DAYS]))
        .select('day', 'scope_set', 'count', 'last_at'),
      db('legacy_scope_switch').where('client_id', clientId).first(),
    ]);
  const guardSince = Date.now() - GUARD_WINDOW_DAYS * 86_400_000;
  const unscopedRows = rows.filter((r) => r.scope_set === '');
  const scopedRows = rows.filter((r) => r.scope_set !== '');
  return {
    unscopedInWindow: unscopedRows.filter((r) => r.last_at.getTime() >= guardSince).reduce((n, r) => n + r.count, 0),
    lastUnscopedAt: unscopedRows.reduce<Date | null>((last, r) => (!last || r.last_at > last ? r.last_at : last), null),
    scoped: scopedRows.reduce((n, r) => n + r.count, 0),
    requestedScopes: [...new Set(scopedRows.flatMap((r) => r.scope_set.split(' ')))].sort(),
    switch: switchRow && { firstScopedAt: switchRow.first_scoped_at, unscopedSince: switchRow.unscoped_since, lastUnscopedSinceAt: switchRow.last_unscoped_at },
  };
}

/**
 * Why setting client scopes now would lock users out (docs/legacy-migration.md, the order guard), or null. The guard judges
 * the switch, not the calendar: once the app sends scope, only requests without scope that keep
 * coming after that (in the last 7 days) refuse; before any scoped request, any in the last 7 days.
 */
function guardRefusal(recent: RequestSummary): string | null {
  const sw = recent.switch;
  const since = Date.now() - GUARD_WINDOW_DAYS * 86_400_000;
  if (sw) {
    if (!sw.lastUnscopedSinceAt || sw.lastUnscopedSinceAt.getTime() < since) return null;
    return (
      `the app began sending scope at ${sw.firstScopedAt.toISOString()}, but ${sw.unscopedSince} authorization request(s) without scope came since ` +
      `(the last at ${sw.lastUnscopedSinceAt.toISOString()}): some users still reach the old URL`
    );
  }
  if (recent.unscopedInWindow === 0) return null;
  return (
    `this legacy client sent ${recent.unscopedInWindow} authorization request(s) without scope in the last ${GUARD_WINDOW_DAYS} days ` +
    `(the last at ${recent.lastUnscopedAt!.toISOString()}) and none with scope yet`
  );
}

export type MigrationState = 'legacy' | 'migrating' | 'migrated';

export interface MigrationStatus {
  state: MigrationState;
  unscoped_requests_last_7_days: number;
  last_unscoped_request_at: string | null;
  /** When the app first sent an authorization request with scope (step a), and the requests without scope since. */
  first_scoped_request_at: string | null;
  unscoped_requests_since_first_scoped: number;
  /** Scopes the app asked for in the last 30 days: a suggestion for `clients set-scopes`. */
  requested_scopes_recently: string[];
  /** Why `clients set-scopes` is refused now without --force; null when it is not. */
  set_scopes_refused_because: string | null;
}

/** Where a legacy client stands in its migration; undefined for clients that were never legacy. */
export async function migrationStatus(db: Db, client: ClientRecord): Promise<MigrationStatus | undefined> {
  if (!client.legacy) return undefined;
  const recent = await recentRequests(db, client.clientId);
  const migrated = client.scopes.length > 0;
  const state: MigrationState = migrated ? 'migrated' : recent.scoped > 0 || recent.switch ? 'migrating' : 'legacy';
  return {
    state,
    unscoped_requests_last_7_days: recent.unscopedInWindow,
    last_unscoped_request_at: recent.lastUnscopedAt?.toISOString() ?? null,
    first_scoped_request_at: recent.switch?.firstScopedAt.toISOString() ?? null,
    unscoped_requests_since_first_scoped: recent.switch?.unscopedSince ?? 0,
    requested_scopes_recently: recent.requestedScopes,
    set_scopes_refused_because: migrated ? null : guardRefusal(recent),
  };
}

/**
 * Spec 5.6 point 3: setting client scopes before the authorization URL carries `scope` breaks
 * every user still sent to the old URL. Refuse while such requests are still coming.
 */
export async function assertSafeToSetScopes(db: Db, client: ClientRecord): Promise<void> {
  if (!client.legacy || client.scopes.length > 0) return;
  const refusal = guardRefusal(await recentRequests(db, client.clientId));
  if (!refusal) return;
  throw new InputError(
    `refusing to set scopes: ${refusal}; those users would be refused. Add scope to every authorization URL of the app ` +
      `and wait until no request without scope has come for ${GUARD_WINDOW_DAYS} days, or repeat with --force`,
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
