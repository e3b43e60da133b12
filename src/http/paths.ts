// Every path the app answers, spelled once: routers, the provider mount, limits, metrics and
// pages name them from here. A leaf module: it imports nothing.

/** The provider's mount on BASE_URL; the issuer is `$BASE_URL` + this. */
export const PROVIDER_PATH = '/v2/auth/oauth2';
/** The authorization endpoint as the spec names it, on APP_URL (the same provider). */
export const APP_AUTHORIZE_PATH = '/auth/oauth2/authorize';
export const INTERACTION_PATH = '/auth/oauth2/interaction';
/** RFC 8414 puts the metadata of an issuer with a path at /.well-known/…/<path>. */
export const RFC8414_PATH = `/.well-known/oauth-authorization-server${PROVIDER_PATH}`;

export const TOKEN_PATH = `${PROVIDER_PATH}/token`;
export const REVOCATION_PATH = `${PROVIDER_PATH}/revoke`;
export const INTROSPECTION_PATH = `${PROVIDER_PATH}/introspect`;
/** RFC 9126: where a client pushes its authorization request before sending the browser (docs/par.md). */
export const PAR_PATH = `${PROVIDER_PATH}/par`;
/** The endpoints that authenticate clients and answer in RFC 6749 JSON. */
export const OAUTH_ENDPOINTS: ReadonlySet<string> = new Set([TOKEN_PATH, REVOCATION_PATH, INTROSPECTION_PATH, PAR_PATH]);

export const ME_PATH = '/v2/me';
export const CHECK_PATH = '/v2/auth/check';
/** Where anyone revokes a leaked credential of ours (src/leak-reports/revoke-endpoint.ts). */
export const LEAK_REVOKE_PATH = '/v2/auth/credentials/revoke';

/** The start page on APP_URL (src/web/start.ts): what this server is, and the ways in. */
export const START_PATH = '/';
export const LOGIN_PATH = '/login';
export const LOGOUT_PATH = '/logout';
/** Where the sign-in page sends a person to the upstream provider (src/web/upstream-sign-in.ts; docs/accounts.md). */
export const UPSTREAM_START_PATH = '/login/upstream';
/** Our redirect URI at the upstream provider: the one exact path it sends people back to. */
export const UPSTREAM_CALLBACK_PATH = '/login/upstream/callback';
/** The authorization flow's step of an upstream sign-in, under the interaction's path: `${INTERACTION_PATH}/:uid` + this. */
export const INTERACTION_UPSTREAM_SUFFIX = '/upstream';
export const CONNECTED_APPS_PATH = '/settings/connected-apps';
export const DEVELOPER_CLIENTS_PATH = '/settings/developer/oauth-clients';
export const ADMIN_CLIENTS_PATH = '/admin/oauth-clients';
/** The organizations a user administers, and each one's apps page (src/web/org-apps.ts). */
export const ORGANIZATIONS_PATH = '/settings/organizations';
/** The apps page of an organization and its forms' targets; with `:name` arguments, the router's patterns. */
export function orgAppsPaths(orgId: number | string) {
  const page = `${ORGANIZATIONS_PATH}/${orgId}/apps`;
  return {
    page,
    policy: `${page}/policy`,
    teams: (installationId: number | string) => `${page}/installations/${installationId}/teams`,
    uninstall: (installationId: number | string) => `${page}/installations/${installationId}/uninstall`,
    approve: (requestId: number | string) => `${page}/requests/${requestId}/approve`,
    dismiss: (requestId: number | string) => `${page}/requests/${requestId}/dismiss`,
  };
}
/** The demo client's redirect URI on APP_URL (src/demo.ts); answered only where the demo was set up. */
export const DEMO_CALLBACK_PATH = '/demo/callback';
/** RFC 9728 protected-resource metadata of the platform API (`$BASE_URL/v2`): the well-known path before the resource's path. */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource/v2';
