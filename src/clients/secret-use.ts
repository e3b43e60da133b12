// When each client secret was last used (shown to the operator and the developer, to tell which
// secret an app still sends before revoking one), recorded in batches (src/storage/last-use.ts):
// with 10,000 clients a write per secret per minute was a write on most token requests.
import type { Db } from '../storage/db.ts';
import { lastUseRecorder } from '../storage/last-use.ts';
import { markSecretsUsed } from './repository.ts';

const secretUses = lastUseRecorder<number>((db, uses) => markSecretsUsed(db, [...uses.values()]));

/** Records a use of the secret; resolves once it is written with the others of its batch. */
export const recordSecretUse = (db: Db, secretId: number): Promise<void> => secretUses.record(db, String(secretId), secretId);

export const flushSecretUses = (db: Db): Promise<void> => secretUses.flush(db);
