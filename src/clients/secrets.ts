// Client secrets: 256-bit random values in the credential format (`spcs_…`, docs/credentials.md),
// shown once, stored as SHA-256 hashes. Secrets issued before the format (43 base64url
// characters) keep matching by their hash.
// An unsalted fast hash is enough because the secrets are long server-generated random
// values (no dictionary to try); it keeps client authentication cheap on the hot path.
import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { generateCredential } from '../credentials/format.ts';
import type { StoredSecret } from '../directory/facts.ts';

export function generateClientSecret(): string {
  return generateCredential('client_secret');
}

export function generateClientId(): string {
  return randomBytes(16).toString('hex');
}

/** The form of every client id generateClientId makes: 32 lowercase hex digits. */
const CLIENT_ID_FORMAT = /^[0-9a-f]{32}$/;

/**
 * Whether a claimed client id could name a client. Anything else names none, so it need not be
 * looked up, cached or counted: what a request claims sizes no state of ours.
 */
export const isWellFormedClientId = (id: string): boolean => CLIENT_ID_FORMAT.test(id);

export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * The id of the stored secret that matches, comparing every one in constant time; an expired one
 * matches nothing. Its expiry is read from the record (cached), so refusing it costs no store read.
 */
export function matchClientSecret(presented: string, secrets: readonly StoredSecret[], now = Date.now()): number | undefined {
  const digest = hash('sha256', presented, 'buffer');
  let match: StoredSecret | undefined;
  for (const secret of secrets) {
    const stored = hashBytes(secret);
    // No early exit: the time taken does not depend on which secret matched.
    if (stored.length === digest.length && timingSafeEqual(stored, digest)) match = secret;
  }
  return match && !isExpired(match.expires, now) ? match.id : undefined;
}

// A stored hash's bytes, decoded once per record read (records are cached: src/storage/record-cache.ts).
const decoded = new WeakMap<StoredSecret, Buffer>();
function hashBytes(secret: StoredSecret): Buffer {
  let bytes = decoded.get(secret);
  if (bytes === undefined) decoded.set(secret, (bytes = Buffer.from(secret.hash, 'hex')));
  return bytes;
}

export const isExpired = (expires: number | null | undefined, now = Date.now()): boolean => typeof expires === 'number' && expires <= now;
