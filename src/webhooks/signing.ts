// The Standard Webhooks signature, asymmetric scheme (v1a, Ed25519): the server signs with its
// private key, apps verify with the published public key (whpk_…), so no shared secret is handed
// out. One key pair, generated once and kept in the database; the private key never leaves it
// except to sign.
import { createHash, createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type { Db } from '../storage/db.ts';

export interface WebhookSigningKey {
  id: string;
  /** The raw 32-byte Ed25519 public key, base64 (published as whpk_<this>). */
  publicKey: string;
  privateKey: KeyObject;
}

interface KeyRow {
  id: string;
  public_key: string;
  private_key: string;
}

const toKey = (row: KeyRow): WebhookSigningKey => ({
  id: row.id,
  publicKey: row.public_key,
  privateKey: createPrivateKey({ key: Buffer.from(row.private_key, 'base64'), format: 'der', type: 'pkcs8' }),
});

/** The signing key, made on first use; the table lock makes instances starting at once agree on one. */
export async function loadWebhookSigningKey(db: Db): Promise<WebhookSigningKey> {
  const existing: KeyRow | undefined = await db('webhook_signing_keys').orderBy('created_at').first();
  if (existing) return toKey(existing);
  return db.transaction(async (trx) => {
    await trx.raw('lock table webhook_signing_keys in exclusive mode');
    const raced: KeyRow | undefined = await trx('webhook_signing_keys').orderBy('created_at').first();
    if (raced) return toKey(raced);
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
    const row: KeyRow = {
      id: `whk_${createHash('sha256').update(raw).digest('base64url').slice(0, 16)}`,
      public_key: raw.toString('base64'),
      private_key: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
    };
    await trx('webhook_signing_keys').insert(row);
    return toKey(row);
  });
}

/** The published form of the public key, as the Standard Webhooks libraries read it. */
export const publishedPublicKey = (key: WebhookSigningKey) => `whpk_${key.publicKey}`;

/** The three headers of one attempt: signed content `${id}.${timestamp}.${body}`. */
export function signatureHeaders(key: WebhookSigningKey, messageId: string, body: string, now = new Date()): Record<string, string> {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const signature = sign(null, Buffer.from(`${messageId}.${timestamp}.${body}`), key.privateKey).toString('base64');
  return { 'webhook-id': messageId, 'webhook-timestamp': timestamp, 'webhook-signature': `v1a,${signature}` };
}
