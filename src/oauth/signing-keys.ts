// Token-signing keys live in the database so that every instance and every restart uses the
// same ones. Created on first use. (Access tokens are opaque; the keys sign provider JWTs.)
// The row holds the JWK encrypted under DATA_ENCRYPTION_KEYS (`{kid, encrypted}`): a dump of the
// database holds no private key. Rows written before that (the plain JWK) are encrypted on start.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { JWK } from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import type { DataCipher } from '../storage/data-encryption.ts';

interface StoredKey {
  kid: string;
  encrypted?: string;
}

function newSigningKey(): JWK {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...(privateKey.export({ format: 'jwk' }) as JWK), kid: randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' };
}

const sealed = (jwk: JWK, cipher: DataCipher): StoredKey => ({ kid: jwk.kid!, encrypted: cipher.encrypt(JSON.stringify(jwk)) });
const opened = (stored: StoredKey | JWK, cipher: DataCipher): JWK => ('encrypted' in stored && typeof stored.encrypted === 'string' ? JSON.parse(cipher.decrypt(stored.encrypted)) : stored);

export async function loadSigningKeys(db: Db, cipher: DataCipher): Promise<{ keys: JWK[] }> {
  let rows: Array<{ kid: string; jwk: StoredKey | JWK }> = await db('signing_keys').orderBy('created_at', 'desc').select('kid', 'jwk');
  if (rows.length === 0) {
    const jwk = newSigningKey();
    await db('signing_keys').insert({ kid: jwk.kid, jwk: JSON.stringify(sealed(jwk, cipher)) }).onConflict('kid').ignore();
    // Two instances starting at once may both insert; both keys are then published.
    rows = await db('signing_keys').orderBy('created_at', 'desc').select('kid', 'jwk');
  }
  const keys = rows.map((r) => opened(r.jwk, cipher));
  // Keys stored in plain text by an earlier version: encrypted now (only if still plain, so two
  // instances starting at once write the same thing at most twice).
  for (const [i, row] of rows.entries()) {
    if (!('encrypted' in row.jwk)) await db('signing_keys').where('kid', row.kid).whereRaw("jwk->>'encrypted' is null").update({ jwk: JSON.stringify(sealed(keys[i]!, cipher)) });
  }
  return { keys };
}

/** Re-encrypts every token-signing key under the first DATA_ENCRYPTION_KEYS key; returns how many changed. */
export async function reencryptSigningKeys(db: Db, cipher: DataCipher): Promise<number> {
  let changed = 0;
  await db.transaction(async (trx) => {
    const rows: Array<{ kid: string; jwk: StoredKey | JWK }> = await trx('signing_keys').forUpdate().select('kid', 'jwk');
    for (const row of rows) {
      if ('encrypted' in row.jwk && typeof row.jwk.encrypted === 'string' && cipher.isCurrent(row.jwk.encrypted)) continue;
      await trx('signing_keys').where('kid', row.kid).update({ jwk: JSON.stringify(sealed(opened(row.jwk, cipher), cipher)) });
      changed++;
    }
  });
  return changed;
}
