// Token-signing keys live in the database so that every instance and every restart uses the
// same ones. Created on first use. (Access tokens are opaque; the keys sign provider JWTs.)
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { JWK } from 'oidc-provider';
import type { Db } from '../storage/db.ts';

function newSigningKey(): JWK {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...(privateKey.export({ format: 'jwk' }) as JWK), kid: randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' };
}

export async function loadSigningKeys(db: Db): Promise<{ keys: JWK[] }> {
  let rows: Array<{ jwk: JWK }> = await db('signing_keys').orderBy('created_at', 'desc').select('jwk');
  if (rows.length === 0) {
    const jwk = newSigningKey();
    await db('signing_keys').insert({ kid: jwk.kid, jwk: JSON.stringify(jwk) }).onConflict('kid').ignore();
    // Two instances starting at once may both insert; both keys are then published.
    rows = await db('signing_keys').orderBy('created_at', 'desc').select('jwk');
  }
  return { keys: rows.map((r) => r.jwk) };
}
