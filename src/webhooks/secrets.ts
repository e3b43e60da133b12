// Each client's webhook signing secrets (Standard Webhooks: whsec_<base64 of 32 random bytes>).
// Its own per client, so an event signed for one app never verifies at another. Shown once to the
// owner, stored only encrypted under DATA_ENCRYPTION_KEYS. A new secret replaces the current one,
// which keeps signing for WEBHOOK_SECRET_OVERLAP_SECONDS so the app can switch without losing events.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import type { DataCipher } from '../storage/data-encryption.ts';
import { POLICY } from '../settings.ts';

export const WEBHOOK_SECRET_OVERLAP_SECONDS = POLICY.WEBHOOK_SECRET_OVERLAP_SECONDS.value;

export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** Makes a new current secret for the client (in the caller's transaction, the client locked); returns its value. */
export async function replaceWebhookSecret(trx: Knex.Transaction, clientId: string, cipher: DataCipher): Promise<{ value: string; replaced: boolean }> {
  await trx('webhook_secrets').where('client_id', clientId).whereNotNull('expires_at').where('expires_at', '<=', trx.fn.now()).delete();
  const replaced = await trx('webhook_secrets').where('client_id', clientId).whereNull('expires_at').update({ expires_at: trx.raw(`now() + interval '${WEBHOOK_SECRET_OVERLAP_SECONDS} seconds'`) });
  const value = newWebhookSecret();
  await trx('webhook_secrets').insert({ client_id: clientId, secret: cipher.encrypt(value) });
  return { value, replaced: replaced > 0 };
}

export async function hasWebhookSecret(q: Db | Knex.Transaction, clientId: string): Promise<boolean> {
  return Boolean(await q('webhook_secrets').where('client_id', clientId).whereNull('expires_at').first('id'));
}

/** The secrets that sign the client's deliveries now: the current one first, then any still in their overlap. */
export async function signingSecretsOf(db: Db, clientId: string, cipher: DataCipher): Promise<string[]> {
  const rows: Array<{ secret: string }> = await db('webhook_secrets')
    .where('client_id', clientId)
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', db.fn.now()))
    .orderBy('id', 'desc')
    .select('secret');
  return rows.map((r) => cipher.decrypt(r.secret));
}

/** When the replaced secret stops signing, or undefined when there is none in its overlap. */
export async function overlapEndOf(db: Db, clientId: string): Promise<Date | undefined> {
  const row: { expires_at: Date } | undefined = await db('webhook_secrets').where('client_id', clientId).where('expires_at', '>', db.fn.now()).orderBy('expires_at', 'desc').first('expires_at');
  return row?.expires_at;
}

/** Re-encrypts every webhook secret under the first DATA_ENCRYPTION_KEYS key; returns how many changed. */
export async function reencryptWebhookSecrets(db: Db, cipher: DataCipher): Promise<number> {
  let changed = 0;
  await db.transaction(async (trx) => {
    const rows: Array<{ id: number; secret: string }> = await trx('webhook_secrets').forUpdate().select('id', 'secret');
    for (const row of rows) {
      if (cipher.isCurrent(row.secret)) continue;
      await trx('webhook_secrets').where('id', row.id).update({ secret: cipher.encrypt(cipher.decrypt(row.secret)) });
      changed++;
    }
  });
  return changed;
}
