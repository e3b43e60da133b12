// Resources (RFC 8707) and their audiences (docs/resources.md). Two kinds of resource exist: the
// platform API, `$BASE_URL/v2`, and each resource server registered with a resource URI
// (`clients create --resource-server --resource-uri …`). A token requested without `resource` is
// for the platform API exactly as before resources existed: it stores no audience, and every path
// reads "no audience" as the platform API. A token requested with one carries it as `aud`.
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { ALL_SCOPES, LEGACY_FULL_ACCESS } from '../scopes.ts';
import { findUsableClient } from '../clients/service.ts';
import { resourceServerIdFor } from '../clients/repository.ts';
import type { CachedDb } from '../storage/record-cache.ts';
import { PROTECTED_RESOURCE_PATH } from '../http/paths.ts';

/** The platform API's resource identifier for a BASE_URL. */
export const platformResource = (baseUrl: string): string => `${baseUrl}/v2`;

/** Its protected-resource metadata (RFC 9728 3.1: the well-known path inserted before the resource's path). */
export const protectedResourceMetadataUrl = (baseUrl: string): string => `${baseUrl}${PROTECTED_RESOURCE_PATH}`;

/** Every scope the platform API knows, the legacy marker included (a legacy client may name it). */
const PLATFORM_SCOPES = [...ALL_SCOPES, LEGACY_FULL_ACCESS].join(' ');

/** A token as the audience rule reads it: its stored `aud`, if any. */
export interface WithAudience {
  aud?: string | string[] | undefined;
}

/** The resources a token is for: its audience, or the platform API when it has none (every token before resources). */
export function audienceOf(token: WithAudience, platform: string): string[] {
  const { aud } = token;
  if (aud === undefined) return [platform];
  return Array.isArray(aud) ? aud : [aud];
}

/** Whether a token may be used at a resource. */
export const isFor = (token: WithAudience, resource: string, platform: string): boolean => audienceOf(token, platform).includes(resource);

/** The `resource` values of a request, as the provider parsed them (one or repeated). */
function requested(ctx: KoaContextWithOIDC): string[] {
  const value = ctx.oidc.params?.resource;
  if (value === undefined) return [];
  return Array.isArray(value) ? value.map(String) : [String(value)];
}

type ResourceIndicators = NonNullable<NonNullable<Configuration['features']>['resourceIndicators']>;

/** An authorization code or refresh token as the resource check reads it: the resources granted at authorization. */
interface GrantedResources {
  resource?: string | string[] | undefined;
}

const SINGLE_RESOURCE = 'only a single resource indicator value must be requested/resolved during Access Token Request';

/**
 * The `resource` of a code exchange or a refresh, checked before the code or the refresh token is
 * spent. The library settles the resource only after it consumed the code
 * (lib/actions/grants/authorization_code.js, issueTokens) or rotated the refresh token
 * (lib/actions/grants/refresh_token.js): an invalid_target there would leave the client with a
 * spent code or token, and its corrected retry would be a replay that revokes the grant. So the
 * same rules run first (lib/helpers/resolve_resource.js): one value at most, among those granted
 * (narrowing, never widening; a code or token granted none keeps none); without one asked, the
 * one granted (several: the client must choose); and that resource still registered. Runs before
 * anything is spent: for a refresh from findAccount, for a code from its consume (checkCodeResourceFirst).
 */
export async function checkGrantedResource(ctx: KoaContextWithOIDC, source: GrantedResources, label: 'authorization code' | 'refresh token', indicators: ResourceIndicators): Promise<void> {
  const asked = requested(ctx);
  const granted = source.resource === undefined ? [] : Array.isArray(source.resource) ? source.resource : [source.resource];
  if (asked.length > 1 || (asked.length === 0 && granted.length > 1)) throw new errors.InvalidTarget(SINGLE_RESOURCE);
  if (asked.length === 1 && !granted.includes(asked[0]!)) throw new errors.InvalidTarget(`the resource was not granted to this ${label}`);
  const resource = asked[0] ?? granted[0];
  if (resource !== undefined) await indicators.getResourceServerInfo!(ctx, resource, ctx.oidc.client!);
}

