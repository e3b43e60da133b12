// When each client secret was last used (shown to the operator and the developer, to tell which
// secret an app still sends before revoking one), recorded in batches (src/storage/last-use.ts):
// with 10,000 clients a write per secret per minute was a write on most token requests.
import type { Db } from '../storage/db.ts';
import { lastUseRecorder, type LastUse } from '../storage/last-use.ts';
import { markSecretsUsed } from './repository.ts';
import type { Clock } from '../clock.ts';

export type SecretUses = LastUse<number>;

/** The recorder of one database's secret uses (built in system.ts): record(String(id), id). */
export const secretUseRecorder = (db: Db, clock: Clock): SecretUses => lastUseRecorder<number>(db, (q, uses) => markSecretsUsed(q, [...uses.values()]), clock);
