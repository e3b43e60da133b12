// The two readings of the client credentials a token, revocation or introspection request
// presents, in one place: the claim (below; for budgets and the grace window, which only need the
// id a request names) and the strict reading of the fast path (secretCredentials, at the end).
// The client credentials a token endpoint request presents (RFC 6749 2.3.1): HTTP Basic, whose
// user and password are each form-urlencoded, or else client_id / client_secret in the body.
// Read before (limits) and beside (refresh grace) the provider, which reads them again itself.
// Only a client id of the registry's own form is claimed (isWellFormedClientId): anything else
// names no client, and must not become a key of ours (limiter counters, lookups) of its size.
import type { IncomingHttpHeaders } from 'node:http';
import { isWellFormedClientId } from '../clients/secrets.ts';

export interface PresentedCredentials {
  clientId?: string;
  secret?: string;
}

const formDecode = (value: string) => decodeURIComponent(value.replace(/\+/g, ' '));

export function presentedCredentials(authorization: string, params: Record<string, unknown> | undefined): PresentedCredentials {
  const basic = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(authorization);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    try {
      const clientId = formDecode(colon < 0 ? decoded : decoded.slice(0, colon));
      return { ...(isWellFormedClientId(clientId) ? { clientId } : {}), ...(colon < 0 ? {} : { secret: formDecode(decoded.slice(colon + 1)) }) };
    } catch {
      return {};
    }
  }
  const { client_id: id, client_secret: secret } = params ?? {};
  return {
    ...(typeof id === 'string' && isWellFormedClientId(id) ? { clientId: id } : {}),
    ...(typeof secret === 'string' ? { secret } : {}),
  };
}

/** The client id a token endpoint request claims. */
export const claimedClientId = (authorization: string, params: Record<string, unknown> | undefined): string | undefined =>
  presentedCredentials(authorization, params).clientId;

/**
 * The client id a request names in any form, unverified: HTTP Basic's user, `client_id`, or else a
 * client assertion's subject (RFC 7523 3: a request may name its client only there). Unlike the
 * claim above, ids outside the registry's form count too (metadata-document URLs, registered
 * clients' ids): the limits key counters by them, digested to a fixed size (rate-limits.ts).
 */
export function namedClientId(authorization: string, params: Record<string, unknown> | undefined): string | undefined {
  const basic = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(authorization);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    try {
      return formDecode(colon < 0 ? decoded : decoded.slice(0, colon)) || undefined;
    } catch {
      return undefined;
    }
  }
  const { client_id: id, client_assertion: assertion } = params ?? {};
  if (typeof id === 'string' && id) return id;
  return typeof assertion === 'string' ? assertionSubject(assertion) : undefined;
}

/** A JWT's `sub`, read without verifying anything (the provider verifies the assertion). */
function assertionSubject(jwt: string): string | undefined {
  try {
    const { sub } = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof sub === 'string' && sub ? sub : undefined;
  } catch {
    return undefined;
  }
}

// The strict reading, for the fast path (refresh.ts, introspection.ts): only what the provider
// itself would accept as a client secret, and nothing it would judge otherwise.
// Headers the provider reads for other kinds of client authentication, or for CORS.
const PROVIDERS_TO_JUDGE = ['oauth-client-attestation', 'oauth-client-attestation-pop', 'origin', 'dpop'];
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
// The provider's rule for the parts of HTTP Basic credentials (RFC 6749 2.3.1: VSCHAR).
const VSCHAR_ONLY = /^[\x20-\x7E]+$/;

/**
 * A client id and secret sent in exactly one of the two ways the provider takes — HTTP Basic
 * (each part form-encoded) or client_id and client_secret in the form — read as it reads them;
 * undefined for anything else, an id not of the registry's form included (it names no client).
 */
export function secretCredentials(headers: IncomingHttpHeaders, params: { client_id?: string; client_secret?: string }): { clientId: string; secret: string } | undefined {
  if (PROVIDERS_TO_JUDGE.some((name) => headers[name] !== undefined)) return undefined;
  const { authorization } = headers;
  if (authorization === undefined) {
    return params.client_id && isWellFormedClientId(params.client_id) && params.client_secret ? { clientId: params.client_id, secret: params.client_secret } : undefined;
  }
  if (params.client_secret !== undefined) return undefined;
  const [scheme, encoded, ...rest] = authorization.split(' ');
  if (rest.length || scheme?.toLowerCase() !== 'basic' || !encoded || !BASE64.test(encoded) || encoded.length % 4 !== 0) return undefined;
  const basic = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = basic.indexOf(':');
  if (colon < 0) return undefined;
  try {
    const [clientId, secret] = [basic.slice(0, colon), basic.slice(colon + 1)].map((part) => decodeURIComponent(part.replace(/\+/g, '%20')));
    if (!clientId || !secret || !isWellFormedClientId(clientId) || !VSCHAR_ONLY.test(secret)) return undefined;
    if (params.client_id !== undefined && params.client_id !== clientId) return undefined;
    return { clientId, secret };
  } catch {
    return undefined; // not percent-encoded properly
  }
}
