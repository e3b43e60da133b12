// DPoP (RFC 9449; docs/dpop.md) at the token endpoint, on both stores: a proof binds the access
// token (and a public client's refresh token) to its key; a proof's jti is used once across every
// instance; bad proofs are refused with nothing issued or spent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstance, startTestServer, type AppInstance, type Storage, type TestServer } from './support/server.ts';
import { approvedClient, codeFor, newUser, operator, REDIRECT, type TestClient } from './support/fixtures.ts';
import { clientsCreate, clientsSetDpop, clientsSetStatus } from '../src/admin/commands.ts';
import { dpopKey, getWith, pkceCode, proof, tokenPost, type DpopKey } from './support/dpop.ts';
import { clientKinds, KINDS, registerClient } from './support/client-kinds.ts';
import { AGENT_REDIRECT, agentCode, startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { DPOP_ALGS } from '../src/oauth/dpop.ts';
import { authorize } from './support/oauth.ts';
import { Browser } from './support/browser.ts';

// Both instances see the request as the gateway in front of them forwards it (TRUST_PROXY=1): one public token URL.
const GATEWAY = { 'x-forwarded-host': 'auth.example', 'x-forwarded-proto': 'https' };
const HTU = 'https://auth.example/v2/auth/oauth2/token';

describe.each<Storage>(['redis', 'sql'])('DPoP at the token endpoint (%s)', (storage) => {
  let server: TestServer;
  let other: AppInstance;
  let app: TestClient;
  let publicId: string;
  let user: Awaited<ReturnType<typeof newUser>>;

  beforeAll(async () => {
    server = await startTestServer(storage, { TRUST_PROXY: '1' });
    other = await startInstance(
      { DATABASE_URL: server.pg.url, APP_URL: server.url, TRUST_PROXY: '1', ...(server.redis ? { REDIS_URL: server.redis.url } : {}) },
      { db: server.pg.db, ...(server.redis ? { redis: server.redis.redis, redisPrefix: server.redis.prefix } : {}) },
    );
    app = await approvedClient(server, ['PROFILE_READ']);
    const created = await clientsCreate(operator(server), { name: 'Public App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'], public: true });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    publicId = created.client_id;
    user = await newUser(server);
  });
  afterAll(async () => {
    await other?.close();
    await server?.close();
  });

  const exchange = async (key: DpopKey | undefined, code: string, at: { url: string } = server, dpop?: string) =>
    tokenPost({ url: at.url } as TestServer, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...app }, { ...GATEWAY, ...(dpop ?? key ? { dpop: dpop ?? proof(key!, 'POST', HTU) } : {}) });

  it('advertises the asymmetric algorithms it accepts', async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`)).json()) as Record<string, unknown>;
    expect(metadata.dpop_signing_alg_values_supported).toEqual(DPOP_ALGS);
    expect((metadata.dpop_signing_alg_values_supported as string[]).some((alg) => alg.startsWith('HS') || alg === 'none')).toBe(false);
  });

  it('binds the access token of a code exchange with a proof; introspection says cnf.jkt', async () => {
    const key = dpopKey();
    const res = await exchange(key, await codeFor(server, app, user, 'PROFILE_READ'));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.token_type).toBe('DPoP');
    const answer = await fetch(`${server.url}/v2/auth/oauth2/introspect`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: res.body.access_token, ...app }) });
    const body = (await answer.json()) as Record<string, any>;
    expect(body).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: key.jkt } });
    // A confidential client's refresh token is not bound (RFC 9449 5): its refresh without a proof is a bearer token.
    const refreshed = await tokenPost(server, { grant_type: 'refresh_token', refresh_token: res.body.refresh_token, ...app });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.token_type).toBe('bearer');
  });

  it('without a proof, a bearer token as before', async () => {
    const res = await exchange(undefined, await codeFor(server, app, user, 'PROFILE_READ'));
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe('bearer');
  });

  it("binds a public client's refresh token: its refresh needs a proof of the same key", async () => {
    const key = dpopKey();
    const { code, verifier } = await pkceCode(server, publicId, user);
    const first = await tokenPost(server, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier, client_id: publicId }, { ...GATEWAY, dpop: proof(key, 'POST', HTU) });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.token_type).toBe('DPoP');
    const refresh = (dpop?: string) => tokenPost(server, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: publicId }, { ...GATEWAY, ...(dpop ? { dpop } : {}) });
    // Without a proof, or with another key's: refused, and the token is not spent.
    for (const dpop of [undefined, proof(dpopKey(), 'POST', HTU)]) {
      const refused = await refresh(dpop);
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(refused.body.error).toBe('invalid_grant');
    }
    const ok = await refresh(proof(key, 'POST', HTU));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.token_type).toBe('DPoP');
  });

  it("uses a proof's jti once across two instances: the replay is refused and its code not spent", async () => {
    const key = dpopKey();
    const dpop = proof(key, 'POST', HTU);
    const first = await exchange(key, await codeFor(server, app, user, 'PROFILE_READ'), server, dpop);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const code = await codeFor(server, app, user, 'PROFILE_READ');
    const replayed = await exchange(key, code, other, dpop);
    expect(replayed.status, JSON.stringify(replayed.body)).toBe(400);
    expect(replayed.body.error).toBe('invalid_grant');
    // The code is still good for a fresh proof.
    const retried = await exchange(key, code, other);
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.token_type).toBe('DPoP');
  });

  it('lets exactly one of concurrent presentations of one proof through, across instances', async () => {
    const key = dpopKey();
    const dpop = proof(key, 'POST', HTU);
    const codes: string[] = [];
    for (let i = 0; i < 6; i += 1) codes.push(await codeFor(server, app, user, 'PROFILE_READ'));
    const answers = await Promise.all(codes.map((code, i) => exchange(key, code, i % 2 ? other : server, dpop)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400, 400, 400, 400]);
  });

  it('refuses bad proofs with invalid_dpop_proof, issuing nothing and leaving the code', async () => {
    const key = dpopKey();
    const now = Math.floor(Date.now() / 1000);
    const { privateKey: _p, ...withPrivate } = { ...key, jwk: { ...key.jwk, d: 'AAAA' } };
    const bad: Array<[string, string]> = [
      ['alg none', proof(key, 'POST', HTU, undefined, {}, { alg: 'none' })],
      ['a symmetric alg', proof(key, 'POST', HTU, undefined, {}, { alg: 'HS256' })],
      ['a private jwk', proof(key, 'POST', HTU, undefined, {}, { jwk: withPrivate.jwk })],
      ['another htm', proof(key, 'GET', HTU)],
      ['another htu', proof(key, 'POST', 'https://evil.example/v2/auth/oauth2/token')],
      ['iat far in the past', proof(key, 'POST', HTU, undefined, { iat: now - 3600 })],
      ['iat far in the future', proof(key, 'POST', HTU, undefined, { iat: now + 3600 })],
      ['no jti', proof(key, 'POST', HTU, undefined, { jti: undefined })],
      ['another typ', proof(key, 'POST', HTU, undefined, {}, { typ: 'JWT' })],
      ['oversized', proof(key, 'POST', HTU, undefined, { pad: 'x'.repeat(5000) })],
      ['not a JWT', 'not-a-proof'],
    ];
    const code = await codeFor(server, app, user, 'PROFILE_READ');
    for (const [what, dpop] of bad) {
      const res = await exchange(key, code, server, dpop);
      expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(400);
      // An iat out of the window without a nonce: the server offers one (RFC 9449 8).
      expect(res.body.error, what).toBe(what.startsWith('iat') ? 'use_dpop_nonce' : 'invalid_dpop_proof');
      if (what.startsWith('iat')) expect(res.headers.get('dpop-nonce'), what).toBeTruthy();
    }
    // Two DPoP headers: refused before the provider reads either.
    const twice = await fetch(`${server.url}/v2/auth/oauth2/token`, {
      method: 'POST',
      headers: [['content-type', 'application/x-www-form-urlencoded'], ['x-forwarded-host', 'auth.example'], ['x-forwarded-proto', 'https'], ['dpop', proof(key, 'POST', HTU)], ['dpop', proof(key, 'POST', HTU)]],
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...app }).toString(),
    });
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { error: string }).error).toBe('invalid_dpop_proof');
    const ok = await exchange(key, code);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });

  it('holds a code made with dpop_jkt to that key, without spending it on a missing or wrong proof', async () => {
    const key = dpopKey();
    const back = await authorize(new Browser(), server.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', dpop_jkt: key.jkt }, user);
    const code = back.searchParams.get('code')!;
    expect(code, back.href).toBeTruthy();
    for (const [what, dpop] of [['no proof', undefined], ['another key', proof(dpopKey(), 'POST', HTU)]] as const) {
      const res = await tokenPost(server, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...app }, { ...GATEWAY, ...(dpop ? { dpop } : {}) });
      expect(res.status, what).toBe(400);
      expect(res.body.error, what).toBe('invalid_grant');
    }
    const ok = await exchange(key, code);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.token_type).toBe('DPoP');
  });

  it('a client set to require DPoP (clients set-dpop) gets no token without a proof, and nothing is spent', async () => {
    const strict = await approvedClient(server, ['PROFILE_READ'], 'Strict App');
    expect((await clientsSetDpop(operator(server), strict.client_id, 'on')).dpop_bound_access_tokens).toBe(true);
    await expect(clientsSetDpop(operator(server), strict.client_id, 'maybe')).rejects.toThrow(/on.*off/);
    const key = dpopKey();
    const code = await codeFor(server, strict, user, 'PROFILE_READ');
    const fields = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...strict };
    const refused = await tokenPost(server, fields, GATEWAY);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    const issued = await tokenPost(server, fields, { ...GATEWAY, dpop: proof(key, 'POST', HTU) });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    expect(issued.body.token_type).toBe('DPoP');
    // Its refresh too, also on the other instance (whose fast path hands it over: the client requires DPoP).
    const refresh = { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token, ...strict };
    const noProof = await tokenPost({ url: other.url } as TestServer, refresh, GATEWAY);
    expect(noProof.status, JSON.stringify(noProof.body)).toBe(400);
    expect(noProof.body.error).toBe('invalid_grant');
    const refreshed = await tokenPost({ url: other.url } as TestServer, refresh, { ...GATEWAY, dpop: proof(key, 'POST', HTU) });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.token_type).toBe('DPoP');
    // Off again: a bearer token without a proof.
    expect((await clientsSetDpop(operator(server), strict.client_id, 'off')).dpop_bound_access_tokens).toBe(false);
    const plain = await tokenPost(server, { grant_type: 'authorization_code', code: await codeFor(server, strict, user, 'PROFILE_READ'), redirect_uri: REDIRECT, ...strict }, GATEWAY);
    expect(plain.status, JSON.stringify(plain.body)).toBe(200);
    expect(plain.body.token_type).toBe('bearer');
  });

  it('accepts a server nonce it offered', async () => {
    const key = dpopKey();
    const code = await codeFor(server, app, user, 'PROFILE_READ');
    const stale = await exchange(key, code, server, proof(key, 'POST', HTU, undefined, { iat: Math.floor(Date.now() / 1000) - 3600 }));
    const nonce = stale.headers.get('dpop-nonce')!;
    expect(nonce).toBeTruthy();
    // Any instance accepts it: the secret is derived from the shared cookie key.
    const res = await exchange(key, code, other, proof(key, 'POST', HTU, undefined, { nonce }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const wrong = await exchange(key, await codeFor(server, app, user, 'PROFILE_READ'), server, proof(key, 'POST', HTU, undefined, { nonce: 'not-ours' }));
    expect(wrong.body.error).toBe('use_dpop_nonce');
  });
});

describe('DPoP for every kind of client (redis)', () => {
  let server: TestServer;
  let docs: DocumentServer;
  let clientOf: ReturnType<typeof clientKinds>;
  beforeAll(async () => {
    [server, docs] = await Promise.all([startTestServer('redis', { CIMD_ALLOW_LOOPBACK: 'true', DYNAMIC_REGISTRATION: 'open' }), startDocumentServer()]);
    clientOf = clientKinds(server, docs);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), docs?.close()]);
  });

  it.for(KINDS)('%s: a refresh with a proof gets a bound token, usable with its proof only', async (kind) => {
    const client = await clientOf(kind);
    const tokens = await client.tokens();
    const key = dpopKey();
    const res = await tokenPost(server, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client.auth() }, { dpop: proof(key, 'POST', `${server.url}/v2/auth/oauth2/token`) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.token_type).toBe('DPoP');
    const token = res.body.access_token as string;
    expect((await getWith(`${server.url}/v2/me`, `DPoP ${token}`, proof(key, 'GET', `${server.url}/v2/me`, token))).status).toBe(200);
    expect((await getWith(`${server.url}/v2/me`, `Bearer ${token}`)).status).toBe(401);
  });

  // RFC 9449 5.2 for the kinds the registry does not hold: a document or registration that says
  // dpop_bound_access_tokens gets no token without a proof (nothing spent), and its refresh, which
  // the fast path hands over, needs a proof too.
  it.for(['metadata document', 'registration'] as const)('a %s saying dpop_bound_access_tokens gets no token without a proof, and a bound one with it', async (kind) => {
    const clientId = kind === 'metadata document'
      ? docs.agent(`/dpop-bound-${Date.now()}.json`, { dpop_bound_access_tokens: true })
      : await registerClient(server, { token_endpoint_auth_method: 'none', dpop_bound_access_tokens: true });
    const user = await newUser(server);
    const { code, verifier } = await agentCode(server.url, clientId, user, 'PROFILE_READ');
    const htu = `${server.url}/v2/auth/oauth2/token`;
    const fields = { grant_type: 'authorization_code', code, redirect_uri: AGENT_REDIRECT, code_verifier: verifier, client_id: clientId };
    const refused = await tokenPost(server, fields);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    const key = dpopKey();
    const issued = await tokenPost(server, fields, { dpop: proof(key, 'POST', htu) });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    expect(issued.body.token_type).toBe('DPoP');
    const refresh = { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token, client_id: clientId };
    const noProof = await tokenPost(server, refresh);
    expect(noProof.status, JSON.stringify(noProof.body)).toBe(400);
    expect(noProof.body.error).toBe('invalid_grant');
    const refreshed = await tokenPost(server, refresh, { dpop: proof(key, 'POST', htu) });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.token_type).toBe('DPoP');
    const token = refreshed.body.access_token as string;
    expect((await getWith(`${server.url}/v2/me`, `Bearer ${token}`)).status).toBe(401);
    expect((await getWith(`${server.url}/v2/me`, `DPoP ${token}`, proof(key, 'GET', `${server.url}/v2/me`, token))).status).toBe(200);
  });

  it('a registration whose dpop_bound_access_tokens is not a boolean is refused', async () => {
    const res = await fetch(`${server.url}/v2/auth/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [AGENT_REDIRECT], token_endpoint_auth_method: 'none', dpop_bound_access_tokens: 'yes' }),
    });
    const body = (await res.json()) as Record<string, string>;
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(body).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringMatching(/dpop_bound_access_tokens/) });
  });
});
