// Interop: openid-client v6 (panva), a strict certified client nobody here wrote, drives the
// running server from discovery to introspection. If it rejects something we send, we are wrong.
// Confidential clients with a secret, and with keys instead (private_key_jwt against a jwks_uri
// served on the loopback: CIMD_ALLOW_LOOPBACK=true lets the server fetch it, docs/private-key-jwt.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as client from 'openid-client';
import { startTestServer, type TestServer } from '../support/server.ts';
import { Browser } from '../support/browser.ts';
import { authorize } from '../support/oauth.ts';
import { newUser, operator, REDIRECT } from '../support/fixtures.ts';
import { clientsCreate, clientsSetStatus } from '../../src/admin/commands.ts';
import { startDocumentServer, type DocumentServer } from '../support/cimd.ts';

let server: TestServer;
let user: Awaited<ReturnType<typeof newUser>>;
let confidential: { client_id: string; client_secret: string };
let publicId: string;
let keys: DocumentServer;
let keyed: { client_id: string; privateKey: CryptoKey };

beforeAll(async () => {
  [server, keys] = await Promise.all([startTestServer('redis', { CIMD_ALLOW_LOOPBACK: 'true' }), startDocumentServer()]);
  user = await newUser(server);
  const c = await clientsCreate(operator(server), { name: 'Interop (confidential)', redirectUri: [REDIRECT], scope: ['PROFILE_READ', 'BOOKING_READ'] });
  const p = await clientsCreate(operator(server), { name: 'Interop (public)', redirectUri: [REDIRECT], scope: ['PROFILE_READ'], public: true });
  await Promise.all([c, p].map((x) => clientsSetStatus(operator(server), x.client_id, 'approved')));
  confidential = { client_id: c.client_id, client_secret: c.client_secret! };
  publicId = p.client_id;
  const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const { kty, crv, x, y } = await crypto.subtle.exportKey('jwk', pair.publicKey);
  const jwksUri = keys.serve('/interop-jwks.json', { body: { keys: [{ kty, crv, x, y, kid: 'k1', alg: 'ES256', use: 'sig' }] } });
  const k = await clientsCreate({ ...operator(server), jwksUriAllowLoopback: true }, { name: 'Interop (private_key_jwt)', redirectUri: [REDIRECT], scope: ['PROFILE_READ', 'BOOKING_READ'], auth: 'private_key_jwt', jwksUri });
  await clientsSetStatus(operator(server), k.client_id, 'approved');
  keyed = { client_id: k.client_id, privateKey: pair.privateKey };
});
afterAll(() => Promise.all([server?.close(), keys?.close()]));

const issuer = () => new URL(`${server.url}/v2/auth/oauth2`);

async function runFlow(config: client.Configuration, scope: string) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope,
    state,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  expect(url.href.startsWith(`${server.url}/auth/oauth2/authorize?`)).toBe(true);
  const callback = await authorize(new Browser(), server.url, url, user);
  // Validates state, iss (RFC 9207) and the token response.
  return client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
}

describe.each([
  ['client_secret_post, OpenID-style discovery', 'oidc' as const, () => client.ClientSecretPost(confidential.client_secret), () => confidential.client_id],
  ['client_secret_basic, RFC 8414 discovery', 'oauth2' as const, () => client.ClientSecretBasic(confidential.client_secret), () => confidential.client_id],
  ['private_key_jwt, RFC 8414 discovery', 'oauth2' as const, () => client.PrivateKeyJwt({ key: keyed.privateKey, kid: 'k1' }), () => keyed.client_id],
])('openid-client, confidential client (%s)', (_name, algorithm, auth, clientId) => {
  it('discovers, authorizes, exchanges, calls the API, refreshes, introspects and revokes', async () => {
    const config = await client.discovery(issuer(), clientId(), undefined, auth(), { algorithm, execute: [client.allowInsecureRequests] });
    expect(config.serverMetadata().authorization_response_iss_parameter_supported).toBe(true);

    const tokens = await runFlow(config, 'PROFILE_READ BOOKING_READ');
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expiresIn()).toBeGreaterThan(1790);
    expect(tokens.scope).toBe('PROFILE_READ BOOKING_READ');

    const me = await client.fetchProtectedResource(config, tokens.access_token, new URL(`${server.url}/v2/me`), 'GET');
    expect(me.status).toBe(200);
    expect((await me.json()).data.email).toBe(user.email);

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.scope).toBe('PROFILE_READ BOOKING_READ');

    const introspection = await client.tokenIntrospection(config, refreshed.access_token);
    expect(introspection).toMatchObject({ active: true, client_id: clientId(), sub: String(user.id), scope: 'PROFILE_READ BOOKING_READ' });

    await client.tokenRevocation(config, refreshed.refresh_token!);
    expect((await client.tokenIntrospection(config, refreshed.access_token)).active).toBe(false);
    await expect(client.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });
});

describe('openid-client, public client with PKCE', () => {
  it('authorizes with S256, exchanges without a secret, and refreshes', async () => {
    const config = await client.discovery(issuer(), publicId, undefined, client.None(), { execute: [client.allowInsecureRequests] });
    const tokens = await runFlow(config, 'PROFILE_READ');
    expect(tokens.scope).toBe('PROFILE_READ');
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    const me = await client.fetchProtectedResource(config, refreshed.access_token, new URL(`${server.url}/v2/me`), 'GET');
    expect(me.status).toBe(200);
  });

  it('surfaces an authorization error with its RFC 9207 iss', async () => {
    const config = await client.discovery(issuer(), confidential.client_id, undefined, client.ClientSecretPost(confidential.client_secret), {
      execute: [client.allowInsecureRequests],
    });
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'SCHEDULE_READ', state });
    const page = await new Browser().get(url.href);
    await expect(client.authorizationCodeGrant(config, new URL(page.location!), { expectedState: state })).rejects.toMatchObject({
      error: 'invalid_scope',
    });
  });
});
