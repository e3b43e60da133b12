// When each grant was last used: a token issued or refreshed for it at the token endpoint, shown on
// the "apps with access" page, recorded in batches (src/storage/last-use.ts). Only the token
// endpoint records; presenting a token (/v2/me, /v2/auth/check) never does.
import type { Db } from '../storage/db.ts';
import { lastUseRecorder, type LastUse } from '../storage/last-use.ts';
import type { Clock } from '../clock.ts';

interface Use {
  accountId: string;
  clientId: string;
}

/** Records the uses of one database's grants (built in system.ts). */
export interface GrantUses {
  /** Records a use of the grant; resolves once it is written with the others of its batch. */
  record(grant: { accountId?: string | undefined; clientId?: string | undefined; jti: string }): Promise<void>;
  flush(): Promise<void>;
}

const writeGrantUses = async (db: Db, uses: Map<string, Use>) => {
  const grants = [...uses];
  await db.raw(
    `update user_grants g set last_used_at = now()
       from unnest(?::text[], ?::text[], ?::text[]) as u(account_id, client_id, grant_id)
      where g.account_id = u.account_id and g.client_id = u.client_id and g.grant_id = u.grant_id
        and (g.last_used_at is null or g.last_used_at < now() - interval '1 minute')`,
    [grants.map(([, use]) => use.accountId), grants.map(([, use]) => use.clientId), grants.map(([grantId]) => grantId)],
  );
};

export function grantUseRecorder(db: Db, clock: Clock): GrantUses {
  const uses: LastUse<Use> = lastUseRecorder(db, writeGrantUses, clock);
  return {
    record: (grant) => (grant.accountId && grant.clientId ? uses.record(grant.jti, { accountId: grant.accountId, clientId: grant.clientId }) : Promise.resolve()),
    flush: () => uses.flush(),
  };
}
