// The keys a registry client authenticates with instead of a secret (private_key_jwt, RFC 7523;
// docs/private-key-jwt.md): a jwks_uri, fetched by the provider under the metadata documents'
// address rules (src/cimd/fetch.ts ruledFetch), or a key set registered inline. Judged here, once,
// for the scripts and the page: public keys of asymmetric algorithms only, a bounded set.
import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { InputError } from '../errors.ts';
import { allowsLoopback, LOOPBACK_ADDRESS_ONLY } from '../http/loopback.ts';
import { POLICY } from '../settings.ts';
import type { ClientKeys } from './model.ts';

/** The algorithms a client assertion may be signed with: asymmetric only (no HS*, no none), as DPoP proofs'. */
export const CLIENT_AUTH_ALGS = ['ES256', 'ES384', 'ES512', 'RS256', 'PS256', 'EdDSA', 'Ed25519'] as const;

export const MAX_CLIENT_KEYS = POLICY.MAX_CLIENT_KEYS.value;
export const MAX_JWKS_BYTES = POLICY.MAX_JWKS_BYTES.value;
const MAX_JWKS_URI_LENGTH = 2000;

// Members that carry private key material (RFC 7518 6.2.2, 6.3.2, 6.4; RFC 8037 2).
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const CURVES: Record<string, readonly string[]> = { EC: ['P-256', 'P-384', 'P-521'], OKP: ['Ed25519'] };
const MIN_RSA_BITS = 2048;

export interface KeysInput {
  jwksUri?: string | undefined;
  /** The key set as its JSON text (a file, stdin, a form field). */
  jwks?: string | undefined;
}

/**
 * The keys, judged: exactly one of a jwks_uri and a key set. `allowLoopback`: the metadata
 * documents' setting (CIMD_ALLOW_LOOPBACK, refused in production), which the provider's one fetch
 * of every jwks_uri follows: http on 127.0.0.1 is let in only then.
 */
export function validateClientKeys(input: KeysInput, { allowLoopback }: { allowLoopback: boolean }): ClientKeys {
  const uri = input.jwksUri?.trim();
  const set = input.jwks?.trim();
  if (uri && set) throw new InputError('give either a jwks_uri or a key set (JWKS), not both');
  if (uri) return { jwksUri: validateJwksUri(uri, allowLoopback) };
  if (set) return { jwks: validateJwks(set) };
  throw new InputError('give a jwks_uri (where your app publishes its public keys) or a key set (JWKS)');
}

function validateJwksUri(uri: string, allowLoopback: boolean): string {
  if (uri.length > MAX_JWKS_URI_LENGTH) throw new InputError(`the jwks_uri must be at most ${MAX_JWKS_URI_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new InputError(`the jwks_uri must be an absolute URL: "${uri}"`);
  }
  if (url.username || url.password) throw new InputError('the jwks_uri must not carry credentials');
  if (url.hash) throw new InputError('the jwks_uri must not have a fragment');
  if (url.protocol === 'https:' || allowsLoopback(url, allowLoopback, LOOPBACK_ADDRESS_ONLY)) return url.href;
  throw new InputError('the jwks_uri must use https');
}

/**
 * The key set published at a jwks_uri, as fetched now (src/cimd/fetch.ts checkPublishedKeys): it may
 * hold other keys too (encryption keys, more than MAX_CLIENT_KEYS), but none with private parts nor
 * a symmetric one (the provider then refuses the whole set), and at least one key an assertion may
 * be signed with.
 */
export function validatePublishedKeys(text: string): void {
  const keys = keyList(text);
  const refusedOutright = /private key material|shared secret/;
  let usable = 0;
  keys.forEach((key, i) => {
    try {
      validateKey(key, i + 1);
      usable++;
    } catch (err) {
      if (err instanceof InputError && refusedOutright.test(err.message)) throw err;
    }
  });
  if (!usable) throw new InputError(`none of its keys is a public signing key of ${CLIENT_AUTH_ALGS.join(', ')}`);
}

function keyList(text: string): unknown[] {
  if (Buffer.byteLength(text) > MAX_JWKS_BYTES) throw new InputError(`the key set must be at most ${MAX_JWKS_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InputError('the key set is not JSON: give a JWKS, {"keys": [...]}');
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed) || !Array.isArray(keys)) throw new InputError('the key set must be a JWKS: a JSON object with a "keys" list');
  if (keys.length === 0) throw new InputError('the key set holds no keys');
  return keys;
}

function validateJwks(text: string): { keys: Array<Record<string, unknown>> } {
  const keys = keyList(text);
  if (keys.length > MAX_CLIENT_KEYS) throw new InputError(`the key set may hold at most ${MAX_CLIENT_KEYS} keys`);
  const kids = new Set<string>();
  return {
    keys: keys.map((key, i) => {
      const checked = validateKey(key, i + 1);
      if (typeof checked.kid === 'string') {
        if (kids.has(checked.kid)) throw new InputError(`two keys have the kid "${checked.kid}": each key needs its own`);
        kids.add(checked.kid);
      }
      return checked;
    }),
  };
}

function validateKey(key: unknown, n: number): Record<string, unknown> {
  const which = `key ${n}`;
  if (!key || typeof key !== 'object' || Array.isArray(key)) throw new InputError(`${which} is not a JSON object`);
  const jwk = key as Record<string, unknown>;
  if (jwk.kty === 'oct') throw new InputError(`${which} is a shared secret (kty "oct"): register public keys (RSA, EC or OKP), never a symmetric key`);
  const held = PRIVATE_MEMBERS.filter((m) => m in jwk);
  if (held.length) throw new InputError(`${which} holds private key material (${held.join(', ')}): register only the public key; the private key stays with your app and is never sent to anyone`);
  if (jwk.kty !== 'RSA' && jwk.kty !== 'EC' && jwk.kty !== 'OKP') throw new InputError(`${which} must have kty "RSA", "EC" or "OKP"`);
  const curves = CURVES[jwk.kty];
  if (curves && !curves.includes(String(jwk.crv))) throw new InputError(`${which} must be on one of the curves ${curves.join(', ')}`);
  if (jwk.alg !== undefined && !(CLIENT_AUTH_ALGS as readonly unknown[]).includes(jwk.alg)) throw new InputError(`${which} names the algorithm ${JSON.stringify(jwk.alg)}; client assertions are signed with one of ${CLIENT_AUTH_ALGS.join(', ')}`);
  if (jwk.use !== undefined && jwk.use !== 'sig') throw new InputError(`${which} must be for signatures (use "sig") if it says what it is for`);
  for (const member of ['kid', 'alg', 'use'] as const) {
    if (jwk[member] !== undefined && (typeof jwk[member] !== 'string' || !jwk[member])) throw new InputError(`${which}: ${member} must be a non-empty string if given`);
  }
  let bits: number | undefined;
  try {
    bits = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' }).asymmetricKeyDetails?.modulusLength;
  } catch {
    throw new InputError(`${which} is not a valid public key`);
  }
  if (jwk.kty === 'RSA' && (bits ?? 0) < MIN_RSA_BITS) throw new InputError(`${which} is an RSA key of ${bits} bits: at least ${MIN_RSA_BITS}`);
  return jwk;
}
