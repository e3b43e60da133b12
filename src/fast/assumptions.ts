// What the fast path (src/fast/) takes for granted about the provider, checked once at start. The
// fast refresh skips the library's session binding and always rotates, and it computes lifetimes
// outside any request; the fast introspection answers in plain JSON. That is the provider's own
// answer only while the resolved configuration (src/oauth/provider.ts over the library's defaults)
// says so, and while the library is the version whose code the fast path mirrors. On any
// mismatch the fast path switches itself off, with one log line: every request then goes through
// the Koa app and the provider, slower but right. FAST_PATHS=off does the same on purpose.
import type Provider from 'oidc-provider';
import type { Logger } from '../log.ts';
import { installedLibraryVersion, LIBRARY_VERSION, resolvedConfiguration } from '../seams/oidc-provider.ts';
import { BINDING_CLAIM_NAMES } from '../orgs/bindings.ts';

type Configuration = Record<string, unknown>;

// Features whose requests the fast path does not read (certificate-bound tokens, authorization
// details, attestation, JWT introspection answers): they must be off. DPoP (RFC 9449) may be on:
// the fast path reads no proof and hands over every request that carries one (a `DPoP` header:
// credentials.ts), every token bound to a key (isSenderConstrained: refresh.ts, introspection.ts)
// and every client that requires it (dpopBoundAccessTokens: refresh.ts), before anything is
// written; for the rest the library answers as with the feature off. Resource indicators (RFC
// 8707) may be on: the fast refresh takes only a request without `resource` for a token stored
// without one, which the library then treats exactly as with the feature off
// (lib/helpers/resolve_resource.js: no resource, whatever the configured functions say), and
// hands over every other; the fast introspection answers a stored audience as the provider does.
const FEATURES_OFF = ['mTLS', 'richAuthorizationRequests', 'attestClientAuth', 'jwtIntrospection'] as const;

/**
 * The only claims an access token's `extra` may hold for the fast path to answer as the provider
 * does: a grant's binding to an organization and teams (src/orgs/bindings.ts). The fast refresh
 * makes them with the provider's own extraTokenClaims, outside any request; the fast
 * introspection spreads them first, as the provider does (lib/actions/introspection.js), and
 * hands over a token with any other.
 */
export const KNOWN_EXTRA_CLAIMS: ReadonlySet<string> = new Set(BINDING_CLAIM_NAMES);

/** Whether a token's extra holds only the claims the fast path knows (or none). */
export const hasOnlyKnownExtra = (extra: object | undefined): boolean => {
  if (!extra) return true;
  for (const key in extra) if (!KNOWN_EXTRA_CLAIMS.has(key)) return false;
  return true;
};

// A bound grant's id (src/orgs/bindings.ts marks them); none has it, so its binding is not found.
const SAMPLE_BOUND_GRANT = 'bound.fast-path-assumption-check';

/** Why extraTokenClaims' answer is not what the fast path knows, or undefined. */
function unknownClaims(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) return 'extraTokenClaims answers something other than an object';
  const claims = value as Record<string, unknown>;
  const other = Object.keys(claims).filter((key) => !KNOWN_EXTRA_CLAIMS.has(key));
  if (other.length) return `extraTokenClaims adds claims the fast path does not know (${other.join(', ')}; it knows ${[...KNOWN_EXTRA_CLAIMS].join(', ')})`;
  if (claims.org_id !== undefined && typeof claims.org_id !== 'string') return 'extraTokenClaims gives an org_id that is not a string';
  if (!Array.isArray(claims.team_ids) || !claims.team_ids.every((id) => typeof id === 'string')) return 'extraTokenClaims gives team_ids that are not an array of strings';
  return undefined;
}

/** A context that throws when read: the fast path has none to give. */
const NO_CONTEXT: object = new Proxy(
  {},
  {
    get(_target, prop) {
      throw new Error(`reads the request context (ctx.${String(prop)}), which the fast path does not have`);
    },
  },
);

async function outsideContext(name: string, call: () => unknown): Promise<{ value?: unknown; problem?: string }> {
  try {
    return { value: await call() };
  } catch (err) {
    return { problem: `${name} ${(err as Error).message}` };
  }
}

