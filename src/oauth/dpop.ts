// DPoP (RFC 9449; docs/dpop.md): the one module for proofs outside the provider. The provider
// binds tokens at the token endpoint (features.dPoP in provider.ts); here are the algorithms both
// accept, the single use of a proof's jti across every instance (both stores), the header's
// bounds, the resource side's verification (the gateway check and /v2/me, src/api/access.ts), and
// the key a token request's proof proves, for the refresh grace window (refresh-grace.ts).
import { createPublicKey, hash, verify, constants, type JsonWebKey } from 'node:crypto';
import { calculateJwkThumbprint, decodeProtectedHeader, EmbeddedJWK, jwtVerify, type JWK } from 'jose';
import type { IncomingHttpHeaders } from 'node:http';
import Provider, { errors } from 'oidc-provider';
import type { SingleFlights } from '../storage/artifacts.ts';
import { POLICY } from '../settings.ts';

/** The signature algorithms of proofs we read: digest and signature encoding as node:crypto names them. Asymmetric only (RFC 9449 4.2). */
const ALGORITHMS: Record<string, { digest: string | null; dsaEncoding?: 'ieee-p1363'; padding?: number }> = {
  ES256: { digest: 'sha256', dsaEncoding: 'ieee-p1363' },
  ES384: { digest: 'sha384', dsaEncoding: 'ieee-p1363' },
  ES512: { digest: 'sha512', dsaEncoding: 'ieee-p1363' },
  RS256: { digest: 'sha256' },
  PS256: { digest: 'sha256', padding: constants.RSA_PKCS1_PSS_PADDING },
  EdDSA: { digest: null },
  Ed25519: { digest: null },
};

/** What the metadata advertises (dpop_signing_alg_values_supported) and every path accepts. */
export const DPOP_ALGS: readonly string[] = Object.keys(ALGORITHMS);

// RFC 7638: the required members of each key type, in lexicographic order.
const THUMBPRINT_MEMBERS: Record<string, string[]> = { EC: ['crv', 'kty', 'x', 'y'], RSA: ['e', 'kty', 'n'], OKP: ['crv', 'kty', 'x'] };
// A jwk with any of these holds a private (or symmetric) key: refused (RFC 9449 4.3 check 7).
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/** How far a proof's iat may be from now (RFC 9449 11.1): a proof is for the request it came with. */
export const PROOF_MAX_AGE_SECONDS = POLICY.DPOP_PROOF_MAX_AGE_SECONDS.value;
const PROOF_MAX_LENGTH = POLICY.DPOP_PROOF_MAX_LENGTH.value;

const json = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
const hasPrivateParts = (jwk: unknown) => typeof jwk !== 'object' || jwk === null || PRIVATE_MEMBERS.some((m) => m in jwk);

/**
 * The JWK thumbprint (RFC 7638) of the key a token request's DPoP proof is signed with: '' when
 * the request has no proof, undefined when the proof cannot be read, is not signed by its own
 * key, is for another method or is not recent. (The provider verifies the proof in full first.)
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
    if (typ !== 'dpop+jwt' || !algorithm || !members || hasPrivateParts(jwk) || htm !== 'POST' || typeof iat !== 'number') return undefined;
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

/**
 * A proof's jti is used once across every instance (RFC 9449 11.1), for the provider's
 * ReplayDetection (token endpoint, client assertions) and the resource side alike: one atomic claim
 * in the store (Redis SET NX; SQL one conditional insert), where the library's model would find
 * and then save — two instances could both find nothing. Keyed as the library keys it (iss + jti).
 */
export function singleUse(flights: SingleFlights) {
  // The jti keys each request claimed (by its Koa context), so that its later check of the same passes.
  const claimedBy = new WeakMap<object, Set<string>>();
  return async function unique(iss: string, jti: string, exp: number): Promise<boolean> {
    const key = `jti:${hash('sha256', `${iss}${jti}`, 'base64url')}`;
    // Claimed already by this very request (spendProofBeforeCode): the library's own check then passes.
    const ctx = Provider.ctx;
    if (ctx && claimedBy.get(ctx)?.has(key)) return true;
    const claimed = await flights.claim(key, Math.max(1, Math.ceil(exp - Date.now() / 1000)));
    if (claimed && ctx) claimedBy.set(ctx, new Set([...(claimedBy.get(ctx) ?? []), key]));
    return claimed;
  };
}

/**
 * The code exchange judges its proof before the code is spent: the library spends the code first
 * and checks after (lib/actions/grants/authorization_code.js, grant_common.js) the proof's replay
 * and the key the authorization request named (`dpop_jkt`), so a replayed proof, a missing one or
 * one of another key would burn a good code. The library verified the proof before this point.
 */
