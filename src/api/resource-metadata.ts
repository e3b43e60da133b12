// RFC 9728 protected-resource metadata of the platform API (docs/resources.md): what a client that
// met one of our 401 challenges (its `resource_metadata`) reads to find the authorization server,
// the scopes, and the resource to name in `resource` (RFC 8707).
import type Router from '@koa/router';
import { newRouter } from '../http/router.ts';
import { PROTECTED_RESOURCE_PATH } from '../http/paths.ts';
import { ALL_SCOPES } from '../scopes.ts';
import { platformResource } from '../oauth/resources.ts';

/** The metadata document for a BASE_URL and issuer. */
export function protectedResourceMetadata(baseUrl: string, issuer: string) {
  return {
    resource: platformResource(baseUrl),
    authorization_servers: [issuer],
    scopes_supported: [...ALL_SCOPES],
    // RFC 6750 2.1 only: the check and /v2/me refuse a token sent any other way.
    bearer_methods_supported: ['header'],
  };
}

export function resourceMetadataRoutes(baseUrl: string, issuer: string): Router {
  const router = newRouter();
  const document = JSON.stringify(protectedResourceMetadata(baseUrl, issuer));
  router.get(PROTECTED_RESOURCE_PATH, (ctx) => {
    // Public, the same for everyone, read by browser-based clients too (as the provider's discovery).
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.type = 'json';
    ctx.body = document;
  });
  return router;
}
