// When each grant was last used: a token issued or refreshed for it at the token endpoint, shown on
// the "apps with access" page. Informational, so it costs the token endpoint next to nothing: this
// process skips grants it recorded within the minute, and the uses it does record are written
// together, one UPDATE for all of them at most every FLUSH_MS (the SQL also skips rows another
// instance wrote within the minute). A crash loses at most those few hundred milliseconds of
// "last used". Only the token endpoint records; presenting a token (/v2/me, /v2/auth/check) never does.
import type { Db } from '../storage/db.ts';

const INTERVAL_MS = 60_000;
const FLUSH_MS = 250;
const MAX_REMEMBERED = 10_000;
const lastWritten = new Map<string, number>();

interface Use {
  accountId: string;
  clientId: string;
}

interface Batch {
  uses: Map<string, Use>; // by grant id
  written: Promise<void>;
}

// Per database (tests run several instances in one process).
const batches = new Map<Db, Batch>();

function forgetOld(now: number): void {
  for (const [grantId, at] of lastWritten) if (now - at >= INTERVAL_MS) lastWritten.delete(grantId);
  if (lastWritten.size >= MAX_REMEMBERED) lastWritten.clear(); // a burst of distinct grants: start over
}

async function write(db: Db, uses: Map<string, Use>): Promise<void> {
  const grants = [...uses];
  await db.raw(
    `update user_grants g set last_used_at = now()
       from unnest(?::text[], ?::text[], ?::text[]) as u(account_id, client_id, grant_id)
      where g.account_id = u.account_id and g.client_id = u.client_id and g.grant_id = u.grant_id
        and (g.last_used_at is null or g.last_used_at < now() - interval '1 minute')`,
    [grants.map(([, use]) => use.accountId), grants.map(([, use]) => use.clientId), grants.map(([grantId]) => grantId)],
  );
}

/** Records a use of the grant; resolves once it is written with the others of its batch. */
export function recordGrantUse(db: Db, grant: { accountId?: string | undefined; clientId?: string | undefined; jti: string }): Promise<void> {
  if (!grant.accountId || !grant.clientId) return Promise.resolve();
  const now = Date.now();
  if (now - (lastWritten.get(grant.jti) ?? 0) < INTERVAL_MS) return Promise.resolve();
  if (lastWritten.size >= MAX_REMEMBERED) forgetOld(now);
  lastWritten.set(grant.jti, now);
  let batch = batches.get(db);
  if (!batch) {
    const uses = new Map<string, Use>();
    const written = new Promise<void>((resolve) => setTimeout(resolve, FLUSH_MS).unref()).then(() => {
      if (batches.get(db)?.uses === uses) batches.delete(db);
      return uses.size ? write(db, uses) : undefined;
    });
    batches.set(db, (batch = { uses, written }));
  }
  batch.uses.set(grant.jti, { accountId: grant.accountId, clientId: grant.clientId });
  return batch.written;
}

/** Writes what is waiting now (at shutdown). */
export async function flushGrantUses(db: Db): Promise<void> {
  const batch = batches.get(db);
  if (!batch) return;
  batches.delete(db);
  const uses = new Map(batch.uses);
  batch.uses.clear(); // the timer's write then finds nothing
  if (uses.size) await write(db, uses);
}
