// When each grant was last used: a token issued or refreshed for it at the token endpoint, shown on
// the "apps with access" page, recorded in batches (src/storage/last-use.ts). Only the token
// endpoint records; presenting a token (/v2/me, /v2/auth/check) never does.
import type { Db } from '../storage/db.ts';
import { lastUseRecorder } from '../storage/last-use.ts';

interface Use {
  accountId: string;
  clientId: string;
}

const grantUses = lastUseRecorder<Use>(async (db, uses) => {
  const grants = [...uses];
  await db.raw(
    `update user_grants g set last_used_at = now()
       from unnest(?::text[], ?::text[], ?::text[]) as u(account_id, client_id, grant_id)
      where g.account_id = u.account_id and g.client_id = u.client_id and g.grant_id = u.grant_id
        and (g.last_used_at is null or g.last_used_at < now() - interval '1 minute')`,
    [grants.map(([, use]) => use.accountId), grants.map(([, use]) => use.clientId), grants.map(([grantId]) => grantId)],
  );
});

/** Records a use of the grant; resolves once it is written with the others of its batch. */
export function recordGrantUse(db: Db, grant: { accountId?: string | undefined; clientId?: string | undefined; jti: string }): Promise<void> {
  if (!grant.accountId || !grant.clientId) return Promise.resolve();
  return grantUses.record(db, grant.jti, { accountId: grant.accountId, clientId: grant.clientId });
}

export const flushGrantUses = (db: Db): Promise<void> => grantUses.flush(db);
