// When each grant was last used: a token issued or refreshed for it at the token endpoint, shown on
// the "apps with access" page. Informational, so written at most once a minute per grant: this
// process skips grants it wrote within the minute, and the SQL skips rows another instance wrote.
// Only the token endpoint writes it; presenting a token (/v2/me, /v2/auth/check) never does.
import type { Db } from '../storage/db.ts';

const INTERVAL_MS = 60_000;
const MAX_REMEMBERED = 10_000;
const lastWritten = new Map<string, number>();

function forgetOld(now: number): void {
  for (const [grantId, at] of lastWritten) if (now - at >= INTERVAL_MS) lastWritten.delete(grantId);
  if (lastWritten.size >= MAX_REMEMBERED) lastWritten.clear(); // a burst of distinct grants: start over
}

export async function recordGrantUse(db: Db, grant: { accountId?: string | undefined; clientId?: string | undefined; jti: string }): Promise<void> {
  if (!grant.accountId || !grant.clientId) return;
  const now = Date.now();
  if (now - (lastWritten.get(grant.jti) ?? 0) < INTERVAL_MS) return;
  if (lastWritten.size >= MAX_REMEMBERED) forgetOld(now);
  lastWritten.set(grant.jti, now);
  await db('user_grants')
    .where({ account_id: grant.accountId, client_id: grant.clientId, grant_id: grant.jti })
    .where((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<', db.raw(`now() - interval '1 minute'`)))
    .update({ last_used_at: db.fn.now() });
}
