// What the back channel's hot paths (introspection.ts, refresh.ts) share: the request as the
// listener hands it over, and the checks that must read exactly as the provider's do. Each hot
// path answers only the plain case; for anything else it returns undefined and the provider
// answers (src/fast/dispatch.ts passes the request on, body and all).
import type { IncomingHttpHeaders } from 'node:http';
import type Provider from 'oidc-provider';
import { NO_STORE, type Answer } from '../http/envelope.ts';
import type { ClientSecrets } from '../oauth/client-secrets.ts';
import { isWellFormedClientId } from '../clients/secrets.ts';

export interface BackChannelRequest {
  headers: IncomingHttpHeaders;
  /** The form body as sent. */
  form: URLSearchParams;
  /** The client address, as the app computes it (the budget of a public client is per address). */
  ip: string;
  /** The request itself (the IncomingMessage, as an identity): what was done for it here is known if the provider answers it after all. */
  message: object;
}

/** The answer, or undefined when the provider must answer. */
export type AnswerBackChannel = (request: BackChannelRequest) => Promise<Answer | undefined>;

/**
 * The provider's headers on its token and introspection answers: no caching (RFC 6749 5.1), and
 * its CORS for a request without an Origin (one with an Origin is the provider's to judge).
 */
export const PROVIDER_HEADERS: Readonly<Record<string, string>> = {
  ...NO_STORE,
  Vary: 'Origin',
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': 'WWW-Authenticate',
};

/**
 * The named parameters, each at most once, or undefined when one is repeated (the provider
 * refuses that) or, with `only`, when the form has any other.
 */
export function singleParams<N extends string>(form: URLSearchParams, names: readonly N[], only = false): Partial<Record<N, string>> | undefined {
  const params: Partial<Record<N, string>> = {};
  for (const name of names) {
    const values = form.getAll(name);
    if (values.length > 1) return undefined;
    if (values.length === 1) params[name] = values[0];
  }
  if (only) for (const key of form.keys()) if (!(names as readonly string[]).includes(key)) return undefined;
  return params;
}

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

/**
 * The client, when it exists and authenticates with a secret, and which of its secrets this one
 * is. Whether that secret is still active is the caller's to ask (ClientSecrets.isActive), along
 * with its own store read; then it records the use — as the provider's compareClientSecret does.
 */
export async function clientOfSecret(provider: Provider, secrets: ClientSecrets, clientId: string, secret: string) {
  const client = await provider.Client.find(clientId);
  if (client?.clientAuthMethod !== 'client_secret_basic' && client?.clientAuthMethod !== 'client_secret_post') return undefined;
  if ((client as unknown as { clientSecretExpiresAt?: number }).clientSecretExpiresAt) return undefined;
  const secretId = secrets.match(client, secret);
  return secretId === undefined ? undefined : { client, secretId };
}
