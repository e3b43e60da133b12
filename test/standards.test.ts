// The standards surface, item by item: RFC 8414 metadata, RFC 9207 iss, PKCE (RFC 7636),
// single-use codes (RFC 6749 4.1.2), refresh rotation with reuse detection (RFC 9700 4.14.2),
// revocation (RFC 7009) and introspection (RFC 7662) — on Redis and on SQL storage.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorize, authorizeUrl, getMe, tokenRequest } from './support/oauth.ts';
import { approvedClient, codeFor, newUser, operator, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';
import { clientsCreate, clientsSetStatus } from '../src/admin/commands.ts';
import { ALL_SCOPES } from '../src/scopes.ts';

const verifier = () => randomBytes(32).toString('base64url');
const challengeOf = (v: string) => createHash('sha256').update(v).digest('base64url');

async function post(url: string, fields: Record<string, string>, basic?: TestClient) {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (basic) headers.authorization = `Basic ${Buffer.from(`${basic.client_id}:${basic.client_secret}`).toString('base64')}`;
  const res = await fetch(url, { method: 'POST', headers, body: new URLSearchParams(fields) });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, any> };
}

describe('metadata (RFC 8414)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sql');
  });
  afterAll(() => server?.close());

  it('is served at the RFC 8414 path and the OpenID discovery path, advertising exactly what works', async () => {
    const [rfc8414, openid] = await Promise.all(
      ['/.well-known/oauth-authorization-server/v2/auth/oauth2', '/v2/auth/oauth2/.well-known/openid-configuration'].map(async (p) => {
        const res = await fetch(`${server.url}${p}`);
        expect(res.status).toBe(200);
        return res.json();
      }),
    );
    expect(openid).toEqual(rfc8414);
    const issuer = `${server.url}/v2/auth/oauth2`;
    expect(rfc8414).toEqual({
      issuer,
      authorization_endpoint: `${server.url}/auth/oauth2/authorize`,
      token_endpoint: `${issuer}/token`,
      revocation_endpoint: `${issuer}/revoke`,
      introspection_endpoint: `${issuer}/introspect`,
      // Pushed authorization requests (RFC 9126, docs/par.md).
      pushed_authorization_request_endpoint: `${issuer}/par`,
      jwks_uri: `${issuer}/jwks`,
      scopes_supported: [...ALL_SCOPES],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      // private_key_jwt for every client with keys (docs/private-key-jwt.md, docs/agents.md): asymmetric algorithms only.
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none', 'private_key_jwt'],
      token_endpoint_auth_signing_alg_values_supported: ['ES256', 'ES384', 'ES512', 'RS256', 'PS256', 'EdDSA', 'Ed25519'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
      // DPoP (RFC 9449, docs/dpop.md): asymmetric algorithms only.
      dpop_signing_alg_values_supported: ['ES256', 'ES384', 'ES512', 'RS256', 'PS256', 'EdDSA', 'Ed25519'],
    });
  });
});