/** Why the fast path cannot answer as this provider would, or undefined when it can. */
export async function fastPathMismatch(configuration: Configuration | undefined, version: string): Promise<string | undefined> {
  if (version !== LIBRARY_VERSION) return `oidc-provider is ${version}, the fast path mirrors ${LIBRARY_VERSION}`;
  if (!configuration) return "the provider's configuration could not be read";
  if (configuration.rotateRefreshToken !== true) return 'rotateRefreshToken is not true (the fast refresh always rotates)';
  const features = (configuration.features ?? {}) as Record<string, { enabled?: boolean } | undefined>;
  for (const name of FEATURES_OFF) if (features[name]?.enabled !== false) return `features.${name} is not off`;
  // The fast refresh's CORS headers name DPoP-Nonce, as the provider's do with nonces on (back-channel.ts).
  const dPoP = features.dPoP as { enabled?: boolean; nonceSecret?: unknown } | undefined;
  if (dPoP?.enabled !== true || dPoP.nonceSecret === undefined) return 'features.dPoP is not on with a nonceSecret (the fast refresh answers with the headers of DPoP nonces on)';

  const now = Math.floor(Date.now() / 1000);
  // A refresh token as the fast path holds one; reading anything of it is reading the request's grant.
  const sample = { kind: 'RefreshToken', iat: now, iiat: now, scopes: new Set<string>(), clientId: 'sample' };
  const expiresWithSession = configuration.expiresWithSession as ((ctx: object, token: object) => unknown) | undefined;
  if (typeof expiresWithSession !== 'function') return 'expiresWithSession is not a function';
  const session = await outsideContext('expiresWithSession', () => expiresWithSession(NO_CONTEXT, NO_CONTEXT));
  if (session.problem) return session.problem;
  if (session.value !== false) return 'expiresWithSession does not always answer false (the fast refresh skips session binding)';

  const ttl = (configuration.ttl ?? {}) as Record<string, unknown>;
  for (const model of ['AccessToken', 'RefreshToken']) {
    const rule = ttl[model];
    const lifetime = typeof rule === 'function' ? await outsideContext(`ttl.${model}`, () => (rule as (ctx: object, token: object) => unknown)(NO_CONTEXT, { ...sample, kind: model })) : { value: rule };
    if (lifetime.problem) return lifetime.problem;
    if (typeof lifetime.value !== 'number' || !(lifetime.value > 0)) return `ttl.${model} is not a positive number of seconds`;
  }
  // The fast refresh calls it through the token's model with no context: for an unbound grant it
  // must add nothing, for a bound one only the binding's claims.
  const extraTokenClaims = configuration.extraTokenClaims as ((ctx: object, token: object) => unknown) | undefined;
  if (typeof extraTokenClaims === 'function') {
    const access = { ...sample, kind: 'AccessToken', accountId: 'sample' };
    const unbound = await outsideContext('extraTokenClaims', () => extraTokenClaims(NO_CONTEXT, { ...access, grantId: 'sample' }));
    if (unbound.problem) return unbound.problem;
    if (unbound.value !== undefined) return 'extraTokenClaims adds claims to an unbound grant’s tokens (the fast path knows only a binding’s)';
    const bound = await outsideContext('extraTokenClaims', () => extraTokenClaims(NO_CONTEXT, { ...access, grantId: SAMPLE_BOUND_GRANT }));
    if (bound.problem) return bound.problem;
    const problem = unknownClaims(bound.value);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Whether the fast path answers: wanted (FAST_PATHS) and its assumptions hold for this provider.
 * When it does not, one warning says why.
 */
export async function fastPathOn(provider: Provider, wanted: boolean, log: Pick<Logger, 'warn'>): Promise<boolean> {
  const reason = wanted ? await fastPathMismatch(resolvedConfiguration(provider), installedLibraryVersion()) : 'FAST_PATHS=off';
  if (reason === undefined) return true;
  log.warn({ reason }, 'fast path off: every request goes through the app and the provider');
  return false;
}