/**
 * Checks a code exchange's `resource` (checkGrantedResource) as the code is about to be consumed:
 * after the library's own checks of the code (found, this client's, not expired, PKCE, redirect
 * URI, and not spent — a replay still revokes the grant), before it spends it. The provider runs
 * each request in its context (Provider.ctx).
 */
export function checkCodeResourceFirst(provider: Provider, indicators: ResourceIndicators): void {
  const proto = provider.AuthorizationCode.prototype;
  const consume = proto.consume;
  proto.consume = async function consumeAfterResourceCheck(this: InstanceType<Provider['AuthorizationCode']>) {
    const ctx = Provider.ctx;
    if (ctx?.oidc?.route === 'token') await checkGrantedResource(ctx, this, 'authorization code', indicators);
    return consume.call(this);
  };
}

/**
 * The provider's features.resourceIndicators. The library refuses relative values and fragments
 * (invalid_target, lib/shared/check_resource.js) and more than one value at the token endpoint;
 * here: the same value twice, and any resource that is not registered (or its server not approved).
 */
export function resourceIndicators(records: CachedDb, baseUrl: string): ResourceIndicators {
  const platform = platformResource(baseUrl);
  const lookedUp = new WeakMap<object, Map<string, ReturnType<typeof resourceServerInfo>>>();
  return {
    enabled: true,
    // No `resource`: no audience, the platform API as before (the token stores nothing new, so
    // existing clients, their refresh tokens and the fast path see no change). With one value
    // granted at authorization, the code exchange and a refresh without `resource` get it.
    async defaultResource(_ctx, _client, oneOf) {
      if (oneOf && oneOf.length === 1) return oneOf[0];
      return oneOf;
    },
    // A refresh without `resource` keeps what was granted (RFC 8707 2.2); with one, it may only narrow.
    useGrantedResource: async () => true,
    // Asked once per request and resource: the checks before spending (checkGrantedResource) and
    // the library's own then cost one lookup.
    getResourceServerInfo: (ctx, indicator) => {
      let known = lookedUp.get(ctx);
      if (!known) lookedUp.set(ctx, (known = new Map()));
      if (!known.has(indicator)) known.set(indicator, resourceServerInfo(ctx, indicator));
      return known.get(indicator)!;
    },
  };

  async function resourceServerInfo(ctx: KoaContextWithOIDC, indicator: string) {
    const values = requested(ctx);
    if (new Set(values).size !== values.length) throw new errors.InvalidTarget('each resource may be named only once');
    if (indicator === platform) return { scope: PLATFORM_SCOPES, audience: platform, accessTokenFormat: 'opaque' as const };
    const id = await resourceServerIdFor(records.db, indicator);
    const usable = id === undefined ? undefined : await findUsableClient(records, id);
    if (!usable || usable.client.kind !== 'resource_server' || usable.client.status !== 'approved') {
      throw new errors.InvalidTarget('the resource is not registered here');
    }
    // Its scopes: those it listed, or any (as for what it may introspect).
    const scope = usable.client.scopes.length ? usable.client.scopes.join(' ') : PLATFORM_SCOPES;
    return { scope, audience: indicator, accessTokenFormat: 'opaque' as const };
  }
}

/** What consent grants for each resource the authorization request named (the provider issues tokens from these). */
export function grantRequestedResources(grant: { addResourceScope(resource: string, scope: string): void }, resource: unknown, scopes: string[]): void {
  if (!scopes.length) return;
  const named = resource === undefined ? [] : Array.isArray(resource) ? resource : [resource];
  for (const indicator of named) if (typeof indicator === 'string') grant.addResourceScope(indicator, scopes.join(' '));
}
