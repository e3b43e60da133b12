// The high-trust profile per client (issue 49 item 5; FAPI 2.0 Security Profile;
// docs/security.md#the-high-trust-profile): one switch (clients set-high-trust, the developer page)
// that holds a confidential client with keys to pushed requests, PKCE, private_key_jwt with the
// issuer as audience, DPoP-bound tokens and no bearer use; each request that falls short is
// refused naming what it lacks, with nothing issued or spent. Over real HTTP on Redis (what the
// profile decides is above storage; PAR, DPoP and keys have their own files on both stores).
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { newUser, operator, REDIRECT } from './support/fixtures.ts';
import { developerPages } from './support/developer-pages.ts';
import { authorize } from './support/oauth.ts';
import { Browser } from './support/browser.ts';
import { dpopKey, getWith, proof, tokenPost } from './support/dpop.ts';
import { admin } from './support/processes.ts';
import { expectRefusal } from './support/admin-cli.ts';
import type { TestUser } from './support/oauth.ts';
import { clientsCreate, clientsSetHighTrust, clientsSetKeys, clientsSetStatus } from '../src/admin/commands.ts';
import { clientsSetHighTrust as setHighTrustOfAnyKind } from '../src/admin/directory-commands.ts';
import { AGENT_REDIRECT, startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { registerClient } from './support/client-kinds.ts';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const PROFILE = 'this client is held to the high-trust profile (FAPI 2.0 Security Profile)';
const ENV = { CIMD_ALLOW_LOOPBACK: 'true', DYNAMIC_REGISTRATION: 'open', RATE_LIMIT_AUTH_FAILURES: '1000', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent' };
const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

interface KeyedClient {
  clientId: string;
  privateKey: KeyObject;
  kid: string;
  /** Where it is sent back to (a metadata document's agents use theirs). */
  redirectUri?: string;
}

describe('the high-trust profile (FAPI 2.0 Security Profile, per client)', () => {
  let server: TestServer;
  let user: TestUser;
  let issuer: string;
  let tokenEndpoint: string;
  let docs: DocumentServer;

  beforeAll(async () => {
    [server, docs] = await Promise.all([startTestServer('redis', ENV), startDocumentServer()]);
    user = await newUser(server);
    issuer = `${server.url}/v2/auth/oauth2`;
    tokenEndpoint = `${issuer}/token`;
  });
  afterAll(() => Promise.all([server?.close(), docs?.close()]));

  async function keyedClient(name: string, highTrust = true): Promise<KeyedClient> {
    const kid = randomUUID();
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwks = JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }] });
    const created = await clientsCreate(operator(server), { name, redirectUri: [REDIRECT], scope: ['PROFILE_READ'], auth: 'private_key_jwt', jwks });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    if (highTrust) await clientsSetHighTrust(operator(server), created.client_id, 'on');
    return { clientId: created.client_id, privateKey, kid };
  }

  /** The client's authentication fields: an assertion for `aud` (the issuer, as the profile wants). */
  function auth(client: KeyedClient, aud: unknown = issuer): Record<string, string> {
    const now = Math.floor(Date.now() / 1000);
    const input = `${part({ alg: 'ES256', typ: 'JWT', kid: client.kid })}.${part({ iss: client.clientId, sub: client.clientId, aud, jti: randomUUID(), iat: now, exp: now + 60 })}`;
    const signature = sign('sha256', Buffer.from(input), { key: client.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
    return { client_id: client.clientId, client_assertion_type: ASSERTION_TYPE, client_assertion: `${input}.${signature}` };
  }

  const pkce = () => {
    const verifier = randomBytes(32).toString('base64url');
    return { verifier, challenge: { code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' } };
  };
  const request = (extra: Record<string, string> = {}, redirectUri = REDIRECT) => ({ response_type: 'code', redirect_uri: redirectUri, scope: 'PROFILE_READ', state: 'st', ...extra });

  async function push(fields: Record<string, string>, headers: Record<string, string> = {}) {
    const res = await fetch(`${issuer}/par`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(fields).toString() });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }

  /** A pushed request, signed in and allowed: the code and its verifier. */
  async function code(client: KeyedClient) {
    const { verifier, challenge } = pkce();
    const pushed = await push({ ...auth(client), ...request(challenge, client.redirectUri) });
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    const back = await authorize(new Browser(), server.url, new URL(`${server.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: client.clientId, request_uri: pushed.body.request_uri })}`), user);
    // RFC 9207: the response names the issuer.
    expect(back.searchParams.get('iss')).toBe(issuer);
    return { code: back.searchParams.get('code')!, verifier };
  }

  it('the operator switch: only a confidential client with keys, which keeps its keys while held; shown and recorded', async () => {
    const ctx = operator(server);
    const pub = await clientsCreate(ctx, { name: 'Public', redirectUri: [REDIRECT], scope: ['PROFILE_READ'], public: true });
    await expect(clientsSetHighTrust(ctx, pub.client_id, 'on')).rejects.toThrow('a public client authenticates with nothing');
    const rs = await clientsCreate(ctx, { name: 'Gateway', resourceServer: true, scope: ['PROFILE_READ'] });
    await expect(clientsSetHighTrust(ctx, rs.client_id, 'on')).rejects.toThrow('a resource server obtains no tokens');
    const secretClient = await clientsCreate(ctx, { name: 'With a secret', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    await expect(clientsSetHighTrust(ctx, secretClient.client_id, 'on')).rejects.toThrow('authenticates with keys only (private_key_jwt)');
    await expect(clientsSetHighTrust(ctx, secretClient.client_id, 'yes')).rejects.toThrow('say "on"');
    const high = (id: string) => server.pg.db('oauth_clients').where('id', id).first('high_trust').then((r) => r.high_trust as boolean);
    for (const id of [pub.client_id, rs.client_id, secretClient.client_id]) expect(await high(id)).toBe(false);

    const keyed = await keyedClient('Keyed');
    expect(await high(keyed.clientId)).toBe(true);
    expect((await server.system.provider.Client.find(keyed.clientId))?.metadata()).toMatchObject({ high_trust: true, require_pushed_authorization_requests: true, dpop_bound_access_tokens: true, token_endpoint_auth_method: 'private_key_jwt' });
    await expect(clientsSetKeys(ctx, keyed.clientId, { none: true })).rejects.toThrow('turn it off first');
    const off = await clientsSetHighTrust(ctx, keyed.clientId, 'off');
    expect(off).toMatchObject({ high_trust: false, require_pushed_authorization_requests: false, dpop_bound_access_tokens: false });
    expect((await server.system.provider.Client.find(keyed.clientId))?.metadata()).toMatchObject({ require_pushed_authorization_requests: false, dpop_bound_access_tokens: false });
    const audit = await server.pg.db('audit_events').where({ action: 'client.high_trust_set', client_id: keyed.clientId }).orderBy('id').select('details');
    expect(audit.map((a) => a.details)).toEqual([{ from: false, to: true }, { from: true, to: false }]);
  });

  it('the operator script, as typed: set-high-trust on and off, shown by clients show; bad settings and other kinds of id refused in words', async () => {
    const env = { DATABASE_URL: server.pg.url, ...(server.redis ? { REDIS_URL: server.redis.url } : {}) };
    const client = await keyedClient('By script', false);
    const on = await admin(['--json', 'clients', 'set-high-trust', client.clientId, 'on'], env);
    expect(on.code, on.stderr).toBe(0);
    expect(JSON.parse(on.stdout)).toMatchObject({ client_id: client.clientId, high_trust: true, token_endpoint_auth_method: 'private_key_jwt' });
    expect(JSON.parse((await admin(['--json', 'clients', 'show', client.clientId], env)).stdout)).toMatchObject({ high_trust: true });
    expectRefusal(await admin(['--json', 'clients', 'set-high-trust', client.clientId, 'maybe'], env), /say "on"/);
    expectRefusal(await admin(['--json', 'clients', 'set-high-trust', 'https://agent.example/client.json', 'on'], env), /no client with id https:\/\/agent.example\/client.json has been seen/);
    expect(JSON.parse((await admin(['--json', 'clients', 'set-high-trust', client.clientId, 'off'], env)).stdout)).toMatchObject({ high_trust: false });
  });

  it('an authorization request sent without pushing it first is refused, naming PAR; without the switch the same request goes through', async () => {
    const client = await keyedClient('Held');
    const front = (id: string) => fetch(`${server.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: id, ...request(pkce().challenge) })}`, { redirect: 'manual' });
    const refused = new URL((await front(client.clientId)).headers.get('location')!);
    expect(refused.searchParams.get('error')).toBe('invalid_request');
    expect(refused.searchParams.get('error_description')).toBe(`${PROFILE}: its authorization requests must be pushed first (PAR, RFC 9126): POST the request to the pushed_authorization_request_endpoint, then send only client_id and the request_uri it answers`);
    const ordinary = await keyedClient('Not held', false);
    const passed = await front(ordinary.clientId);
    expect(passed.headers.get('location')).not.toContain('error=');
  });

  it('a pushed request without PKCE, an assertion for another audience, a secret instead of keys: each refused in words', async () => {
    const client = await keyedClient('Held');
    const noPkce = await push({ ...auth(client), ...request() });
    expect(noPkce).toMatchObject({ status: 400, body: { error: 'invalid_request', error_description: `${PROFILE}: its authorization requests need PKCE: a code_challenge with code_challenge_method=S256` } });
    const { challenge } = pkce();
    // The library takes the token endpoint's URL, or a list; FAPI 2.0 only the issuer, as a string.
    for (const aud of [tokenEndpoint, `${issuer}/par`, [issuer]]) {
      const wrongAud = await push({ ...auth(client, aud), ...request(challenge) });
      expect(wrongAud).toMatchObject({ status: 401, body: { error: 'invalid_client', error_description: `${PROFILE}: the client_assertion's aud must be the issuer identifier ${issuer}, as a string` } });
    }
    const basic = `Basic ${Buffer.from(`${client.clientId}:a-guessed-secret`).toString('base64')}`;
    const withSecret = await push(request(challenge), { authorization: basic });
    expect(withSecret).toMatchObject({ status: 401, body: { error: 'invalid_client', error_description: `${PROFILE}: it authenticates with private_key_jwt only: a client_assertion signed by one of its registered keys` } });
    // The same words at the other endpoints it authenticates at.
    for (const endpoint of ['introspect', 'revoke']) {
      const res = await fetch(`${issuer}/${endpoint}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic }, body: 'token=anything' });
      expect({ status: res.status, body: await res.json() }, endpoint).toMatchObject({ status: 401, body: { error: 'invalid_client', error_description: `${PROFILE}: it authenticates with private_key_jwt only: a client_assertion signed by one of its registered keys` } });
    }
    // Another client with keys, not held, may still name the token endpoint as its assertion's audience.
    const ordinary = await keyedClient('Not held', false);
    expect((await push({ ...auth(ordinary, tokenEndpoint), ...request(challenge) })).status).toBe(201);
  });

  it('the code for a DPoP-bound token only: without a proof refused naming DPoP, the code unspent; the token never works as Bearer, its refresh needs a proof', async () => {
    const client = await keyedClient('Held');
    const { code: issued, verifier } = await code(client);
    const exchange = { grant_type: 'authorization_code', code: issued, redirect_uri: REDIRECT, code_verifier: verifier };
    const noProof = await tokenPost(server, { ...exchange, ...auth(client) });
    expect(noProof).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: `${PROFILE}: its token requests need a DPoP proof (RFC 9449): a DPoP header signed by the key its tokens are bound to` } });

    const key = dpopKey();
    const tokens = await tokenPost(server, { ...exchange, ...auth(client) }, { dpop: proof(key, 'POST', tokenEndpoint) });
    expect(tokens.status).toBe(200);
    expect(tokens.body.token_type).toBe('DPoP');
    const me = `${server.url}/v2/me`;
    expect((await getWith(me, `DPoP ${tokens.body.access_token}`, proof(key, 'GET', me, tokens.body.access_token))).status).toBe(200);
    const asBearer = await getWith(me, `Bearer ${tokens.body.access_token}`);
    expect(asBearer.status).toBe(401);
    expect(asBearer.headers.get('www-authenticate')).toContain('DPoP');
    const check = `${server.url}/v2/auth/check`;
    const call = { 'x-original-method': 'GET', 'x-original-uri': '/v2/me' };
    expect((await getWith(check, `Bearer ${tokens.body.access_token}`, undefined, call)).status).toBe(401);

    const refresh = { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token };
    const refreshNoProof = await tokenPost(server, { ...refresh, ...auth(client) });
    expect(refreshNoProof).toMatchObject({ status: 400, body: { error_description: `${PROFILE}: its token requests need a DPoP proof (RFC 9449): a DPoP header signed by the key its tokens are bound to` } });
    const refreshed = await tokenPost(server, { ...refresh, ...auth(client) }, { dpop: proof(key, 'POST', tokenEndpoint) });
    expect(refreshed).toMatchObject({ status: 200, body: { token_type: 'DPoP' } });
    expect((await getWith(me, `DPoP ${refreshed.body.access_token}`, proof(key, 'GET', me, refreshed.body.access_token))).status).toBe(200);
    expect((await getWith(me, `Bearer ${refreshed.body.access_token}`)).status).toBe(401);
  });

  it('a metadata-document client an administrator holds to it: the same rules, the whole flow with keys and DPoP; its document then falling short is refused, naming why', async () => {
    const kid = randomUUID();
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwksUri = docs.serve('/held-agent-keys.json', { body: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }] } });
    const keyedDoc = { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: jwksUri, scope: 'PROFILE_READ' };
    const clientId = docs.agent('/held-agent.json', keyedDoc);
    const agent: KeyedClient = { clientId, privateKey, kid, redirectUri: AGENT_REDIRECT };
    const ctx = operator(server);
    // Not seen yet: nothing to mark. Seen once (a pushed request, as any of its requests), it can be.
    await expect(setHighTrustOfAnyKind(ctx, clientId, 'on')).rejects.toThrow(`no client with id ${clientId}`);
    const { challenge } = pkce();
    expect((await push({ ...auth(agent, tokenEndpoint), ...request(challenge, AGENT_REDIRECT) })).status).toBe(201);
    expect(await setHighTrustOfAnyKind(ctx, clientId, 'on')).toMatchObject({ client_id: clientId, kind: 'metadata_document', high_trust: true });
    expect((await server.system.provider.Client.find(clientId))?.metadata()).toMatchObject({ high_trust: true, require_pushed_authorization_requests: true, dpop_bound_access_tokens: true });

    // What the registry's high-trust clients meet: the issuer as audience, PAR, DPoP.
    const wrongAud = await push({ ...auth(agent, tokenEndpoint), ...request(challenge, AGENT_REDIRECT) });
    expect(wrongAud.body.error_description).toContain("the client_assertion's aud must be the issuer identifier");
    const front = await fetch(`${server.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: clientId, ...request(challenge, AGENT_REDIRECT) })}`, { redirect: 'manual' });
    expect(new URL(front.headers.get('location')!).searchParams.get('error_description')).toContain('its authorization requests must be pushed first');
    const { code: issued, verifier } = await code(agent);
    const exchange = { grant_type: 'authorization_code', code: issued, redirect_uri: AGENT_REDIRECT, code_verifier: verifier };
    expect((await tokenPost(server, { ...exchange, ...auth(agent) })).body.error_description).toContain('its token requests need a DPoP proof');
    const tokens = await tokenPost(server, { ...exchange, ...auth(agent) }, { dpop: proof(dpopKey(), 'POST', tokenEndpoint) });
    expect(tokens).toMatchObject({ status: 200, body: { token_type: 'DPoP' } });
    expect((await getWith(`${server.url}/v2/me`, `Bearer ${tokens.body.access_token}`)).status).toBe(401);

    // Its document now says it authenticates with nothing: refused with the reason, not a 500.
    docs.agent('/held-agent.json', { ...keyedDoc, token_endpoint_auth_method: 'none', jwks_uri: undefined });
    server.system.cimd.forget();
    const fallen = await fetch(`${server.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: clientId, ...request(challenge, AGENT_REDIRECT) })}`, { redirect: 'manual' });
    expect(fallen.status).toBe(400);
    expect(await fallen.text()).toContain('needs private_key_jwt client authentication, and it uses none');
    // An agent whose document (as last seen) authenticates with nothing cannot be marked.
    const publicAgent = docs.agent('/public-agent.json', { scope: 'PROFILE_READ' });
    expect((await fetch(`${server.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: publicAgent, ...request(challenge, AGENT_REDIRECT) })}`, { redirect: 'manual' })).status).toBe(303);
    await expect(setHighTrustOfAnyKind(ctx, publicAgent, 'on')).rejects.toThrow('its document (as last fetched) says token_endpoint_auth_method none');
    expect(await setHighTrustOfAnyKind(ctx, clientId, 'off')).toMatchObject({ high_trust: false });
  });

  it('a self-registered client (RFC 7591) with keys an administrator holds to it: PAR and DPoP required, the flow with both; one registered without keys cannot be marked', async () => {
    const kid = randomUUID();
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const clientId = await registerClient(server, { client_name: 'Registered keyed agent', token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }] }, scope: 'PROFILE_READ' });
    const agent: KeyedClient = { clientId, privateKey, kid, redirectUri: AGENT_REDIRECT };
    const ctx = operator(server);
    expect(await setHighTrustOfAnyKind(ctx, clientId, 'on')).toMatchObject({ client_id: clientId, kind: 'registered', high_trust: true });
    const { challenge } = pkce();
    const front = await fetch(`${server.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: clientId, ...request(challenge, AGENT_REDIRECT) })}`, { redirect: 'manual' });
    expect(new URL(front.headers.get('location')!).searchParams.get('error_description')).toContain('its authorization requests must be pushed first');
    const { code: issued, verifier } = await code(agent);
    const exchange = { grant_type: 'authorization_code', code: issued, redirect_uri: AGENT_REDIRECT, code_verifier: verifier };
    expect((await tokenPost(server, { ...exchange, ...auth(agent) })).body.error_description).toContain('its token requests need a DPoP proof');
    expect(await tokenPost(server, { ...exchange, ...auth(agent) }, { dpop: proof(dpopKey(), 'POST', tokenEndpoint) })).toMatchObject({ status: 200, body: { token_type: 'DPoP' } });

    const keyless = await registerClient(server, { client_name: 'Registered public agent', token_endpoint_auth_method: 'none', scope: 'PROFILE_READ' });
    await expect(setHighTrustOfAnyKind(ctx, keyless, 'on')).rejects.toThrow('its registration says token_endpoint_auth_method none');
    expect(await setHighTrustOfAnyKind(ctx, clientId, 'off')).toMatchObject({ high_trust: false });
  });

  describe('on the developer page', () => {
    const BASE = '/settings/developer/oauth-clients';
    const { url, signIn, post } = developerPages(() => server.url);

    it('the owner turns it on once the app has keys, and off; others cannot; without keys it is refused in words', async () => {
      const [dev, stranger] = await Promise.all([newUser(server, 'Dev'), newUser(server, 'Stranger')]);
      const browser = await signIn(dev);
      // A confidential app's secret is shown once, on the answer itself.
      expect((await post(browser, BASE, { name: 'High App', kind: 'confidential', redirect_uris: REDIRECT, scope: ['PROFILE_READ'] })).status).toBe(200);
      const id = (await server.pg.db('oauth_clients').where('name', 'High App').first('id')).id as string;
      const path = `${BASE}/${id}`;
      const setting = async () => (await server.pg.db('oauth_clients').where('id', id).first('high_trust')).high_trust as boolean;
      const page = await browser.get(url(path));
      expect(page.$('form.high-trust input[name=high_trust]').is(':disabled')).toBe(true);
      expect(page.$('#high-trust-needs-keys').text()).toContain('Register your app');

      // Posted anyway (a stale page, a crafted form): refused, nothing changed.
      const refused = await post(browser, `${path}/high-trust`, { high_trust: 'on' });
      expect(refused.status).toBe(303);
      expect((await browser.get(url(path))).html).toContain('authenticates with keys only (private_key_jwt)');
      expect(await setting()).toBe(false);

      const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const jwks = JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' }] });
      expect((await post(browser, `${path}/keys`, { key_source: 'jwks', jwks })).status).toBe(303);
      expect((await post(browser, `${path}/high-trust`, { high_trust: 'on' })).status).toBe(303);
      expect(await setting()).toBe(true);
      const shown = await browser.get(url(path));
      expect(shown.$('form.high-trust input[name=high_trust]').is(':checked')).toBe(true);
      expect(shown.html).toContain('High-trust profile on');
      expect((await server.system.provider.Client.find(id))?.metadata()).toMatchObject({ high_trust: true, dpop_bound_access_tokens: true, require_pushed_authorization_requests: true });

      expect((await post(browser, `${path}/high-trust`, {}, 'not-the-token')).status).toBe(403);
      expect((await post(await signIn(stranger), `${path}/high-trust`, {})).status).toBe(404);
      expect(await setting()).toBe(true);
      expect((await post(browser, `${path}/high-trust`, {})).status).toBe(303);
      expect(await setting()).toBe(false);
    });
  });
});
