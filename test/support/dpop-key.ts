// A DPoP key as a client holds one (RFC 9449): ES256 from node:crypto, its public JWK and its
// thumbprint as RFC 7638 computes it. No other imports: the benchmark's feeds use it too (bench/lib/dpop.ts).
import { createHash, generateKeyPairSync, type KeyObject } from 'node:crypto';

export interface DpopKey {
  privateKey: KeyObject;
  jwk: { kty: string; crv: string; x: string; y: string };
  /** Its JWK thumbprint (RFC 7638): what a bound token's cnf.jkt says. */
  jkt: string;
}

export function dpopKey(): DpopKey {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { kty, crv, x, y } = publicKey.export({ format: 'jwk' }) as DpopKey['jwk'];
  const jwk = { kty, crv, x, y };
  return { privateKey, jwk, jkt: createHash('sha256').update(JSON.stringify({ crv, kty, x, y })).digest('base64url') };
}