describe('token endpoint requests and responses (RFC 6749 5.1, 5.2)', () => {
  let server: TestServer;
  let client: TestClient;
  beforeAll(async () => {
    server = await startTestServer('sql');
    client = await approvedClient(server, ['PROFILE_READ']);
  });
  afterAll(() => server?.close());

  const ENDPOINTS = ['token', 'revoke', 'introspect'];
  const noCache = (res: Response) => ({ cacheControl: res.headers.get('cache-control'), pragma: res.headers.get('pragma') });

  it('answers a body that is neither form nor JSON at once with 400 invalid_request naming both types', async () => {
    for (const endpoint of ENDPOINTS) {
      for (const [type, body] of [
        ['text/plain', 'grant_type=refresh_token&refresh_token=x'],
        ['text/plain;charset=UTF-8', 'token=x'],
        ['application/xml', '<grant_type>x</grant_type>'],
        ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="grant_type"\r\n\r\nrefresh_token\r\n--x--'],
        ['application/merge-patch+json', '{"grant_type":"refresh_token"}'],
        ['text/plain', 'a'.repeat(200_000)],
      ]) {
        const start = Date.now();
        const res = await fetch(`${server.url}/v2/auth/oauth2/${endpoint}`, { method: 'POST', headers: { 'content-type': type!, authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` }, body, signal: AbortSignal.timeout(2_000) });
        expect(res.status, `${endpoint} ${type}`).toBe(400);
        expect(Date.now() - start).toBeLessThan(1_000);
        expect(await res.json()).toEqual({ error: 'invalid_request', error_description: expect.stringMatching(/application\/x-www-form-urlencoded or application\/json/) });
        expect(noCache(res)).toEqual({ cacheControl: 'no-store', pragma: 'no-cache' });
      }
    }
  });

  it('answers before a body of another type has even been sent in full', async () => {
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(`${server.url}/v2/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': 'text/plain', 'content-length': '100000' } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode!, text });
        });
      });
      req.on('error', reject);
      req.setTimeout(2_000, () => reject(new Error('no answer while the body was still coming')));
      req.write('grant_type=refresh_token'); // …and the rest never comes
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text).error).toBe('invalid_request');
  });

  it('keeps form and JSON bodies working, and marks every token response no-store and no-cache', async () => {
    // The provider reads the body our app already read as a stream again: it never warns of an
    // "already parsed request body".
    const warn = vi.spyOn(console, 'warn');
    onTestFinished(() => {
      expect(warn.mock.calls.flat().join(' ')).not.toContain('already parsed');
      warn.mockRestore();
    });
    const user = await newUser(server);
    const form = await fetch(`${server.url}/v2/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: await codeFor(server, client, user, 'PROFILE_READ'), redirect_uri: REDIRECT, ...client }),
    });
    expect(form.status).toBe(200);
    expect(noCache(form)).toEqual({ cacheControl: 'no-store', pragma: 'no-cache' });
    const { refresh_token } = (await form.json()) as { refresh_token: string };
    const json = await fetch(`${server.url}/v2/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'refresh_token', refresh_token, ...client }),
    });
    expect(json.status).toBe(200);
    expect(noCache(json)).toEqual({ cacheControl: 'no-store', pragma: 'no-cache' });
    // Errors too: an unknown refresh token (400), a wrong secret (401), malformed JSON (400), a body too large (413).
    for (const [headers, body, status] of [
      [{ 'content-type': 'application/json' }, JSON.stringify({ grant_type: 'refresh_token', refresh_token: 'not-a-live-token', ...client }), 400],
      [{ 'content-type': 'application/x-www-form-urlencoded' }, new URLSearchParams({ grant_type: 'refresh_token', refresh_token, client_id: client.client_id, client_secret: 'wrong' }).toString(), 401],
      [{ 'content-type': 'application/json' }, '{"grant_type":', 400],
      [{ 'content-type': 'application/x-www-form-urlencoded' }, `refresh_token=${'a'.repeat(20_000)}`, 413],
    ] as const) {
      const res = await fetch(`${server.url}/v2/auth/oauth2/token`, { method: 'POST', headers, body });
      expect(res.status, body.slice(0, 40)).toBe(status);
      expect(noCache(res)).toEqual({ cacheControl: 'no-store', pragma: 'no-cache' });
    }
  });
});

