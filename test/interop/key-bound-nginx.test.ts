// Interop (issue 49): oauth4webapi and openid-client v6, unmodified, as a high-trust client (the
// FAPI 2.0 profile, clients set-high-trust: private_key_jwt with the issuer as audience, a DPoP key
// for its tokens, every authorization request pushed, PKCE) — through the shipped nginx recipe, which is the public address (the issuer, the token endpoint and
// /v2/me are all behind it, so each DPoP proof names nginx's URL, never the upstream's).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { startTestServer, type TestServer } from '../support/server.ts';
import { freePort, nginxTestsEnabled, startNginx, type RunningNginx } from '../support/nginx.ts';
import { startEchoApi, type EchoApi } from '../support/echo-api.ts';
import { Browser } from '../support/browser.ts';
import { authorize } from '../support/oauth.ts';
import { newUser, operator, REDIRECT } from '../support/fixtures.ts';
import { clientsCreate, clientsSetHighTrust, clientsSetStatus } from '../../src/admin/commands.ts';

describe.runIf(nginxTestsEnabled('key-bound clients through nginx'))('key-bound clients (private_key_jwt, DPoP, PAR) through the nginx recipe', () => {
  let server: TestServer;
  let api: EchoApi;
  let nginx: RunningNginx;
  let user: Awaited<ReturnType<typeof newUser>>;

  beforeAll(async () => {
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    [server, api] = await Promise.all([startTestServer('redis', { APP_URL: publicUrl, TRUST_PROXY: 'true' }), startEchoApi()]);
    nginx = await startNginx({ oauthServer: new URL(server.url).host, schedulingApi: api.hostPort }, { port });
    user = await newUser(server);
  });
  afterAll(async () => {
    await nginx?.stop();
    await Promise.all([server?.close(), api?.close()]);
  });

  /** A registry client with keys instead of a secret, held to the high-trust profile: all its tokens DPoP-bound, its requests pushed. */
  async function keyBoundClient(name: string) {
    const pair = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as CryptoKeyPair;
    const jwks = JSON.stringify({ keys: [{ ...(await crypto.subtle.exportKey('jwk', pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig', key_ops: undefined, ext: undefined }] });
    const created = await clientsCreate(operator(server), { name, redirectUri: [REDIRECT], scope: ['PROFILE_READ', 'BOOKING_READ'], auth: 'private_key_jwt', jwks });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    await clientsSetHighTrust(operator(server), created.client_id, 'on');
    return { clientId: created.client_id, privateKey: pair.privateKey };
  }
  const dpopPair = () => crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']) as Promise<CryptoKeyPair>;

  it('oauth4webapi: discovery, a pushed request, the code for a DPoP-bound token, /v2/me and a gated call with proofs, a bound refresh', async () => {
    const insecure = { [oauth.allowInsecureRequests]: true };
    const issuer = new URL(`${nginx.url}/v2/auth/oauth2`);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
    expect(as.pushed_authorization_request_endpoint).toBe(`${nginx.url}/v2/auth/oauth2/par`);
    const keyed = await keyBoundClient('oauth4webapi (keys, DPoP, PAR)');
    const app: oauth.Client = { client_id: keyed.clientId };
    const auth = oauth.PrivateKeyJwt({ key: keyed.privateKey, kid: 'k1' });
    const DPoP = oauth.DPoP(app, await dpopPair());

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const params = new URLSearchParams({ redirect_uri: REDIRECT, response_type: 'code', scope: 'PROFILE_READ BOOKING_READ', state, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const pushed = await oauth.processPushedAuthorizationResponse(as, app, await oauth.pushedAuthorizationRequest(as, app, auth, params, { DPoP, ...insecure }));
    // Sent straight to the authorization endpoint, the same request is refused: this client pushes.
    const front = new URL(as.authorization_endpoint!);
    front.search = new URLSearchParams({ client_id: app.client_id, ...Object.fromEntries(params) }).toString();
    const refused = new URL((await fetch(front, { redirect: 'manual' })).headers.get('location')!);
    expect(refused.searchParams.get('error_description')).toContain('must be pushed first');
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({ client_id: app.client_id, request_uri: pushed.request_uri }).toString();
    const callback = await authorize(new Browser(), nginx.url, url, user);
    const code = oauth.validateAuthResponse(as, app, callback, state);

    const tokens = await oauth.processAuthorizationCodeResponse(as, app, await oauth.authorizationCodeGrantRequest(as, app, auth, code, REDIRECT, verifier, { DPoP, ...insecure }));
    expect(tokens.token_type).toBe('dpop');

    const me = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${nginx.url}/v2/me`), undefined, undefined, { DPoP, ...insecure });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ status: 'success', data: { email: user.email } });
    const gated = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${nginx.url}/v2/bookings`), undefined, undefined, { DPoP, ...insecure });
    expect(gated.status).toBe(200);
    // The same token without its proof, as a thief holding only the token would send it.
    expect((await fetch(`${nginx.url}/v2/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(401);
    expect((await fetch(`${nginx.url}/v2/bookings`, { headers: { authorization: `DPoP ${tokens.access_token}` } })).status).toBe(401);

    const refreshed = await oauth.processRefreshTokenResponse(as, app, await oauth.refreshTokenGrantRequest(as, app, auth, tokens.refresh_token!, { DPoP, ...insecure }));
    expect(refreshed.token_type).toBe('dpop');
    // The new access token is bound to the same key: it works with that key's proofs, and not as Bearer.
    // (A confidential client's refresh token is bound by its own authentication, RFC 9449 5: a thief
    // holding it would need the client's private key too.)
    expect((await oauth.protectedResourceRequest(refreshed.access_token, 'GET', new URL(`${nginx.url}/v2/me`), undefined, undefined, { DPoP, ...insecure })).status).toBe(200);
    expect((await fetch(`${nginx.url}/v2/me`, { headers: { authorization: `Bearer ${refreshed.access_token}` } })).status).toBe(401);
  });

  it('openid-client: the same flow through its own discovery, PAR, DPoP handle and protected-resource fetch', async () => {
    const keyed = await keyBoundClient('openid-client (keys, DPoP, PAR)');
    const config = await client.discovery(new URL(`${nginx.url}/v2/auth/oauth2`), keyed.clientId, { token_endpoint_auth_method: 'private_key_jwt' }, client.PrivateKeyJwt({ key: keyed.privateKey, kid: 'k1' }), {
      execute: [client.allowInsecureRequests],
      algorithm: 'oauth2',
    });
    const DPoP = client.getDPoPHandle(config, await dpopPair());
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = await client.buildAuthorizationUrlWithPAR(
      config,
      { redirect_uri: REDIRECT, scope: 'PROFILE_READ BOOKING_READ', state, code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' },
      { DPoP },
    );
    expect(url.searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    const callback = await authorize(new Browser(), nginx.url, url, user);
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP });
    expect(tokens.token_type).toBe('dpop');

    const me = await client.fetchProtectedResource(config, tokens.access_token, new URL(`${nginx.url}/v2/me`), 'GET', undefined, undefined, { DPoP });
    expect(me.status).toBe(200);
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP });
    expect(refreshed.token_type).toBe('dpop');
    const gated = await client.fetchProtectedResource(config, refreshed.access_token, new URL(`${nginx.url}/v2/bookings`), 'GET', undefined, undefined, { DPoP });
    expect(gated.status).toBe(200);
  });
});
