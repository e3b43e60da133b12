// Introspection (RFC 7662) of a live access token by a client that authenticates with its secret:
// the question resource servers and gateways ask on every call they serve, answered on the hot
// path (src/api/listener.ts) without the Koa app and the provider's request pipeline, which cost
// more than the answer (docs/benchmark.md). The same models decide — the provider's Client,
// compareClientSecret, AccessToken.find (the token cache) and Grant.find — and the answer is the
// one the provider gives, byte for byte (test/introspection.test.ts compares them).
//
// Only that plain case is answered here. Anything else — another content type, a query string, a
// repeated or missing parameter, an unusual credential, a secret that does not match, a client
// over its budget, a token that is not a live access token of a live grant, one this client may
// not see, a store that fails — returns undefined, and the provider answers it, errors, counters
// and events included.
import type Provider from 'oidc-provider';
import type { IncomingHttpHeaders } from 'node:http';
import type { ClientWithBudget, TokenEndpointLimits } from './rate-limits.ts';
import { resourceServerMayIntrospect } from './provider.ts';
import { visibleScope } from '../scopes.ts';
import type { Answer } from '../api/responses.ts';

export interface IntrospectionRequest {
  headers: IncomingHttpHeaders;
  /** The form body as sent. */
  form: URLSearchParams;
  /** The client address, as the app computes it (the budget of a public client is per address). */
  ip: string;
}

/** The answer, or undefined when the provider must answer (see the header). */
export type AnswerIntrospection = (request: IntrospectionRequest) => Promise<Answer | undefined>;

// The parameters the provider reads at this endpoint (lib/actions/introspection.js, with our
// client authentication methods); it refuses any of them sent twice.
const PARAMS = ['token', 'token_type_hint', 'client_id', 'client_secret'] as const;
type Params = Partial<Record<(typeof PARAMS)[number], string>>;

// Headers that ask for another kind of client authentication, or for CORS.
const PROVIDERS_TO_JUDGE = ['oauth-client-attestation', 'oauth-client-attestation-pop', 'origin'];
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
// The provider's rule for the parts of HTTP Basic credentials (RFC 6749 2.3.1: VSCHAR).
const VSCHAR_ONLY = /^[\x20-\x7E]+$/;

// The provider's headers on this answer: no caching (RFC 7662 2.2), and its CORS for a request
// without an Origin (one with an Origin is the provider's to judge, per client).
const HEADERS = {
  'Cache-Control': 'no-store',
  Pragma: 'no-cache',
  Vary: 'Origin',
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': 'WWW-Authenticate',
};

/** Each parameter at most once, and a token; else undefined. */
function plainParams(form: URLSearchParams): Params | undefined {
  const params: Params = {};
  for (const name of PARAMS) {
    const values = form.getAll(name);
    if (values.length > 1) return undefined;
    if (values.length === 1) params[name] = values[0];
  }
  return params.token ? params : undefined;
}

/** A client id and secret, sent in exactly one of the two ways the provider takes; else undefined. */
function secretCredentials(headers: IncomingHttpHeaders, params: Params): { clientId: string; secret: string } | undefined {
  if (PROVIDERS_TO_JUDGE.some((name) => headers[name] !== undefined)) return undefined;
  const { authorization } = headers;
  if (authorization === undefined) {
    return params.client_id && params.client_secret ? { clientId: params.client_id, secret: params.client_secret } : undefined;
  }
  if (params.client_secret !== undefined) return undefined;
  const [scheme, encoded, ...rest] = authorization.split(' ');
  if (rest.length || scheme?.toLowerCase() !== 'basic' || !encoded || !BASE64.test(encoded) || encoded.length % 4 !== 0) return undefined;
  const basic = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = basic.indexOf(':');
  if (colon < 0) return undefined;
  try {
    const [clientId, secret] = [basic.slice(0, colon), basic.slice(colon + 1)].map((part) => decodeURIComponent(part.replace(/\+/g, '%20')));
    if (!clientId || !secret || !VSCHAR_ONLY.test(clientId) || !VSCHAR_ONLY.test(secret)) return undefined;
    if (params.client_id !== undefined && params.client_id !== clientId) return undefined;
    return { clientId, secret };
  } catch {
    return undefined; // not percent-encoded properly
  }
}

export function introspection(provider: Provider, limits: TokenEndpointLimits): AnswerIntrospection {
  /** The client, when it exists, authenticates with a secret, and this is one of its active secrets. */
  async function authenticated(clientId: string, secret: string) {
    const client = await provider.Client.find(clientId);
    if (client?.clientAuthMethod !== 'client_secret_basic' && client?.clientAuthMethod !== 'client_secret_post') return undefined;
    if ((client as unknown as { clientSecretExpiresAt?: number }).clientSecretExpiresAt) return undefined;
    return (await client.compareClientSecret(secret)) ? client : undefined;
  }

  /** A live access token of a live grant, which the provider would describe as we do here. */
  async function liveAccessToken(value: string) {
    const token = await provider.AccessToken.find(value);
    if (!token?.isValid || !token.clientId || !token.accountId || !token.grantId) return undefined;
    if (token.isSenderConstrained() || token.rar || (token.extra && Object.keys(token.extra).length)) return undefined;
    const grant = await provider.Grant.find(token.grantId, { ignoreExpiration: true });
    if (!grant || grant.isExpired || grant.clientId !== token.clientId || grant.accountId !== token.accountId) return undefined;
    return token;
  }

  return async function answerIntrospection({ headers, form, ip }) {
    const params = plainParams(form);
    const credentials = params && secretCredentials(headers, params);
    if (!params || !credentials || limits.heldBack(credentials.clientId, ip)) return undefined;
    const client = await authenticated(credentials.clientId, credentials.secret);
    if (!client) return undefined;
    const token = await liveAccessToken(params.token!);
    if (!token) return undefined;
    if (token.clientId !== client.clientId) {
      // The provider reads the token's client (for pairwise subjects, which we never configure).
      if (!resourceServerMayIntrospect(client, token) || (await provider.Client.find(token.clientId!))?.subjectType !== 'public') return undefined;
    }
    // As the provider counts it: after the answer is decided, before it is sent (rate-limits.ts).
    await limits.spend(client as unknown as ClientWithBudget, ip).catch(() => {});
    // The provider's fields in its order, as src/oauth/provider.ts reshapes them (ourResponseShapes).
    const scope = token.scope || undefined;
    const body = {
      active: true,
      sub: token.accountId,
      client_id: token.clientId,
      exp: token.exp,
      iat: token.iat,
      sid: token.sid,
      iss: provider.issuer,
      jti: token.jti !== params.token ? token.jti : undefined,
      aud: token.aud,
      scope: scope === undefined ? undefined : visibleScope(scope),
      token_type: token.tokenType === 'Bearer' ? 'bearer' : token.tokenType,
    };
    return { status: 200, headers: HEADERS, body };
  };
}
