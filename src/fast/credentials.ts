// The client credentials a token or introspection request presents, read strictly for the fast
// path (refresh.ts, introspection.ts): only what the provider itself would accept as a client
// secret, and nothing it would judge otherwise. (What the limits count by, the id a request names
// in any form, is src/oauth/named-client.ts.)
import type { IncomingHttpHeaders } from 'node:http';
import { isWellFormedClientId } from '../clients/secrets.ts';

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
