// Interop: oauth4webapi (panva), the low-level strict OAuth 2.0 client, step by step: RFC 8414
// discovery, authorization response validation (state, iss), code exchange, protected resource,
// refresh, introspection, revocation — with a secret, and with keys instead (private_key_jwt).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { startTestServer, type TestServer } from '../support/server.ts';
import { Browser } from '../support/browser.ts';
import { authorize } from '../support/oauth.ts';
import { newUser, operator, REDIRECT } from '../support/fixtures.ts';
import { clientsCreate, clientsSetStatus } from '../../src/admin/commands.ts';

let server: TestServer;
let user: Awaited<ReturnType<typeof newUser>>;
let confidential: { client_id: string; client_secret: string };
let publicId: string;
/** A client with keys instead of a secret (docs/private-key-jwt.md): its private key, never sent. */
let keyed: { client_id: string; privateKey: CryptoKey };
const insecure = { [oauth.allowInsecureRequests]: true };

beforeAll(async () => {
  server = await startTestServer('sql');
  user = await newUser(server);
  const c = await clientsCreate(operator(server), { name: 'oauth4webapi (confidential)', redirectUri: [REDIRECT], scope: ['PROFILE_READ', 'PROFILE_WRITE'] });
  const p = await clientsCreate(operator(server), { name: 'oauth4webapi (public)', redirectUri: [REDIRECT], scope: ['PROFILE_READ'], public: true });
  await Promise.all([c, p].map((x) => clientsSetStatus(operator(server), x.client_id, 'approved')));
  confidential = { client_id: c.client_id, client_secret: c.client_secret! };
  publicId = p.client_id;
  const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const jwks = JSON.stringify({ keys: [{ ...(await crypto.subtle.exportKey('jwk', pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig', key_ops: undefined, ext: undefined }] });
  const k = await clientsCreate(operator(server), { name: 'oauth4webapi (private_key_jwt)', redirectUri: [REDIRECT], scope: ['PROFILE_READ', 'PROFILE_WRITE'], auth: 'private_key_jwt', jwks });
  await clientsSetStatus(operator(server), k.client_id, 'approved');
  keyed = { client_id: k.client_id, privateKey: pair.privateKey };
});
afterAll(() => server?.close());

async function discover(): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(`${server.url}/v2/auth/oauth2`);
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure });
  return oauth.processDiscoveryResponse(issuer, response);
}

async function obtainTokens(as: oauth.AuthorizationServer, client: oauth.Client, auth: oauth.ClientAuth, scope: string) {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString();
  const callback = await authorize(new Browser(), server.url, url, user);
  const params = oauth.validateAuthResponse(as, client, callback, state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, auth, params, REDIRECT, verifier, insecure);
  return oauth.processAuthorizationCodeResponse(as, client, response);
}

describe.each<[string, () => oauth.ClientAuth, () => string]>([
  ['client_secret_post', () => oauth.ClientSecretPost(confidential.client_secret), () => confidential.client_id],
  ['client_secret_basic', () => oauth.ClientSecretBasic(confidential.client_secret), () => confidential.client_id],
  ['private_key_jwt', () => oauth.PrivateKeyJwt({ key: keyed.privateKey, kid: 'k1' }), () => keyed.client_id],
])('oauth4webapi, confidential client (%s)', (_name, auth, clientId) => {
  it('runs the whole lifecycle', async () => {
    const as = await discover();
    const client: oauth.Client = { client_id: clientId() };
    const tokens = await obtainTokens(as, client, auth(), 'PROFILE_READ PROFILE_WRITE');
    expect(tokens).toMatchObject({ token_type: 'bearer', expires_in: 1800, scope: 'PROFILE_READ PROFILE_WRITE' });

    const patched = await oauth.protectedResourceRequest(
      tokens.access_token,
      'PATCH',
      new URL(`${server.url}/v2/me`),
      new Headers({ 'content-type': 'application/json' }),
      JSON.stringify({ timeZone: 'Europe/Berlin' }),
      insecure,
    );
    expect(patched.status).toBe(200);

    const refreshResponse = await oauth.refreshTokenGrantRequest(as, client, auth(), tokens.refresh_token!, insecure);
    const refreshed = await oauth.processRefreshTokenResponse(as, client, refreshResponse);
    expect(refreshed.scope).toBe('PROFILE_READ PROFILE_WRITE');

    const introspection = await oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, auth(), refreshed.access_token, insecure));
    expect(introspection).toMatchObject({ active: true, client_id: client.client_id, token_type: 'bearer' });

    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, auth(), refreshed.refresh_token!, insecure));
    const after = await oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, auth(), refreshed.access_token, insecure));
    expect(after.active).toBe(false);

    // A spent refresh token is refused in RFC 6749 5.2 shape.
    const reuse = await oauth.refreshTokenGrantRequest(as, client, auth(), tokens.refresh_token!, insecure);
    await expect(oauth.processRefreshTokenResponse(as, client, reuse)).rejects.toMatchObject({ error: 'invalid_grant' });
  });
});

describe('oauth4webapi, public client with PKCE', () => {
  it('exchanges and refreshes with client authentication none', async () => {
    const as = await discover();
    const client: oauth.Client = { client_id: publicId, token_endpoint_auth_method: 'none' };
    const tokens = await obtainTokens(as, client, oauth.None(), 'PROFILE_READ');
    const me = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${server.url}/v2/me`), undefined, undefined, insecure);
    expect(me.status).toBe(200);
    const refreshed = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure));
    expect(refreshed.access_token).toBeTruthy();
  });

  it('rejects a callback whose iss is not the issuer (mix-up defence works against us)', async () => {
    const as = await discover();
    const client: oauth.Client = { client_id: publicId };
    const forged = new URL(`${REDIRECT}?code=x&state=s&iss=${encodeURIComponent('https://evil.example')}`);
    expect(() => oauth.validateAuthResponse(as, client, forged, 's')).toThrow();
  });
});
