// The provider's endpoints in our app: the steps our app runs in front of the provider, route by
// route, then the provider itself (its own steps follow: client authentication, the grant, …, as
// oidc-provider's lib/actions/token.js lists them). One spelling per path: only the exact
// canonical paths reach the provider (src/oauth/mount.ts).
import compose from 'koa-compose';
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import { APP_AUTHORIZE_PATH, OAUTH_ENDPOINTS, PROVIDER_PATH, RFC8414_PATH } from '../http/paths.ts';
import { mountProvider } from './mount.ts';
import { normaliseScopeParam, readTokenRequestBody } from './request-shims.ts';
import type { TokenEndpointLimits } from './rate-limits.ts';
import { documentStillListsRedirect } from '../cimd/token-check.ts';
import { MethodNotAllowedError } from '../errors.ts';

type Step = (ctx: Context, next: Next) => Promise<unknown>;

const only = (applies: (ctx: Context) => boolean, steps: Step[]): Step => {
  const run = compose(steps);
  return (ctx, next) => (applies(ctx) ? run(ctx, next) : next());
};

// The provider's routes under its mount, exactly as spelled (resume uids are nanoids). The token,
// revocation, introspection and pushed authorization request endpoints are the back channel's (tokenEndpoints).
const PROVIDER_ROUTES = /^\/(authorize(\/[A-Za-z0-9_-]+)?|jwks|\.well-known\/(openid-configuration|oauth-authorization-server))$/;
// Open dynamic registration (DYNAMIC_REGISTRATION=open, src/registration/registration.ts): POST only.
const REGISTRATION_ROUTE = /^\/register$/;
const TOKEN_ROUTES = /^\/(token|revoke|introspect|par)$/;
const AUTHORIZE_ROUTES = /^\/authorize(\/[A-Za-z0-9_-]+)?$/;
const AUTHORIZE_PATHS = new Set([`${PROVIDER_PATH}/authorize`, APP_AUTHORIZE_PATH]);

/** RFC 8414 puts an issuer's metadata at /.well-known/oauth-authorization-server/<its path>. */
async function rfc8414Alias(ctx: Context, next: Next) {
  ctx.path = `${PROVIDER_PATH}/.well-known/oauth-authorization-server`;
  return next();
}

/** The provider's endpoints for people and metadata: authorization, discovery, keys (the main app). */
export function providerEndpoints(provider: Provider, { registration = false } = {}): Step {
  const appAuthorizeMount = APP_AUTHORIZE_PATH.slice(0, -'/authorize'.length);
  return compose([
    only((ctx) => ctx.path === RFC8414_PATH && ctx.method === 'GET', [rfc8414Alias]),
    // Authorization: commas between scope names (docs/endpoints.md).
    only((ctx) => AUTHORIZE_PATHS.has(ctx.path), [normaliseScopeParam]),
    mountProvider(provider, PROVIDER_PATH, PROVIDER_ROUTES),
    ...(registration ? [mountProvider(provider, PROVIDER_PATH, REGISTRATION_ROUTE, (ctx) => ctx.method === 'POST')] : []),
    // The spec's authorization endpoint on APP_URL: the same provider, only its authorization
    // request and the resume step after sign-in and consent.
    mountProvider(provider, appAuthorizeMount, AUTHORIZE_ROUTES, (ctx) => ctx.method === 'GET'),
  ]);
}

const ENDPOINT_NAMES: Record<string, string> = { token: 'token', introspect: 'introspection', revoke: 'revocation', par: 'pushed authorization request' };

async function postOnly(ctx: Context): Promise<never> {
  const name = ENDPOINT_NAMES[ctx.path.slice(ctx.path.lastIndexOf('/') + 1)] ?? 'this';
  throw new MethodNotAllowedError(`the ${name} endpoint takes POST requests only`, ['POST']);
}

/**
 * The token, revocation, introspection and pushed authorization request (RFC 9126) endpoints (the
 * back channel's app, src/app.ts: the one way into them): read the body once (form or JSON), then a client over its own budget waits; the
 * failures are counted inside the provider (rate-limits.ts).
 */
export function tokenEndpoints(provider: Provider, limits: TokenEndpointLimits): Step {
  return compose([
    only((ctx) => OAUTH_ENDPOINTS.has(ctx.path), [readTokenRequestBody, limits.clientBudget, documentStillListsRedirect(provider)]),
    // POST, and a browser's CORS preflight; any other method is our 405 in the OAuth shape, not
    // the provider's plain-text 404.
    mountProvider(provider, PROVIDER_PATH, TOKEN_ROUTES, (ctx) => ctx.method === 'POST' || (ctx.method === 'OPTIONS' && ctx.get('Origin') !== '')),
    only((ctx) => OAUTH_ENDPOINTS.has(ctx.path), [postOnly]),
  ]);
}
