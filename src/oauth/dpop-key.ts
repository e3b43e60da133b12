// Which key a DPoP proof (RFC 9449) proves, for the refresh grace window's rule that a retry must
// prove the key of the first presentation. DPoP is off in the provider (provider.ts), so no token
// is ever bound to a key and the provider ignores the header; the rule holds anyway, so that a
// retry is never answered to a holder of another key — or of none, when the first had one.
import { createPublicKey, hash, verify, constants, type JsonWebKey } from 'node:crypto';
import { POLICY } from '../settings.ts';

/** The signature algorithms of proofs we read: digest and signature encoding as node:crypto names them. */
const ALGORITHMS: Record<string, { digest: string | null; dsaEncoding?: 'ieee-p1363'; padding?: number }> = {
  ES256: { digest: 'sha256', dsaEncoding: 'ieee-p1363' },
  ES384: { digest: 'sha384', dsaEncoding: 'ieee-p1363' },
  ES512: { digest: 'sha512', dsaEncoding: 'ieee-p1363' },
  RS256: { digest: 'sha256' },
  PS256: { digest: 'sha256', padding: constants.RSA_PKCS1_PSS_PADDING },
  EdDSA: { digest: null },
  Ed25519: { digest: null },
};

// RFC 7638: the required members of each key type, in lexicographic order.
const THUMBPRINT_MEMBERS: Record<string, string[]> = { EC: ['crv', 'kty', 'x', 'y'], RSA: ['e', 'kty', 'n'], OKP: ['crv', 'kty', 'x'] };

/** How far a proof's iat may be from now (RFC 9449 11.1): a proof is for the request it came with. */
const PROOF_MAX_AGE_SECONDS = POLICY.DPOP_PROOF_MAX_AGE_SECONDS.value;

const json = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;

/**
 * The JWK thumbprint (RFC 7638) of the key a token request's DPoP proof is signed with: '' when
 * the request has no proof, undefined when the proof cannot be read, is not signed by its own
 * key, is for another method or is not recent.
 */
export function dpopKeyOf(proof: string): string | undefined {
  if (proof === '') return '';
  try {
    const [header, payload, signature, extra] = proof.split('.');
    if (!header || !payload || !signature || extra !== undefined) return undefined;
    const { typ, alg, jwk } = json(header);
    const { htm, iat } = json(payload);
    const algorithm = typeof alg === 'string' ? ALGORITHMS[alg] : undefined;
    const members = jwk && typeof jwk === 'object' ? THUMBPRINT_MEMBERS[String((jwk as JsonWebKey).kty)] : undefined;
    if (typ !== 'dpop+jwt' || !algorithm || !members || htm !== 'POST' || typeof iat !== 'number') return undefined;
    if (Math.abs(Date.now() / 1000 - iat) > PROOF_MAX_AGE_SECONDS) return undefined;
    const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    const signed = verify(algorithm.digest, Buffer.from(`${header}.${payload}`), { key, ...(algorithm.dsaEncoding ? { dsaEncoding: algorithm.dsaEncoding } : {}), ...(algorithm.padding ? { padding: algorithm.padding } : {}) }, Buffer.from(signature, 'base64url'));
    if (!signed) return undefined;
    const required = Object.fromEntries(members.map((m) => [m, (jwk as Record<string, unknown>)[m]]));
    return hash('sha256', JSON.stringify(required), 'base64url');
  } catch {
    return undefined;
  }
}
