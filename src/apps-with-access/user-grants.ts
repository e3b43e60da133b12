// The record of who granted what to which client (user_grants): written at consent, read by the
// "Apps with access" page (src/web/connected-apps.ts), which also revokes everything a user
// granted to an app. Its last use is noted by src/oauth/grant-use.ts.
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { LEGACY_FULL_ACCESS } from '../scopes.ts';
import type { ChangeDeps } from '../clients/service.ts';
import { webhookEvent } from '../webhooks/events.ts';
import { revokeGrant } from '../oauth/grants.ts';

export async function recordUserGrant(db: Db, accountId: string, clientId: string, grantId: string, scopes: string[]): Promise<void> {
  await db('user_grants')
    .insert({ account_id: accountId, client_id: clientId, grant_id: grantId, scopes: JSON.stringify(scopes), granted_at: db.fn.now() })
    .onConflict(['account_id', 'client_id', 'grant_id'])
    .merge(['scopes', 'granted_at']);
}

export interface AppWithAccess {
  clientId: string;
  clientName: string;
  scopes: string[];
  fullAccess: boolean;
  grantedAt: Date;
  /** The last token issued or refreshed for it (src/oauth/grant-use.ts); null when none since. */
  lastUsedAt: Date | null;
}

/** The clients a user has authorized and that still hold a live grant, newest first. */
export async function appsWithAccess(db: Db, provider: Provider, accountId: string): Promise<AppWithAccess[]> {
  const rows: Array<{ client_id: string; grant_id: string; scopes: string[]; granted_at: Date; last_used_at: Date | null; name: string }> = await db('user_grants')
    // Every kind of client: the registry's, or a metadata-document or registered one (named by its name, else its id).
    .leftJoin('oauth_clients', 'oauth_clients.id', 'user_grants.client_id')
    .leftJoin('cimd_clients', 'cimd_clients.client_id', 'user_grants.client_id')
    .where('user_grants.account_id', accountId)
    .where((q) => q.whereNotNull('oauth_clients.id').orWhereNotNull('cimd_clients.client_id'))
    .orderBy('user_grants.granted_at', 'desc')
    .select('user_grants.client_id', 'user_grants.grant_id', 'user_grants.scopes', 'user_grants.granted_at', 'user_grants.last_used_at', db.raw('coalesce(oauth_clients.name, cimd_clients.name, cimd_clients.client_id) as name'));
  const apps = new Map<string, AppWithAccess>();
  for (const row of rows) {
    // Grants end on their own too (expiry, suspension, refresh token reuse): forget those.
    if (!(await provider.Grant.find(row.grant_id))) {
      await db('user_grants').where({ account_id: accountId, grant_id: row.grant_id }).delete();
      continue;
    }
    const app = apps.get(row.client_id) ?? { clientId: row.client_id, clientName: row.name, scopes: [], fullAccess: false, grantedAt: row.granted_at, lastUsedAt: null };
    if (row.last_used_at && (!app.lastUsedAt || row.last_used_at > app.lastUsedAt)) app.lastUsedAt = row.last_used_at;
    for (const scope of row.scopes) {
      if (scope === LEGACY_FULL_ACCESS) app.fullAccess = true;
      else if (!app.scopes.includes(scope)) app.scopes.push(scope);
    }
    apps.set(row.client_id, app);
  }
  return [...apps.values()];
}

/**
 * Revokes everything a user granted to a client: its access and refresh tokens stop working at
 * once. The record goes with the app's grant.revoked event (user_disconnected), in one transaction.
 */
export async function revokeAppAccess({ db, outbox }: ChangeDeps, provider: Provider, accountId: string, clientId: string): Promise<number> {
  const grantIds: string[] = await db('user_grants').where({ account_id: accountId, client_id: clientId }).pluck('grant_id');
  await Promise.all(grantIds.map((grantId) => revokeGrant(provider, grantId)));
  await outbox.prepare(clientId);
  await db.transaction(async (trx) => {
    const removed = await trx('user_grants').where({ account_id: accountId, client_id: clientId }).delete();
    if (removed > 0) await outbox.enqueue(trx, clientId, [webhookEvent(clientId, 'grant.revoked', { user_id: accountId, reason: 'user_disconnected' })]);
  });
  return grantIds.length;
}