describe('standards (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let client: TestClient;
  let publicClientId: string;
  let user: Awaited<ReturnType<typeof newUser>>;
  const issuer = () => `${server.url}/v2/auth/oauth2`;
  const token = (fields: Record<string, string>) => tokenRequest(server.url, fields);

  beforeAll(async () => {
    server = await startTestServer(storage);
    client = await approvedClient(server, ['PROFILE_READ', 'BOOKING_READ']);
    const pub = await clientsCreate(operator(server), { name: 'Mobile', redirectUri: [REDIRECT], scope: ['PROFILE_READ'], public: true });
    await clientsSetStatus(operator(server), pub.client_id, 'approved');
    publicClientId = pub.client_id;
    user = await newUser(server);
  });
  afterAll(() => server?.close());

  const exchange = (code: string, extra: Record<string, string> = {}) =>
    token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...client, ...extra });

  it('puts iss on success and error authorization responses (RFC 9207)', async () => {
    const ok = await authorize(new Browser(), server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 'a' }, user);
    expect(ok.searchParams.get('iss')).toBe(issuer());
    const error = await new Browser().follow(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'NOPE', state: 'b' }), server.url);
    const back = new URL(error.location!);
    expect(back.searchParams.get('error')).toBe('invalid_scope');
    expect(back.searchParams.get('iss')).toBe(issuer());
    expect(back.searchParams.get('state')).toBe('b');
  });

  describe('PKCE (RFC 7636)', () => {
    async function publicCode(extra: Record<string, string>) {
      const back = await authorize(new Browser(), server.url, { client_id: publicClientId, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', ...extra }, user);
      return back.searchParams.get('code')!;
    }

    it('lets a public client redeem with the right S256 verifier and no secret', async () => {
      const v = verifier();
      const code = await publicCode({ code_challenge: challengeOf(v), code_challenge_method: 'S256' });
      const res = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: publicClientId, code_verifier: v });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ token_type: 'bearer', scope: 'PROFILE_READ', refresh_token: expect.any(String) });
      const refreshed = await token({ grant_type: 'refresh_token', refresh_token: res.body.refresh_token as string, client_id: publicClientId });
      expect(refreshed.status).toBe(200);
    });

    it('requires a challenge from a public client, and refuses plain for everyone', async () => {
      for (const [clientId, extra] of [
        [publicClientId, {}],
        [publicClientId, { code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }],
        [client.client_id, { code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }],
      ] as const) {
        const page = await new Browser().get(authorizeUrl(server.url, { client_id: clientId, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', ...extra }));
        const back = new URL(page.location!);
        expect(back.searchParams.get('error')).toBe('invalid_request');
        expect(back.searchParams.get('code')).toBeNull();
      }
    });

    it('refuses a wrong or missing verifier, and a verifier for a code issued without a challenge (downgrade)', async () => {
      const v = verifier();
      const code = await publicCode({ code_challenge: challengeOf(v), code_challenge_method: 'S256' });
      const wrong = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: publicClientId, code_verifier: verifier() });
      expect(wrong.status).toBe(400);
      expect(wrong.body.error).toBe('invalid_grant');

      const confidential = await codeFor(server, client, user, 'PROFILE_READ', new Browser());
      const v2 = verifier();
      // A confidential client that sent a challenge must send the verifier…
      const withChallenge = (
        await authorize(new Browser(), server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', code_challenge: challengeOf(v2), code_challenge_method: 'S256' }, user)
      ).searchParams.get('code')!;
      expect((await exchange(withChallenge)).body.error).toBe('invalid_grant');
      // …and a code issued without one cannot be redeemed with a verifier.
      expect((await exchange(confidential, { code_verifier: verifier() })).body.error).toBe('invalid_grant');
    });
  });

  describe('authorization codes', () => {
    it('are single use: a replay is refused and revokes every token issued from the code', async () => {
      const code = await codeFor(server, client, user, 'PROFILE_READ');
      const first = await exchange(code);
      expect(first.status).toBe(200);
      const replay = await exchange(code);
      expect(replay.status).toBe(400);
      expect(replay.body.error).toBe('invalid_grant');
      expect((await getMe(server.url, first.body.access_token as string)).status).toBe(401);
      const refresh = await token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token as string, ...client });
      expect(refresh.body.error).toBe('invalid_grant');
    });

    it('yield exactly one token response for 20 parallel redemptions', async () => {
      // The adapter's conditional consume decides the race; a redemption that arrives after the
      // winner is a replay and also revokes the winner's tokens (RFC 6749 4.1.2), so only the
      // count of token responses is deterministic.
      const code = await codeFor(server, client, user, 'PROFILE_READ');
      const results = await Promise.all(Array.from({ length: 20 }, () => exchange(code)));
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      for (const r of results.filter((x) => x.status !== 200)) expect(r.body.error).toBe('invalid_grant');
    });

    it('are bound to the client they were issued to', async () => {
      const other = await approvedClient(server, ['PROFILE_READ']);
      const code = await codeFor(server, client, user, 'PROFILE_READ');
      const stolen = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...other });
      expect(stolen.status).toBe(400);
      expect(stolen.body.error).toBe('invalid_grant');
    });
  });

  describe('refresh tokens', () => {
    it('rotate, and presenting a spent one revokes the whole grant (RFC 9700 4.14.2)', async () => {
      const t0 = await tokensFor(server, client, user, 'PROFILE_READ');
      const t1 = (await token({ grant_type: 'refresh_token', refresh_token: t0.refresh_token, ...client })).body;
      expect(t1.refresh_token).not.toBe(t0.refresh_token);
      expect((await getMe(server.url, t1.access_token as string)).status).toBe(200);
      // Its successor is used: from now on t0 is reuse, whatever the grace window.
      const t2 = (await token({ grant_type: 'refresh_token', refresh_token: t1.refresh_token as string, ...client })).body;
      expect(t2.refresh_token).toEqual(expect.any(String));

      const reuse = await token({ grant_type: 'refresh_token', refresh_token: t0.refresh_token, ...client });
      expect(reuse.status).toBe(400);
      expect(reuse.body.error).toBe('invalid_grant');
      expect((await getMe(server.url, t2.access_token as string)).status).toBe(401);
      expect((await getMe(server.url, t0.access_token)).status).toBe(401);
      expect((await token({ grant_type: 'refresh_token', refresh_token: t2.refresh_token as string, ...client })).body.error).toBe('invalid_grant');
    });

    it('give concurrent refreshes of the same token one answer: one token family, never two live refresh tokens', async () => {
      for (const n of [2, 10]) {
        const t0 = await tokensFor(server, client, user, 'PROFILE_READ');
        const results = await Promise.all(Array.from({ length: n }, () => token({ grant_type: 'refresh_token', refresh_token: t0.refresh_token, ...client })));
        const answered = results.filter((r) => r.status === 200);
        expect(answered.length).toBeGreaterThanOrEqual(1);
        expect(new Set(answered.map((r) => JSON.stringify(r.body))).size).toBe(1);
        for (const r of results.filter((x) => x.status !== 200)) expect(r.body.error).toBe('invalid_grant');
        // The one family lives on: its access token works, its refresh token refreshes.
        expect((await getMe(server.url, answered[0]!.body.access_token as string)).status).toBe(200);
        expect((await token({ grant_type: 'refresh_token', refresh_token: answered[0]!.body.refresh_token as string, ...client })).status).toBe(200);
      }
    });
  });

  describe('revocation (RFC 7009) and introspection (RFC 7662)', () => {
    const revoke = (fields: Record<string, string>, as = client) => post(`${issuer()}/revoke`, fields, as);
    const introspect = (fields: Record<string, string>, as = client) => post(`${issuer()}/introspect`, fields, as);

    it('introspects a client’s own token with the RFC 7662 members', async () => {
      const t = await tokensFor(server, client, user, 'PROFILE_READ BOOKING_READ');
      const res = await introspect({ token: t.access_token });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        active: true,
        scope: 'PROFILE_READ BOOKING_READ',
        client_id: client.client_id,
        sub: String(user.id),
        token_type: 'bearer',
        exp: expect.any(Number),
        iat: expect.any(Number),
      });
      expect(res.body.exp - res.body.iat).toBe(1800);
      expect((await introspect({ token: t.refresh_token })).body).toMatchObject({ active: true, client_id: client.client_id });
      expect((await introspect({ token: 'nonsense' })).body).toEqual({ active: false });
    });

    it("reports another client's token as inactive, and refuses unauthenticated callers", async () => {
      const other = await approvedClient(server, ['PROFILE_READ']);
      const t = await tokensFor(server, client, user, 'PROFILE_READ');
      expect((await introspect({ token: t.access_token }, other)).body).toEqual({ active: false });
      const anonymous = await post(`${issuer()}/introspect`, { token: t.access_token });
      expect(anonymous.status).toBe(400);
      const wrongSecret = await introspect({ token: t.access_token }, { ...client, client_secret: 'nope' });
      expect(wrongSecret.status).toBe(401);
      expect(wrongSecret.body.error).toBe('invalid_client');
    });

    it('revokes an access token with the tokens of its grant, and a refresh token with its whole grant', async () => {
      // RFC 7009 2.1 lets the server revoke the refresh token with the access token; the provider does.
      const a = await tokensFor(server, client, user, 'PROFILE_READ');
      const other = await tokensFor(server, client, user, 'PROFILE_READ');
      expect((await revoke({ token: a.access_token, token_type_hint: 'access_token' })).status).toBe(200);
      expect((await getMe(server.url, a.access_token)).status).toBe(401);
      expect((await token({ grant_type: 'refresh_token', refresh_token: a.refresh_token, ...client })).body.error).toBe('invalid_grant');
      expect((await getMe(server.url, other.access_token)).status).toBe(200);

      const b = await tokensFor(server, client, user, 'PROFILE_READ');
      expect((await revoke({ token: b.refresh_token })).status).toBe(200);
      expect((await getMe(server.url, b.access_token)).status).toBe(401);
      expect((await token({ grant_type: 'refresh_token', refresh_token: b.refresh_token, ...client })).body.error).toBe('invalid_grant');
      expect((await introspect({ token: b.access_token })).body).toEqual({ active: false });

      expect((await revoke({ token: 'unknown-token' })).status).toBe(200);
    });

    it("refuses to revoke another client's token, which keeps working", async () => {
      const other = await approvedClient(server, ['PROFILE_READ']);
      const t = await tokensFor(server, client, user, 'PROFILE_READ');
      const res = await revoke({ token: t.access_token }, other);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
      expect((await getMe(server.url, t.access_token)).status).toBe(200);
    });
  });
});
