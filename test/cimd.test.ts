// Client ID metadata documents (issue 36 point 3; docs/agents.md): a client_id that is a URL is
// fetched under the address rule and used in a limited tier until an administrator reviews it.
// The documents are served by a real HTTP server on 127.0.0.1 (CIMD_ALLOW_LOOPBACK=true).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { approvedClient, newUser, operator, REDIRECT } from './support/fixtures.ts';
import { Browser, type Page } from './support/browser.ts';
import { authorizeUrl, getMe, reachConsent, tokenRequest } from './support/oauth.ts';
import { AGENT_REDIRECT, agentCode, agentTokens, logSink, pkcePair, startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { blockCimdHost, decideCimdClient, unblockCimdHost } from '../src/review/review.ts';
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { REFUSAL_KEPT_MS, UNUSABLE_DOCUMENT } from '../src/cimd/clients.ts';
import { testClock } from './support/clock.ts';

/** A client assertion (RFC 7523) signed with ES256, by hand: header.payload.signature. */
function clientAssertion(privateKey: ReturnType<typeof generateKeyPairSync>['privateKey'], clientId: string, audience: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const input = `${part({ alg: 'ES256', typ: 'JWT', kid: 'k1' })}.${part({ iss: clientId, sub: clientId, aud: audience, jti: randomUUID(), iat: now, exp: now + 60 })}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

// Refused URL client_ids count as failed authentications, each of its own id and all of this
// address (src/oauth/rate-limits.ts): this file makes more of them than the limits let through.
// The same for fetches of documents never seen (src/cimd/fetch-limits.ts: test/cimd-fetch-limits.test.ts).
const FETCHES = { CIMD_FETCHES_PER_ADDRESS_PER_MINUTE: '1000', CIMD_FETCHES_PER_ADDRESS_PER_HOUR: '1000', CIMD_FETCHES_PER_SITE_PER_MINUTE: '1000' };
const LOOPBACK = { CIMD_ALLOW_LOOPBACK: 'true', CIMD_MAX_USERS: '2', RATE_LIMIT_AUTH_FAILURES: '1000', ...FETCHES };
const OTHER_REDIRECT = 'https://agent.example.com/other-callback';

/** The authorization request of a metadata-document client, as a browser sends it (no sign-in needed to be refused). */
async function authorizationPage(server: TestServer, clientId: string, extra: Record<string, string | undefined> = {}): Promise<Page> {
  const { challenge } = pkcePair();
  return new Browser().get(authorizeUrl(server.url, { client_id: clientId, redirect_uri: AGENT_REDIRECT, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256', ...extra }));
}

/** Refused as an unknown client is: the error page, status 400, redirecting nowhere, the reason in its details. */
function expectRefusedClient(page: Page, reason: RegExp) {
  expect(page.status, page.html.slice(0, 300)).toBe(400);
  expect(page.location).toBeUndefined();
  expect(page.html).toContain('invalid_client');
  expect(page.$('body').text()).toMatch(reason);
}

/** The token endpoint's answer for a code-less exchange: the client is judged first. */
async function tokenEndpointSays(server: TestServer, clientId: string) {
  return tokenRequest(server.url, { grant_type: 'authorization_code', code: 'nothing', redirect_uri: AGENT_REDIRECT, client_id: clientId, code_verifier: 'x'.repeat(43) });
}

describe('client ID metadata documents (redis)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let docs: DocumentServer;
  const logged = logSink();
  // Moved past the refusal memory by the test of it, and back after.
  const clock = testClock();
  beforeAll(async () => {
    [server, docs] = await Promise.all([startTestServer(storage, LOOPBACK, { log: logged.log, clock }), startDocumentServer()]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), docs?.close()]);
  });

  it('metadata says client_id_metadata_document_supported', async () => {
    const res = await fetch(`${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`);
    expect((await res.json()) as object).toMatchObject({ client_id_metadata_document_supported: true });
  });

  it('an agent authorizes with its document URL as client_id, gets user-scoped tokens and refreshes them; it is recorded for review with its host', async () => {
    const clientId = docs.agent('/agent-basic.json');
    const user = await newUser(server);
    const tokens = await agentTokens(server.url, clientId, user, 'PROFILE_READ');
    expect(tokens.scope).toBe('PROFILE_READ');
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);
    const refreshed = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    const row = await server.system.db('cimd_clients').where('client_id', clientId).first();
    expect(row).toMatchObject({ host: new URL(docs.url).host, status: 'unreviewed', name: 'Helpful Agent', redirect_uris: [AGENT_REDIRECT] });
    // Fetched once: the document is kept for its cache time (at least 60 s).
    expect(docs.hits.get('/agent-basic.json')).toBe(1);
  });

  it('the consent page says plainly that the app is not reviewed, and the host it comes from', async () => {
    const clientId = docs.agent('/agent-consent.json');
    const { challenge } = pkcePair();
    const page = await reachConsent(new Browser(), server.url, { client_id: clientId, redirect_uri: AGENT_REDIRECT, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }, await newUser(server));
    const notice = page.$('.consent-unreviewed').text();
    expect(notice).toContain('This app has not been reviewed');
    expect(notice).toContain(new URL(docs.url).host);
  });

  it('unreviewed: its refresh tokens live at most 7 days after consent; approved: as any client’s (30 days)', async () => {
    const clientId = docs.agent('/agent-ttl.json', { scope: 'PROFILE_READ ORG_BOOKING_READ' });
    const user = await newUser(server);
    const lifetime = async (refreshToken: string) => {
      const token = await server.system.provider.RefreshToken.find(refreshToken);
      return token!.exp! - token!.iat!;
    };
    const unreviewed = await agentTokens(server.url, clientId, user, 'PROFILE_READ');
    expect(await lifetime(unreviewed.refresh_token)).toBeLessThanOrEqual(7 * 86_400);
    const refreshed = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: unreviewed.refresh_token, client_id: clientId });
    expect(await lifetime(refreshed.body.refresh_token as string)).toBeLessThanOrEqual(7 * 86_400);
    await decideCimdClient(operator(server), clientId, 'approved', { actor: 'operator:test' });
    const approved = await agentTokens(server.url, clientId, await newUser(server), 'PROFILE_READ ORG_BOOKING_READ');
    expect(approved.scope).toBe('PROFILE_READ ORG_BOOKING_READ');
    expect(await lifetime(approved.refresh_token)).toBe(30 * 86_400);
  });

  it('unreviewed: asking for ORG_ or TEAM_ scopes is invalid_scope (redirected to the app, with a plain reason)', async () => {
    const clientId = docs.agent('/agent-org.json', { scope: 'PROFILE_READ ORG_BOOKING_READ TEAM_BOOKING_READ' });
    for (const scope of ['PROFILE_READ ORG_BOOKING_READ', 'TEAM_BOOKING_READ']) {
      const page = await authorizationPage(server, clientId, { scope });
      expect(page.status).toBe(303);
      const back = new URL(page.location!);
      expect(back.origin + back.pathname).toBe(AGENT_REDIRECT);
      expect(back.searchParams.get('error')).toBe('invalid_scope');
      expect(back.searchParams.get('error_description')).toMatch(/not been reviewed.*TEAM_ or ORG_/);
    }
  });

  it('a request without scope asks for the scope the document declares (RFC 6749 3.3): the consent page, the grant, the token and its refresh say what an explicit request gets', async () => {
    const clientId = docs.agent('/agent-default-scope.json', { scope: 'PROFILE_READ BOOKING_READ' });
    const consentScopes = async (scope: string | undefined) => {
      const { challenge } = pkcePair();
      const page = await reachConsent(new Browser(), server.url, { client_id: clientId, redirect_uri: AGENT_REDIRECT, scope, state: 's', code_challenge: challenge, code_challenge_method: 'S256' }, await newUser(server));
      expect(page.status, page.html.slice(0, 300)).toBe(200);
      return page.$('.scopes li').map((_i, li) => page.$(li).text().trim()).get();
    };
    const explicitPage = await consentScopes('PROFILE_READ BOOKING_READ');
    expect(explicitPage).toHaveLength(2);
    expect(await consentScopes(undefined)).toEqual(explicitPage);

    const omitted = await agentTokens(server.url, clientId, await newUser(server), undefined);
    const explicit = await agentTokens(server.url, clientId, await newUser(server), 'PROFILE_READ BOOKING_READ');
    expect(omitted.scope).toBe('PROFILE_READ BOOKING_READ');
    expect(omitted.scope).toBe(explicit.scope);
    expect((await getMe(server.url, omitted.access_token)).status).toBe(200);
    const refreshed = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: omitted.refresh_token, client_id: clientId });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.scope).toBe('PROFILE_READ BOOKING_READ');
  });

  it('a request without scope: an unreviewed agent whose document declares TEAM_/ORG_ scopes is refused as its explicit request is; none declared, or a registry client, is refused as before', async () => {
    const refusal = async (page: Page) => {
      expect(page.status, page.html.slice(0, 300)).toBe(303);
      const back = new URL(page.location!);
      const param = (name: string) => back.searchParams.get(name);
      return { to: back.origin + back.pathname, error: param('error'), error_description: param('error_description'), scope: param('scope') };
    };
    const wide = docs.agent('/agent-default-wide.json', { scope: 'PROFILE_READ TEAM_BOOKING_READ' });
    const omitted = await refusal(await authorizationPage(server, wide, { scope: undefined }));
    expect(omitted).toEqual(await refusal(await authorizationPage(server, wide, { scope: 'PROFILE_READ TEAM_BOOKING_READ' })));
    expect(omitted).toMatchObject({ to: AGENT_REDIRECT, error: 'invalid_scope', scope: 'TEAM_BOOKING_READ' });
    expect(omitted.error_description).toMatch(/not been reviewed.*TEAM_ or ORG_/);

    const undeclared = docs.agent('/agent-default-none.json');
    expect(await refusal(await authorizationPage(server, undeclared, { scope: undefined }))).toMatchObject({ to: AGENT_REDIRECT, error: 'invalid_scope', error_description: 'the scope parameter is required' });

    const registry = await approvedClient(server, ['PROFILE_READ']);
    const page = await new Browser().get(authorizeUrl(server.url, { client_id: registry.client_id, redirect_uri: REDIRECT, state: 's' }));
    expect(await refusal(page)).toMatchObject({ to: REDIRECT, error: 'invalid_scope', error_description: 'the scope parameter is required' });
  });

  it(`unreviewed: at most CIMD_MAX_USERS (2) users; the next one hears access_denied with a plain reason, those in keep access`, async () => {
    const clientId = docs.agent('/agent-users.json');
    const [first, second, third] = await Promise.all([newUser(server), newUser(server), newUser(server)]);
    await agentTokens(server.url, clientId, first, 'PROFILE_READ');
    await agentTokens(server.url, clientId, second, 'PROFILE_READ');
    const { challenge } = pkcePair();
    const page = await reachConsent(new Browser(), server.url, { client_id: clientId, redirect_uri: AGENT_REDIRECT, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }, third);
    expect(page.status).toBe(303);
    const back = new URL(page.location!);
    expect(back.origin + back.pathname).toBe(AGENT_REDIRECT);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('error_description')).toBe('This app has not been reviewed yet and already has as many users as an unreviewed app may have (2). Try again once it has been reviewed.');
    // A user who already has access may authorize again.
    await agentTokens(server.url, clientId, first, 'PROFILE_READ');
  });

  it('private_key_jwt: the client authenticates with a key from its jwks_uri, fetched under the same rules', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keys = docs.serve('/agent-keys.json', { body: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' }] } });
    const clientId = docs.agent('/agent-pkjwt.json', { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: keys });
    const { code, verifier } = await agentCode(server.url, clientId, await newUser(server), 'PROFILE_READ');
    const audience = `${server.url}/v2/auth/oauth2/token`;
    const assertion = { client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer' };
    const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: AGENT_REDIRECT, code_verifier: verifier, ...assertion, client_assertion: clientAssertion(privateKey, clientId, audience) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const refused = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: res.body.refresh_token as string, ...assertion, client_assertion: clientAssertion(other, clientId, audience) });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_client');
  });

  it('a document that changes: a code whose redirect_uri the document no longer lists is not exchanged (invalid_grant)', async () => {
    let redirects = [AGENT_REDIRECT, OTHER_REDIRECT];
    const clientId = docs.serve('/agent-changes.json', (url) => ({ body: { client_id: url, client_name: 'Changing Agent', redirect_uris: redirects, token_endpoint_auth_method: 'none' } }));
    const user = await newUser(server);
    const { code, verifier } = await agentCode(server.url, clientId, user, 'PROFILE_READ');
    redirects = [OTHER_REDIRECT];
    // Its cache time over (as after 60 s or its max-age): read again at the token request.
    server.system.cimd.forget();
    const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: AGENT_REDIRECT, client_id: clientId, code_verifier: verifier });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_grant', error_description: 'the redirect_uri of this code is no longer listed in the client_id metadata document' });
    expect(docs.hits.get('/agent-changes.json')).toBe(2);
  });

  describe('bad documents: invalid_client, the same answer for every failed fetch (its reason in the log), the reason for a URL refused before fetching; the error page at authorization (no redirect); never a 500', () => {
    const cases: Array<[string, (d: DocumentServer) => string, RegExp]> = [
      ['too large (over 5 KB)', (d) => d.agent('/too-large.json', { client_name: 'x'.repeat(90), padding: 'y'.repeat(6000) }), /larger than 5120 bytes/],
      ['too large without Content-Length (chunked)', (d) => d.serve('/chunked.json', (url) => ({ body: JSON.stringify({ client_id: url, padding: 'z'.repeat(6000) }), headers: { 'transfer-encoding': 'chunked' } })), /larger than 5120 bytes/],
      ['a redirect (not followed)', (d) => { d.agent('/redirect-target.json'); return d.serve('/redirects.json', { status: 302, headers: { location: `${d.url}/redirect-target.json` } }); }, /redirect \(302\), which is not followed/],
      ['another client_id than its URL', (d) => d.serve('/disagrees.json', { body: { client_id: 'https://elsewhere.example/doc.json', redirect_uris: [AGENT_REDIRECT], token_endpoint_auth_method: 'none' } }), /another client_id than its own URL/],
      ['no redirect URIs', (d) => d.agent('/no-redirects.json', { redirect_uris: [] }), /must list its redirect_uris/],
      ['a shared-secret method', (d) => d.agent('/secret.json', { token_endpoint_auth_method: 'client_secret_basic' }), /token_endpoint_auth_method "none"/],
      ['dpop_bound_access_tokens not a boolean', (d) => d.agent('/dpop-bound.json', { dpop_bound_access_tokens: 'yes' }), /dpop_bound_access_tokens true or false/],
      ['private_key_jwt without jwks_uri', (d) => d.agent('/pkjwt.json', { token_endpoint_auth_method: 'private_key_jwt' }), /https jwks_uri/],
      ['not JSON', (d) => d.serve('/not-json.json', { body: '<html>hello</html>' }), /is not JSON/],
      ['not found', (d) => `${d.url}/missing.json`, /status 404/],
      ['no answer within 3 seconds', (d) => d.serve('/hangs.json', { hang: true }), /no answer within 3 seconds/],
      ['nobody listening', () => 'http://127.0.0.1:9/nobody.json', /the connection failed/],
      ['a URL without a path', (d) => `${d.url}/`, /must have a path/],
      ['an unparsable URL', () => 'https://[::1/doc.json', /not a URL/],
      ['a query in the URL', (d) => `${d.agent('/query.json')}?x=1`, /must not have a query/],
    ];
    // Refused before anything is fetched: the URL itself says why.
    const urlRefusals = ['a URL without a path', 'an unparsable URL', 'a query in the URL'];
    // At once: each case has a document of its own, and one of them waits out the 3-s fetch timeout.
    it.concurrent.for(cases)('%s', async ([_name, make, reason], { expect }) => {
      const clientId = make(docs);
      const answered = urlRefusals.includes(_name) ? reason : new RegExp(UNUSABLE_DOCUMENT);
      expectRefusedClient(await authorizationPage(server, clientId), answered);
      const token = await tokenEndpointSays(server, clientId);
      expect(token.status).toBe(400);
      expect(token.body.error).toBe('invalid_client');
      expect(String(token.body.error_description)).toMatch(answered);
      if (!urlRefusals.includes(_name)) {
        expect(token.body.error_description).toBe(UNUSABLE_DOCUMENT);
        expect(logged.reasonFor(clientId)).toEqual([expect.stringMatching(reason)]);
      }
      if (_name.startsWith('a redirect')) expect(docs.hits.get('/redirect-target.json')).toBeUndefined();
    });
  });

  it('a refused document is not fetched again for 10 seconds: requests naming it meanwhile get the same refusal', async () => {
    const clientId = docs.serve('/refused-once.json', { status: 500 });
    for (let i = 0; i < 3; i++) expectRefusedClient(await authorizationPage(server, clientId), new RegExp(UNUSABLE_DOCUMENT));
    expect((await tokenEndpointSays(server, clientId)).body).toEqual({ error: 'invalid_client', error_description: UNUSABLE_DOCUMENT });
    expect(docs.hits.get('/refused-once.json')).toBe(1);
    expect(logged.reasonFor(clientId)).toEqual([expect.stringMatching(/status 500/)]);
  });

  it('a refused document is fetched again once the refusal memory has passed: fixed, it is used', async () => {
    const path = '/refused-then-fixed.json';
    const clientId = docs.serve(path, { status: 500 });
    expectRefusedClient(await authorizationPage(server, clientId), new RegExp(UNUSABLE_DOCUMENT));
    docs.agent(path);
    try {
      clock.advance(REFUSAL_KEPT_MS - 1000);
      expectRefusedClient(await authorizationPage(server, clientId), new RegExp(UNUSABLE_DOCUMENT));
      expect(docs.hits.get(path)).toBe(1);
      clock.advance(1000);
      const page = await authorizationPage(server, clientId);
      expect(docs.hits.get(path)).toBe(2);
      expect(page.status, page.html.slice(0, 300)).not.toBe(400);
      expect(page.html).not.toContain('invalid_client');
    } finally {
      clock.reset();
    }
  });

  describe('administrators decide', () => {
    let other: DocumentServer;
    beforeAll(async () => {
      other = await startDocumentServer();
    });
    afterAll(() => other?.close());

    it('reject: invalid_client from then on, its tokens revoked, nothing fetched for it again', async () => {
      const clientId = docs.agent('/agent-rejected.json');
      const tokens = await agentTokens(server.url, clientId, await newUser(server), 'PROFILE_READ');
      await decideCimdClient(operator(server), clientId, 'rejected', { actor: 'operator:test', reason: 'spam' });
      expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
      server.system.cimd.forget();
      const hits = docs.hits.get('/agent-rejected.json');
      expectRefusedClient(await authorizationPage(server, clientId), /rejected by an administrator/);
      const refresh = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId });
      expect(refresh.body, JSON.stringify(refresh.body)).toMatchObject({ error: 'invalid_client' });
      expect(docs.hits.get('/agent-rejected.json')).toBe(hits);
      expect(await server.system.db('user_grants').where('client_id', clientId)).toEqual([]);
    });

    it('block a host: every client from it refused, on any port, now and later (nothing fetched), tokens revoked; unblock', async () => {
      const seen = other.agent('/seen.json');
      const tokens = await agentTokens(server.url, seen, await newUser(server), 'PROFILE_READ');
      // Named with the port of one server, as before: the block is of the address, on every port.
      const { host } = await blockCimdHost(operator(server), new URL(other.url).host, { actor: 'operator:test' });
      expect(host).toBe('127.0.0.1');
      expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
      const later = other.agent('/later.json');
      const elsewhere = docs.agent('/other-port.json');
      const [connections, docsConnections] = [other.connections(), docs.connections()];
      expectRefusedClient(await authorizationPage(server, seen), /apps from 127\.0\.0\.1 are blocked/);
      expectRefusedClient(await authorizationPage(server, later), /are blocked/);
      // The same address on another port is no other app: blocked too, nothing fetched.
      expectRefusedClient(await authorizationPage(server, elsewhere), /apps from 127\.0\.0\.1 are blocked/);
      expect([other.connections(), docs.connections()]).toEqual([connections, docsConnections]);
      await unblockCimdHost(operator(server), host, { actor: 'operator:test' });
      expect((await authorizationPage(server, later)).status).toBe(303);
      expect((await authorizationPage(server, elsewhere)).status).toBe(303);
    });
  });
});

describe('where documents may come from (CIMD_ALLOW_LOOPBACK off): nothing is fetched from a private or loopback address', () => {
  let server: TestServer;
  let docs: DocumentServer;
  // docs.example.test resolves to the loopback; rebinding.example.test to a public address first
  // (the check before connecting), then to the loopback (the connection's own lookup).
  let rebindingLookups = 0;
  const logged = logSink();
  beforeAll(async () => {
    docs = await startDocumentServer();
    server = await startTestServer('sql', { RATE_LIMIT_AUTH_FAILURES: '1000', ...FETCHES }, {
      log: logged.log,
      cimdResolve: async (name) => {
        if (name === 'docs.example.test') return [{ address: '127.0.0.1', family: 4 }];
        if (name === 'rebinding.example.test') return [{ address: rebindingLookups++ === 0 ? '93.184.215.14' : '127.0.0.1', family: 4 }];
        if (name === 'private.example.test') return [{ address: '10.0.0.7', family: 4 }];
        throw new Error('ENOTFOUND');
      },
    });
  });
  afterAll(async () => {
    await Promise.all([server?.close(), docs?.close()]);
  });

  const port = () => new URL(docs.url).port;
  it.each([
    ['http on the loopback', () => docs.agent('/a.json'), /must use https/],
    ['an https loopback address', () => `https://127.0.0.1:${port()}/a.json`, /local or private address/],
    ['an IPv4-mapped loopback address', () => `https://[::ffff:7f00:1]:${port()}/a.json`, /local or private address/],
    ['a name resolving to the loopback', () => `https://docs.example.test:${port()}/a.json`, /local or private address/],
    ['a name resolving to a private address', () => `https://private.example.test:${port()}/a.json`, /local or private address/],
    ['a name that rebinds to the loopback between the check and the connection', () => `https://rebinding.example.test:${port()}/a.json`, /local or private address/],
    ['localhost', () => `https://localhost:${port()}/a.json`, /local name/],
  ])('%s: invalid_client, and the listener on the loopback gets no connection', async (_name, make, reason) => {
    const before = docs.connections();
    const clientId = make();
    // Refused by the URL rule (http): said; refused by where it leads (an answer of DNS): the same
    // answer as any failed fetch, the reason in the log.
    const answered = _name.startsWith('http on') ? reason : new RegExp(UNUSABLE_DOCUMENT);
    expectRefusedClient(await authorizationPage(server, clientId), answered);
    const token = await tokenEndpointSays(server, clientId);
    expect(token.body).toMatchObject({ error: 'invalid_client', error_description: expect.stringMatching(answered) });
    if (!_name.startsWith('http on')) expect(logged.reasonFor(clientId)).toEqual([expect.stringMatching(reason)]);
    expect(docs.connections()).toBe(before);
  });
});

describe('CIMD_ENABLED=false', () => {
  let server: TestServer;
  let docs: DocumentServer;
  beforeAll(async () => {
    [server, docs] = await Promise.all([startTestServer('sql', { CIMD_ENABLED: 'false', CIMD_ALLOW_LOOPBACK: 'true' }), startDocumentServer()]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), docs?.close()]);
  });

  it('metadata says false, and a URL client_id is an unknown client (nothing fetched)', async () => {
    const res = await fetch(`${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`);
    expect((await res.json()) as object).toMatchObject({ client_id_metadata_document_supported: false });
    const clientId = docs.agent('/off.json');
    expectRefusedClient(await authorizationPage(server, clientId), /client is invalid/);
    expect(docs.connections()).toBe(0);
  });
});
