// What the back channel's hot paths (introspection.ts, refresh.ts) share: the request as the
// listener hands it over, and the checks that must read exactly as the provider's do. Each hot
// path answers only the plain case; for anything else it returns undefined and the provider
// answers (src/fast/dispatch.ts passes the request on, body and all).
import type { IncomingHttpHeaders } from 'node:http';
import type Provider from 'oidc-provider';
import { NO_STORE, type Answer } from '../http/envelope.ts';
import type { ClientSecrets } from '../oauth/client-secrets.ts';

export interface BackChannelRequest {
  headers: IncomingHttpHeaders;
  /** The form body as sent. */
  form: URLSearchParams;
  /** The client address, as the app computes it (the budget of a public client is per address). */
  ip: string;
  /** The request itself (the IncomingMessage, as an identity): what was done for it here is known if the provider answers it after all. */
  message: object;
}

/**
 * Why a request is left to the provider (a label of oauth_fast_path_requests_total): it is not the
 * plain case, or its client, secret or token is not one the fast path answers for.
 */
export type HandOverReason = 'not_plain' | 'held_back' | 'client' | 'secret' | 'token' | 'not_visible' | 'not_rotated';
export interface HandOver {
  readonly handOver: HandOverReason;
}
/** One object per reason, made once: handing over allocates nothing. */
export const HAND_OVER: Readonly<Record<HandOverReason, HandOver>> = Object.freeze(
  Object.fromEntries((['not_plain', 'held_back', 'client', 'secret', 'token', 'not_visible', 'not_rotated'] as const).map((r) => [r, Object.freeze({ handOver: r })])) as Record<HandOverReason, HandOver>,
);
export const isHandOver = (result: Answer | HandOver): result is HandOver => 'handOver' in result;

/** The answer, or why the provider must answer. */
export type AnswerBackChannel = (request: BackChannelRequest) => Promise<Answer | HandOver>;

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
 * The token endpoint's: its CORS also exposes DPoP-Nonce, while DPoP nonces are on
 * (lib/helpers/initialize_app.js; src/fast/assumptions.ts checks that they are).
 */
export const TOKEN_ENDPOINT_HEADERS: Readonly<Record<string, string>> = { ...PROVIDER_HEADERS, 'Access-Control-Expose-Headers': 'DPoP-Nonce,WWW-Authenticate' };

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

/**
 * The client, when it exists and authenticates with a secret, and which of its secrets this one
 * is. Whether that secret is still active is the caller's to ask (ClientSecrets.isActive), along
 * with its own store read; then it records the use — as the provider's compareClientSecret does.
 */
export async function clientOfSecret(provider: Provider, secrets: ClientSecrets, clientId: string, secret: string) {
  const client = await provider.Client.find(clientId);
  if (client?.clientAuthMethod !== 'client_secret_basic' && client?.clientAuthMethod !== 'client_secret_post') return undefined;
  if (client.clientSecretExpiresAt) return undefined;
  const secretId = secrets.match(client, secret);
  return secretId === undefined ? undefined : { client, secretId };
}
