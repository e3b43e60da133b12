// Resources (RFC 8707) and their audiences (docs/resources.md). Two kinds of resource exist: the
// platform API, `$BASE_URL/v2`, and each resource server registered with a resource URI
// (`clients create --resource-server --resource-uri …`). A token requested without `resource` is
// for the platform API exactly as before resources existed: it stores no audience, and every path
// reads "no audience" as the platform API. A token requested with one carries it as `aud`.
import { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
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

/** A refresh token as the refresh check reads it: the resources granted at authorization. */
interface GrantedResources {
  resource?: string | string[] | undefined;
}

/**
 * A refresh's `resource`, checked before the refresh token is spent. The library settles the
 * resource only after it rotated the token (lib/actions/grants/refresh_token.js): an invalid_target
 * there would leave the client without a refresh token, and its retry with the spent one would
 * revoke the grant. So the same rules run first (lib/helpers/resolve_resource.js): one value at
 * most, among those granted (narrowing, never widening; a token granted none keeps none), and
 * still registered. Called from findAccount, which the grant runs before it spends anything.
 */
export async function checkRefreshResource(ctx: KoaContextWithOIDC, token: GrantedResources, indicators: ResourceIndicators): Promise<void> {
  const asked = requested(ctx);
  if (asked.length === 0) return;
  if (asked.length > 1) throw new errors.InvalidTarget('only a single resource indicator value must be requested/resolved during Access Token Request');
  const granted = token.resource === undefined ? [] : Array.isArray(token.resource) ? token.resource : [token.resource];
  if (!granted.includes(asked[0]!)) throw new errors.InvalidTarget('the resource was not granted to this refresh token');
  await indicators.getResourceServerInfo!(ctx, asked[0]!, ctx.oidc.client!);
}

/**
 * The provider's features.resourceIndicators. The library refuses relative values and fragments
 * (invalid_target, lib/shared/check_resource.js) and more than one value at the token endpoint;
 * here: the same value twice, and any resource that is not registered (or its server not approved).
 */
export function resourceIndicators(records: CachedDb, baseUrl: string): ResourceIndicators {
  const platform = platformResource(baseUrl);
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
    async getResourceServerInfo(ctx, indicator) {
      const values = requested(ctx);
      if (new Set(values).size !== values.length) throw new errors.InvalidTarget('each resource may be named only once');
      if (indicator === platform) return { scope: PLATFORM_SCOPES, audience: platform, accessTokenFormat: 'opaque' };
      const id = await resourceServerIdFor(records.db, indicator);
      const usable = id === undefined ? undefined : await findUsableClient(records, id);
      if (!usable || usable.client.kind !== 'resource_server' || usable.client.status !== 'approved') {
        throw new errors.InvalidTarget('the resource is not registered here');
      }
      // Its scopes: those it listed, or any (as for what it may introspect).
      const scope = usable.client.scopes.length ? usable.client.scopes.join(' ') : PLATFORM_SCOPES;
      return { scope, audience: indicator, accessTokenFormat: 'opaque' };
    },
  };
}

/** What consent grants for each resource the authorization request named (the provider issues tokens from these). */
export function grantRequestedResources(grant: { addResourceScope(resource: string, scope: string): void }, resource: unknown, scopes: string[]): void {
  if (!scopes.length) return;
  const named = resource === undefined ? [] : Array.isArray(resource) ? resource : [resource];
  for (const indicator of named) if (typeof indicator === 'string') grant.addResourceScope(indicator, scopes.join(' '));
}