export function spendProofBeforeCode(provider: Provider, unique: SingleUse): void {
  const proto = provider.AuthorizationCode.prototype;
  const consume = proto.consume;
  proto.consume = async function consumeAfterProofSpent(this: InstanceType<Provider['AuthorizationCode']>) {
    const ctx = Provider.ctx;
    if (ctx?.oidc?.route !== 'token' || !ctx.oidc.client) return consume.call(this);
    const proof = ctx.get('DPoP');
    const { dpopJkt } = this as { dpopJkt?: string };
    if (dpopJkt && !proof) throw new errors.InvalidGrant('missing DPoP proof JWT');
    if (dpopJkt && dpopKeyOf(proof) !== dpopJkt) throw new errors.InvalidGrant('DPoP proof key thumbprint does not match dpop_jkt');
    const jti = proofJti(proof);
    if (jti && !(await unique(ctx.oidc.client.clientId, jti, Date.now() / 1000 + PROOF_MAX_AGE_SECONDS))) throw new errors.InvalidGrant('DPoP proof JWT Replay detected');
    return consume.call(this);
  };
}

/** A proof's jti, read without verifying (the provider verified it). */
function proofJti(proof: string): string | undefined {
  try {
    const { jti } = json(proof.split('.')[1] ?? '');
    return typeof jti === 'string' && jti ? jti : undefined;
  } catch {
    return undefined;
  }
}

export type SingleUse = ReturnType<typeof singleUse>;

/** The request's DPoP header: undefined when none, its value, or why it is refused (repeated, oversized). */
export function dpopHeader(headers: IncomingHttpHeaders, rawHeaders: string[]): string | undefined | { refused: string } {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.toLowerCase() === 'dpop') count += 1;
  if (count > 1) return { refused: 'send one DPoP header' };
  const value = headers.dpop;
  if (value === undefined) return undefined;
  const proof = Array.isArray(value) ? value.join(', ') : value;
  if (proof.length > PROOF_MAX_LENGTH) return { refused: `the DPoP proof is longer than ${PROOF_MAX_LENGTH} characters` };
  return proof;
}

/** The library's server nonces (features.dPoP.nonceSecret), shared with the token endpoint. */
export interface DpopNonces {
  nextChallenge(): string;
  checkChallenge(nonce: string): boolean;
}

/** What a resource request proves: the method and public URL it was made to, with this token. */
export interface ProofRequest {
  proof: string;
  htm: string;
  htu: string;
  accessToken: string;
}

export type ProofOutcome =
  | { jkt: string; jti: string }
  | { error: 'invalid_dpop_proof'; message: string }
  | { error: 'use_dpop_nonce'; message: string; nonce: string };

/** A URL as a proof's htu is compared (RFC 9449 4.3 check 9): without query and fragment. */
export function htuOf(url: string): string | undefined {
  const parsed = URL.parse(url);
  if (!parsed) return undefined;
  parsed.search = '';
  parsed.hash = '';
  return parsed.href;
}

/**
 * The resource side's check of a proof (RFC 9449 4.3 and 7): signed by the key in its header with
 * an asymmetric algorithm we accept, that key public, typ dpop+jwt, a jti, htm and htu of this
 * request, ath of this token, iat within the window, and a nonce, if it has one, that we issued.
 * Spends nothing: the caller spends the jti (SingleUse) once the token's key matched.
 */
export function proofChecker(nonces: DpopNonces | undefined) {
  return async function checkProof({ proof, htm, htu, accessToken }: ProofRequest): Promise<ProofOutcome> {
    const invalid = (message: string) => ({ error: 'invalid_dpop_proof', message }) as const;
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      header = decodeProtectedHeader(proof);
    } catch {
      return invalid('the DPoP proof is not a JWT');
    }
    if (typeof header.alg !== 'string' || !DPOP_ALGS.includes(header.alg)) return invalid(`the DPoP proof must be signed with one of ${DPOP_ALGS.join(', ')}`);
    if (hasPrivateParts(header.jwk)) return invalid('the DPoP proof must carry a public key');
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(proof, EmbeddedJWK, { algorithms: [...DPOP_ALGS], typ: 'dpop+jwt' }));
    } catch {
      return invalid('the DPoP proof is not signed by its key, or is not a dpop+jwt');
    }
    const { jti, iat, nonce } = payload;
    if (typeof jti !== 'string' || !jti || jti.length > 512) return invalid('the DPoP proof must have a jti');
    if (typeof iat !== 'number') return invalid('the DPoP proof must have an iat');
    if (payload.htm !== htm) return invalid('the DPoP proof is for another method (htm)');
    if (typeof payload.htu !== 'string' || htuOf(payload.htu) !== htuOf(htu)) return invalid('the DPoP proof is for another URL (htu)');
    if (payload.ath !== hash('sha256', accessToken, 'base64url')) return invalid('the DPoP proof is for another access token (ath)');
    if (Math.abs(Date.now() / 1000 - iat) > PROOF_MAX_AGE_SECONDS) return invalid('the DPoP proof is not recent (iat)');
    if (nonce !== undefined) {
      if (!nonces) return invalid('DPoP nonces are not supported');
      if (typeof nonce !== 'string' || !nonces.checkChallenge(nonce)) return { error: 'use_dpop_nonce', message: 'the DPoP nonce is not one of ours, or has expired', nonce: nonces.nextChallenge() };
    }
    return { jkt: await calculateJwkThumbprint(header.jwk as JWK), jti };
  };
}

export type CheckProof = ReturnType<typeof proofChecker>;
