// Secrets the server must read back (token-signing private keys, webhook signing secrets) are
// stored encrypted under DATA_ENCRYPTION_KEYS, which live in the environment, not the database:
// a dump of the database alone signs nothing. AES-256-GCM; each value names the key that
// encrypted it, so keys can be rotated: the first encrypts, the others still decrypt, and
// `admin keys reencrypt` moves every value to the first.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { ConfigError } from '../config.ts';

const PREFIX = 'enc1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface DataCipher {
  encrypt(plain: string): string;
  /** The plain text; throws when the value is not ours or its key is not configured any more. */
  decrypt(stored: string): string;
  /** Whether the value is encrypted under the first key (nothing to re-encrypt). */
  isCurrent(stored: string): boolean;
}

interface DataKey {
  id: string;
  key: Buffer;
}

// The key id is a hash of the key (safe to store), the AES key another derivation of it.
const keyOf = (secret: string): DataKey => ({
  id: createHash('sha256').update(`data-encryption-key-id:${secret}`).digest('hex').slice(0, 12),
  key: Buffer.from(hkdfSync('sha256', secret, '', 'data-encryption-aes-256-gcm', 32)),
});

export const isEncrypted = (value: string) => value.startsWith(`${PREFIX}:`);

export function createDataCipher(secrets: string[]): DataCipher {
  if (secrets.length === 0) throw new Error('data encryption needs at least one key');
  const keys = secrets.map(keyOf);
  const current = keys[0]!;
  const parse = (stored: string) => {
    const [prefix, id, payload, extra] = stored.split(':');
    if (prefix !== PREFIX || !id || !payload || extra !== undefined) throw new Error('not an encrypted value');
    return { id, bytes: Buffer.from(payload, 'base64url') };
  };
  return {
    encrypt(plain) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current.key, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return `${PREFIX}:${current.id}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
    },
    decrypt(stored) {
      const { id, bytes } = parse(stored);
      const key = keys.find((k) => k.id === id);
      if (!key) throw new ConfigError(`a stored secret is encrypted under key ${id}, which is not in DATA_ENCRYPTION_KEYS: put that key back in the list (after the current one) and run keys reencrypt before removing it`);
      const decipher = createDecipheriv('aes-256-gcm', key.key, bytes.subarray(0, IV_BYTES));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    },
    isCurrent: (stored) => isEncrypted(stored) && parse(stored).id === current.id,
  };
}
