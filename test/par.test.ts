// Pushed authorization requests (RFC 9126; docs/par.md), on both stores: a client authenticates at
// the PAR endpoint as at the token endpoint and gets a request_uri; the browser carries only that
// and client_id. A request_uri works once (across instances, however long the sign-in takes) and
// for 60 seconds; a client may require pushed requests (clients set-par, the developer page);
// bad pushes are refused with the right error, nothing stored, never a 500.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { copyMigratedDataDir } from './support/embedded-template.ts';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { developerPages } from './support/developer-pages.ts';
import { anotherInstance, startInstance, startTestServer, type AppInstance, type Storage, type TestServer } from './support/server.ts';
import { approvedClient, newUser, operator, REDIRECT, type TestClient } from './support/fixtures.ts';
import { clientsCreate, clientsSetPar, clientsSetStatus } from '../src/admin/commands.ts';
import { createClient } from '../src/clients/service.ts';
import { authorize, reachConsent, tokenRequest, type TestUser } from './support/oauth.ts';
import { Browser, type Page } from './support/browser.ts';
import { clientKinds, KINDS } from './support/client-kinds.ts';
import { AGENT_REDIRECT, startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { PAR_REQUIRED_TEXT, REQUEST_URI_TEXT } from '../src/oauth/error-descriptions.ts';
import { PUSHED_REQUEST_TTL } from '../src/seams/oidc-provider.ts';
import { dpopKey, proof, tokenPost } from './support/dpop.ts';
import { admin } from './support/processes.ts';
import { expectRefusal } from './support/admin-cli.ts';
import { eventually } from './support/eventually.ts';

const URN = 'urn:ietf:params:oauth:request_uri:';
const parUrl = (at: { url: string }) => `${at.url}/v2/auth/oauth2/par`;

interface Answer {
  status: number;
  body: Record<string, any>;
  headers: Headers;
}

/** A POST to the PAR endpoint: form fields, optionally with HTTP Basic client authentication. */
async function push(at: { url: string }, fields: Record<string, string>, { basic, body }: { basic?: TestClient; body?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (basic) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(basic.client_id)}:${encodeURIComponent(basic.client_secret)}`).toString('base64')}`;
  const res = await fetch(parUrl(at), { method: 'POST', headers, body: body ?? new URLSearchParams(fields).toString() });
  const text = await res.text();
  let parsed: Record<string, any>;
  try {
    parsed = JSON.parse(text) as Record<string, any>;
  } catch {
    parsed = { text };
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

const authorizeWith = (at: { url: string }, clientId: string, requestUri: string) => new URL(`${at.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: clientId, request_uri: requestUri })}`);

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Allow on a consent page already reached: the page the browser lands on after (the redirect to the client, or an error). */
async function allow(browser: Browser, consent: Page, base: string): Promise<Page> {
  const afterAllow = await browser.submit(consent, 'button:contains("Allow")');
  expect(afterAllow.status, afterAllow.html.slice(0, 300)).toBe(303);
  return browser.follow(afterAllow.location!, base);
}

/** The pushed requests stored now (either store), to show a refused push stored nothing. */
async function storedPushes(server: TestServer): Promise<number> {
  if (server.redis) return (await server.redis.redis.keys(`${server.redis.prefix}PushedAuthorizationRequest:*`)).length;
  return Number((await server.pg.db('oidc_models').where('model', 'PushedAuthorizationRequest').count<{ count: string }[]>('* as count'))[0]!.count);
}

/** Date.now() as if it were `ms` earlier, for what `during` does: what the library and the stores read. */
async function earlier<T>(ms: number, during: () => Promise<T>): Promise<T> {
  const real = Date.now.bind(Date);
  const spy = vi.spyOn(Date, 'now').mockImplementation(() => real() - ms);
  try {
    return await during();
  } finally {
    spy.mockRestore();
  }
}

describe.each<Storage>(['redis', 'sql'])('pushed authorization requests (%s)', (storage) => {
  let server: TestServer;
  let other: AppInstance;
  let app: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    server = await startTestServer(storage);
    other = await anotherInstance(server);
    app = await approvedClient(server, ['PROFILE_READ', 'BOOKING_READ']);
    user = await newUser(server);
  });
  afterAll(async () => {
    await other?.close();
    await server?.close();
  });
  afterEach(() => vi.restoreAllMocks());

  const request = (extra: Record<string, string> = {}) => ({ response_type: 'code', redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 'st', ...extra });

  it('advertises its endpoint in the metadata, one spelling, POST only', async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`)).json()) as Record<string, unknown>;
    expect(metadata.pushed_authorization_request_endpoint).toBe(parUrl(server));
    // Server-wide it is not required: per client.
    expect(metadata.require_pushed_authorization_requests).toBeUndefined();
    const get = await fetch(parUrl(server));
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(((await get.json()) as { error: string }).error).toBe('invalid_request');
    for (const spelling of ['/v2/auth/oauth2/PAR', '/v2/auth/oauth2/par/', '/v2/auth/oauth2//par', '/v2/auth/oauth2/request']) {
      const res = await fetch(`${server.url}${spelling}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ ...app, ...request() }).toString() });
      expect(res.status, spelling).toBe(404);
    }
    expect(await storedPushes(server)).toBe(0);
  });

  it('push, then authorize with the request_uri alone, then the code exchange: the pushed scope and state', async () => {
    for (const auth of ['basic', 'post'] as const) {
      // client_id in the body with Basic too: an authorization request's parameter (RFC 9126 2.1, RFC 6749 4.1.1).
      const pushed = auth === 'basic' ? await push(server, request({ client_id: app.client_id, scope: 'PROFILE_READ,BOOKING_READ' }), { basic: app }) : await push(server, { ...app, ...request({ scope: 'PROFILE_READ BOOKING_READ' }) });
      expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
      expect(pushed.body.expires_in).toBe(PUSHED_REQUEST_TTL);
      expect(pushed.body.request_uri).toMatch(new RegExp(`^${URN}[A-Za-z0-9_-]+$`));
      expect(pushed.headers.get('cache-control')).toMatch(/no-store/);
      // Counted against the client's budget as the token endpoint's requests are (rate-limits.ts).
      expect(pushed.headers.get('ratelimit-policy')).toMatch(/^"client";q=\d+;w=60$/);
      const back = await authorize(new Browser(), server.url, authorizeWith(server, app.client_id, pushed.body.request_uri), user);
      expect(back.origin + back.pathname).toBe(REDIRECT);
      expect(back.searchParams.get('state')).toBe('st');
      const code = back.searchParams.get('code');
      expect(code, back.href).toBeTruthy();
      const tokens = await tokenRequest(server.url, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, ...app });
      expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
      expect(String(tokens.body.scope).split(' ').sort()).toEqual(['BOOKING_READ', 'PROFILE_READ']);
    }
  });

  it("a legacy client's pushed request without scope: full access as on the front channel, counted once for its migration", async () => {
    const created = await clientsCreate(operator(server), { name: 'Old Tool', redirectUri: [REDIRECT], legacy: true });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    const legacy = { client_id: created.client_id, client_secret: created.client_secret! };
    const pushed = await push(server, { ...legacy, response_type: 'code', redirect_uri: REDIRECT, state: 's' });
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    const back = await authorize(new Browser(), server.url, authorizeWith(server, legacy.client_id, pushed.body.request_uri), user);
    const code = back.searchParams.get('code');
    expect(code, back.href).toBeTruthy();
    const tokens = await tokenRequest(server.url, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, ...legacy });
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    const counted = await server.pg.db('client_scope_requests').where('client_id', legacy.client_id).sum<{ sum: string }[]>('count as sum');
    expect(Number(counted[0]!.sum)).toBe(1);
  });

  it('a request_uri works once: used again, on this instance or another, it is refused in words', async () => {
    const pushed = await push(server, { ...app, ...request() });
    expect(pushed.status).toBe(201);
    const back = await authorize(new Browser(), server.url, authorizeWith(server, app.client_id, pushed.body.request_uri), user);
    expect(back.searchParams.get('code')).toBeTruthy();
    for (const at of [server, other]) {
      const again = await new Browser().get(authorizeWith(at, app.client_id, pushed.body.request_uri).href);
      expect(again.status, again.html.slice(0, 300)).toBe(400);
      expect(again.$('h1').text()).toBe('This request has expired');
      expect(again.html).toContain('invalid_request_uri');
      expect(again.html).toContain(REQUEST_URI_TEXT);
    }
  });

  it('authorizations started from one request_uri, ended at once on two instances: exactly one code', async () => {
    const pushed = await push(server, { ...app, ...request() });
    const at = [server, other, server, other];
    const browsers = at.map(() => new Browser());
    const consents: Page[] = [];
    for (const [i, instance] of at.entries()) consents.push(await reachConsent(browsers[i]!, instance.url, authorizeWith(instance, app.client_id, pushed.body.request_uri), user));
    const ends = await Promise.all(at.map((instance, i) => allow(browsers[i]!, consents[i]!, instance.url)));
    const backs = ends.map((end) => new URL(end.location!));
    expect(backs.map((b) => b.origin + b.pathname)).toEqual(at.map(() => REDIRECT));
    expect(backs.filter((b) => b.searchParams.get('code')).length, backs.map((b) => b.search).join(' ')).toBe(1);
    for (const refused of backs.filter((b) => !b.searchParams.get('code'))) {
      expect(refused.searchParams.get('error')).toBe('invalid_request_uri');
      expect(refused.searchParams.get('error_description')).toBe(REQUEST_URI_TEXT);
    }
  });

  it('bad request_uris at the authorization endpoint are refused in words, never a 500', async () => {
    const cases: Array<[string, string, string]> = [
      ['made up', `${URN}made-up`, 'invalid_request_uri'],
      ['oversized', `${URN}${'x'.repeat(4000)}`, 'invalid_request_uri'],
      ['not ours (a URL)', 'https://evil.example/request.jwt', 'request_uri_not_supported'],
      ['empty', '', 'invalid_request'],
    ];
    for (const [what, requestUri, error] of cases) {
      const page = await new Browser().get(authorizeWith(server, app.client_id, requestUri).href);
      expect(page.status, `${what}: ${page.html.slice(0, 200)}`).toBe(400);
      expect(page.html, what).toContain(error);
    }
  });

  it('an expired request_uri (past its 60 seconds) is refused, and nothing is issued', async () => {
    const pushed = await earlier(61_000, () => push(server, { ...app, ...request() }));
    expect(pushed.status).toBe(201);
    const page = await new Browser().get(authorizeWith(server, app.client_id, pushed.body.request_uri).href);
    expect(page.status, page.html.slice(0, 300)).toBe(400);
    expect(page.$('h1').text()).toBe('This request has expired');
    expect(page.html).toContain('invalid_request_uri');
  });

  it('stays single-use when the sign-in outlasts its 60 seconds: the authorization that ends first spends it', async () => {
    const pushed = await earlier(61_000, () => push(server, { ...app, ...request() }));
    const [first, second] = [new Browser(), new Browser()];
    // Both started while it was fresh…
    const consents = await earlier(61_000, async () => [await reachConsent(first, server.url, authorizeWith(server, app.client_id, pushed.body.request_uri), user), await reachConsent(second, server.url, authorizeWith(server, app.client_id, pushed.body.request_uri), user)]);
    // …and ended after it expired: one code, not two.
    const one = new URL((await allow(first, consents[0]!, server.url)).location!);
    expect(one.searchParams.get('code'), one.href).toBeTruthy();
    const two = new URL((await allow(second, consents[1]!, server.url)).location!);
    expect(two.searchParams.get('code'), two.href).toBeNull();
    expect(two.searchParams.get('error')).toBe('invalid_request_uri');
  });

  it('another client cannot use a request_uri it did not push, and does not spend it', async () => {
    const mine = await push(server, { ...app, ...request() });
    const thief = await approvedClient(server, ['PROFILE_READ'], 'Other App');
    const page = await new Browser().get(authorizeWith(server, thief.client_id, mine.body.request_uri).href);
    // As for a request_uri never pushed: nothing tells the other client more.
    expect(page.status, page.html.slice(0, 300)).toBe(400);
    expect(page.$('h1').text()).toBe('This request has expired');
    expect(page.html).toContain('invalid_request_uri');
    const back = await authorize(new Browser(), server.url, authorizeWith(server, app.client_id, mine.body.request_uri), user);
    expect(back.searchParams.get('code'), back.href).toBeTruthy();
  });

  it('refuses bad pushes with the right error, storing nothing, never a 500', async () => {
    const before = await storedPushes(server);
    const { challenge } = pkce();
    const publicApp = await clientsCreate(operator(server), { name: 'Public App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'], public: true });
    await clientsSetStatus(operator(server), publicApp.client_id, 'approved');
    const cases: Array<[string, () => Promise<Answer>, number, string, RegExp?]> = [
      ['no client authentication', () => push(server, { client_id: app.client_id, ...request() }), 401, 'invalid_client'],
      ['a wrong secret', () => push(server, { ...app, client_secret: 'wrong', ...request() }), 401, 'invalid_client'],
      ['a wrong secret (Basic)', () => push(server, request({ client_id: app.client_id }), { basic: { ...app, client_secret: 'wrong' } }), 401, 'invalid_client'],
      ['an unknown client', () => push(server, { client_id: 'no-such-client', client_secret: 'x', ...request() }), 401, 'invalid_client'],
      ['no client at all', () => push(server, request()), 400, 'invalid_request'],
      ['a redirect_uri not registered', () => push(server, { ...app, ...request({ redirect_uri: 'https://evil.example/cb' }) }), 400, 'invalid_request'],
      ['a scope not the client\'s', () => push(server, { ...app, ...request({ scope: 'ORG_ADMIN' }) }), 400, 'invalid_scope'],
      ['no scope', () => push(server, { ...app, ...request({ scope: '' }) }), 400, 'invalid_scope'],
      ['no response_type', () => push(server, { ...app, redirect_uri: REDIRECT, scope: 'PROFILE_READ' }), 400, 'invalid_request'],
      // RFC 9126 2.1: a push must not carry a request_uri (the library's code for it).
      ['a request_uri in the push', () => push(server, { ...app, ...request({ request_uri: `${URN}abc` }) }), 400, 'request_uri_not_supported'],
      ['a request object (JAR is not supported)', () => push(server, { ...app, ...request({ request: 'eyJhbGciOiJub25lIn0.eyJzY29wZSI6IlBST0ZJTEVfUkVBRCJ9.' }) }), 400, 'request_not_supported'],
      ['an oversized state', () => push(server, { ...app, ...request({ state: 'x'.repeat(5000) }) }), 400, 'invalid_request', /state/],
      ['an oversized body', () => push(server, {}, { body: new URLSearchParams({ ...app, ...request({ nonce: 'x'.repeat(20_000) }) }).toString() }), 413, 'invalid_request'],
      ['a public client without PKCE', () => push(server, { client_id: publicApp.client_id, ...request() }), 400, 'invalid_request', /PKCE/],
      ['a public client with a secret it does not have', () => push(server, { client_id: publicApp.client_id, client_secret: 'x', ...request({ code_challenge: challenge, code_challenge_method: 'S256' }) }), 401, 'invalid_client'],
    ];
    for (const [what, send, status, error, description] of cases) {
      const res = await send();
      expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(status);
      expect(res.body.error, what).toBe(error);
      if (description) expect(res.body.error_description, what).toMatch(description);
    }
    const json = await fetch(parUrl(server), { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect(json.status).toBe(400);
    expect(await storedPushes(server)).toBe(before);
    // A public client pushes with `none` and PKCE (RFC 9126 2.1).
    const ok = await push(server, { client_id: publicApp.client_id, ...request({ code_challenge: challenge, code_challenge_method: 'S256' }) });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
  });

  it('a client set to require pushed requests (clients set-par) is refused without a request_uri, in words; with one it works', async () => {
    const strict = await approvedClient(server, ['PROFILE_READ'], 'Strict App');
    expect((await clientsSetPar(operator(server), strict.client_id, 'on')).require_pushed_authorization_requests).toBe(true);
    await expect(clientsSetPar(operator(server), strict.client_id, 'maybe')).rejects.toThrow(/on.*off/);
    expect((await server.system.provider.Client.find(strict.client_id))?.requirePushedAuthorizationRequests).toBe(true);
    // To its registered redirect URI (RFC 6749 4.1.2.1), with the reason.
    const front = await new Browser().get(`${server.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: strict.client_id, ...request() })}`);
    expect(front.status).toBe(303);
    const refused = new URL(front.location!);
    expect(refused.origin + refused.pathname).toBe(REDIRECT);
    expect(refused.searchParams.get('error')).toBe('invalid_request');
    expect(refused.searchParams.get('error_description')).toBe(PAR_REQUIRED_TEXT);
    expect(refused.searchParams.get('code')).toBeNull();
    // Without a redirect_uri to send it to: the error page says it.
    const page = await new Browser().get(`${server.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: strict.client_id, response_type: 'code', scope: 'PROFILE_READ' })}`);
    expect(page.status).toBe(400);
    expect(page.html).toContain(PAR_REQUIRED_TEXT);
    // Pushed, on either instance: the code.
    const pushed = await push(other, { ...strict, ...request() });
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    const back = await authorize(new Browser(), server.url, authorizeWith(server, strict.client_id, pushed.body.request_uri), user);
    expect(back.searchParams.get('code'), back.href).toBeTruthy();
    // Off again: the front channel as before.
    expect((await clientsSetPar(operator(server), strict.client_id, 'off')).require_pushed_authorization_requests).toBe(false);
    const plain = await authorize(new Browser(), server.url, { client_id: strict.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, user);
    expect(plain.searchParams.get('code'), plain.href).toBeTruthy();
    // The operator script itself: on again, seen by the running server.
    const env = { DATABASE_URL: server.pg.url };
    const set = await admin(['--json', 'clients', 'set-par', strict.client_id, 'on'], env);
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ client_id: strict.client_id, require_pushed_authorization_requests: true });
    expectRefusal(await admin(['--json', 'clients', 'set-par', strict.client_id, 'yes'], env), /on.*off/);
    await eventually(async () => expect((await server.system.provider.Client.find(strict.client_id))?.requirePushedAuthorizationRequests).toBe(true));
  });

  it('refuses at the PAR endpoint what the authorization endpoint refuses: suspended clients, and a pending one for anyone but its owner', async () => {
    const suspended = await approvedClient(server, ['PROFILE_READ'], 'Suspended App');
    const early = await push(server, { ...suspended, ...request() });
    expect(early.status).toBe(201);
    await clientsSetStatus(operator(server), suspended.client_id, 'suspended');
    const res = await push(server, { ...suspended, ...request() });
    expect(res.status, JSON.stringify(res.body)).toBe(401);
    expect(res.body.error).toBe('invalid_client');
    // A request it pushed before it was suspended is no way in either.
    const page = await new Browser().get(authorizeWith(server, suspended.client_id, early.body.request_uri).href);
    expect(page.status).toBe(400);
    expect(page.$('h1').text()).toBe('This app is not available');

    const owner = await newUser(server, 'Owner');
    const created = await createClient(server.system, { name: 'Pending App', kind: 'confidential', legacy: false, scopes: ['PROFILE_READ'], redirectUris: [REDIRECT], ownerUserId: owner.id }, { actor: 'operator:test' });
    const pending = { client_id: created.client.clientId, client_secret: created.secret!.value };
    const forOthers = await push(server, { ...pending, ...request() });
    expect(forOthers.status, JSON.stringify(forOthers.body)).toBe(201);
    const consent = await reachConsent(new Browser(), server.url, authorizeWith(server, pending.client_id, forOthers.body.request_uri), user);
    expect(consent.status).toBe(403);
    expect(consent.html).toContain('waiting for review');
    const forOwner = await push(server, { ...pending, ...request() });
    const back = await authorize(new Browser(), server.url, authorizeWith(server, pending.client_id, forOwner.body.request_uri), owner);
    expect(back.searchParams.get('code'), back.href).toBeTruthy();
  });
});

// The embedded database (PGlite, DATA_DIR): the same SQL adapter as PostgreSQL's, on its own engine.
describe('pushed authorization requests (embedded PGlite)', () => {
  let instance: AppInstance;
  let dir: string;
  let umask: number;
  beforeAll(async () => {
    // Opening the data directory tightens this process's umask (src/storage/data-dir.ts): put back after.
    umask = process.umask(0o022);
    process.umask(umask);
    dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'par-embedded-')), 'data');
    await copyMigratedDataDir(dir);
    instance = await startInstance({ DATA_DIR: dir });
  });
  afterAll(async () => {
    await instance?.close();
    process.umask(umask);
    if (dir) fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  });

  it('push, authorize, exchange; the request_uri then refused, and two authorizations from one give one code', async () => {
    const server = instance as unknown as TestServer;
    const app = await approvedClient(server, ['PROFILE_READ']);
    const user = await newUser(server);
    const fields = { ...app, response_type: 'code', redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' };
    const pushed = await push(server, fields);
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    const back = await authorize(new Browser(), server.url, authorizeWith(server, app.client_id, pushed.body.request_uri), user);
    const tokens = await tokenRequest(server.url, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, ...app });
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    const again = await new Browser().get(authorizeWith(server, app.client_id, pushed.body.request_uri).href);
    expect(again.status).toBe(400);
    expect(again.html).toContain('invalid_request_uri');

    const twice = await push(server, fields);
    const browsers = [new Browser(), new Browser(), new Browser()];
    const consents: Page[] = [];
    for (const browser of browsers) consents.push(await reachConsent(browser, server.url, authorizeWith(server, app.client_id, twice.body.request_uri), user));
    const ends = await Promise.all(browsers.map((browser, i) => allow(browser, consents[i]!, server.url)));
    expect(ends.filter((end) => new URL(end.location!).searchParams.get('code')).length).toBe(1);
  });
});

describe('pushed authorization requests for every kind of client (redis)', () => {
  let server: TestServer;
  let docs: DocumentServer;
  let clientOf: ReturnType<typeof clientKinds>;
  let user: TestUser;
  beforeAll(async () => {
    [server, docs] = await Promise.all([startTestServer('redis', { CIMD_ALLOW_LOOPBACK: 'true', DYNAMIC_REGISTRATION: 'open' }), startDocumentServer()]);
    clientOf = clientKinds(server, docs);
    user = await newUser(server);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), docs?.close()]);
  });

  it.for(KINDS)('%s: authenticates at the PAR endpoint as at the token endpoint, and its pushed request gets a code', async (kind) => {
    const client = await clientOf(kind);
    const redirect = kind.startsWith('registry') ? REDIRECT : AGENT_REDIRECT;
    const { verifier, challenge } = pkce();
    const fields = { response_type: 'code', redirect_uri: redirect, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' };
    if (client.badAuth) {
      const refused = await push(server, { ...client.badAuth(), client_id: client.clientId, ...fields });
      expect(refused.status, JSON.stringify(refused.body)).toBe(401);
      expect(refused.body.error).toBe('invalid_client');
    }
    if (!client.public) {
      const unauthenticated = await push(server, { client_id: client.clientId, ...fields });
      expect(unauthenticated.status, JSON.stringify(unauthenticated.body)).toBe(401);
    }
    const pushed = await push(server, { ...client.auth(), client_id: client.clientId, ...fields });
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    const back = await authorize(new Browser(), server.url, authorizeWith(server, client.clientId, pushed.body.request_uri), user);
    const code = back.searchParams.get('code');
    expect(code, back.href).toBeTruthy();
    const tokens = await tokenRequest(server.url, { grant_type: 'authorization_code', code: code!, redirect_uri: redirect, code_verifier: verifier, ...client.auth(), client_id: client.clientId });
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  });

  it("an unreviewed agent's tier holds at the PAR endpoint as at the authorization endpoint", async () => {
    const agent = await clientOf('metadata document, none');
    const res = await push(server, { client_id: agent.clientId, response_type: 'code', redirect_uri: AGENT_REDIRECT, scope: 'PROFILE_READ TEAM_BOOKING_READ', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toBe('invalid_scope');
  });

  it('a DPoP proof on the push binds the code to its key (RFC 9449 10.1); two DPoP headers are refused before the library reads either', async () => {
    const client = await clientOf('registry confidential');
    const secret = client.auth();
    const key = dpopKey();
    const fields = { ...secret, response_type: 'code', redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' };
    const twice = await fetch(parUrl(server), {
      method: 'POST',
      headers: [['content-type', 'application/x-www-form-urlencoded'], ['dpop', proof(key, 'POST', parUrl(server))], ['dpop', proof(key, 'POST', parUrl(server))]],
      body: new URLSearchParams(fields).toString(),
    });
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { error: string }).error).toBe('invalid_dpop_proof');
    const res = await fetch(parUrl(server), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: proof(key, 'POST', parUrl(server)) }, body: new URLSearchParams(fields).toString() });
    const pushed = (await res.json()) as Record<string, string>;
    expect(res.status, JSON.stringify(pushed)).toBe(201);
    const back = await authorize(new Browser(), server.url, authorizeWith(server, client.clientId, pushed.request_uri!), user);
    const code = back.searchParams.get('code')!;
    expect(code, back.href).toBeTruthy();
    const exchange = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...secret };
    const without = await tokenPost(server, exchange);
    expect(without.status, JSON.stringify(without.body)).toBe(400);
    expect(without.body.error).toBe('invalid_grant');
    const bound = await tokenPost(server, exchange, { dpop: proof(key, 'POST', `${server.url}/v2/auth/oauth2/token`) });
    expect(bound.status, JSON.stringify(bound.body)).toBe(200);
    expect(bound.body.token_type).toBe('DPoP');
  });

  it('a metadata document or registration saying require_pushed_authorization_requests is held to it', async () => {
    const documented = docs.agent('/strict-agent.json', { client_name: 'Strict Agent', require_pushed_authorization_requests: true });
    const res = await fetch(`${server.url}/v2/auth/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [AGENT_REDIRECT], token_endpoint_auth_method: 'none', require_pushed_authorization_requests: true }),
    });
    const registered = (await res.json()) as Record<string, any>;
    expect(res.status, JSON.stringify(registered)).toBe(201);
    expect(registered.require_pushed_authorization_requests).toBe(true);
    for (const clientId of [documented, registered.client_id as string]) {
      const { verifier: _v, challenge } = pkce();
      const fields = { response_type: 'code', redirect_uri: AGENT_REDIRECT, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' };
      const front = await new Browser().get(`${server.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: clientId, ...fields })}`);
      const refused = new URL(front.location!);
      expect(refused.searchParams.get('error'), clientId).toBe('invalid_request');
      expect(refused.searchParams.get('error_description')).toBe(PAR_REQUIRED_TEXT);
      const pushed = await push(server, { client_id: clientId, ...fields });
      expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
      const back = await authorize(new Browser(), server.url, authorizeWith(server, clientId, pushed.body.request_uri), user);
      expect(back.searchParams.get('code'), back.href).toBeTruthy();
    }
    // Anything but a boolean is refused, not guessed at: an unusable document (its reason in the log, cimd/clients.ts).
    const odd = docs.agent('/odd-agent.json', { require_pushed_authorization_requests: 'yes' });
    const page = await new Browser().get(`${server.url}/auth/oauth2/authorize?${new URLSearchParams({ client_id: odd, response_type: 'code', redirect_uri: AGENT_REDIRECT, scope: 'PROFILE_READ', code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`);
    expect(page.status).toBe(400);
    expect(page.$('h1').text()).toBe('This app is not available');
    const oddPush = await push(server, { client_id: odd, response_type: 'code', redirect_uri: AGENT_REDIRECT, scope: 'PROFILE_READ', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    expect(oddPush.status, JSON.stringify(oddPush.body)).toBe(400);
    expect(oddPush.body.error).toBe('invalid_client');
  });
});

describe('pushed authorization requests and the token-endpoint limits (redis)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('redis', { RATE_LIMIT_TOKEN_PER_MINUTE_PER_CLIENT: '3', RATE_LIMIT_AUTH_FAILURES: '2', RATE_LIMIT_AUTH_FAILURES_PER_IP: '200' });
  });
  afterAll(() => server?.close());

  it("spend the client's budget, and failed authentications are held back as at the token endpoint", async () => {
    const app = await approvedClient(server, ['PROFILE_READ']);
    const fields = { ...app, response_type: 'code', redirect_uri: REDIRECT, scope: 'PROFILE_READ' };
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push(await push(server, fields));
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 429]);
    expect(answers[3]!.body.error).toBe('slow_down');
    expect(answers[3]!.headers.get('retry-after')).toBeTruthy();
    // The token endpoint shares the budget.
    expect((await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: 'x', ...app })).status).toBe(429);

    const victim = await approvedClient(server, ['PROFILE_READ'], 'Victim');
    const wrong = { ...fields, ...victim, client_secret: 'wrong' };
    const failures = [];
    for (let i = 0; i < 4; i += 1) failures.push((await push(server, wrong)).status);
    expect(failures).toEqual([401, 401, 429, 429]);
    // The right secret is never held back by others' failures.
    expect((await push(server, { ...fields, ...victim })).status).toBe(201);
  });
});

describe('requiring pushed requests on the developer page (RFC 9126 5)', () => {
  const BASE = '/settings/developer/oauth-clients';
  let server: TestServer;
  let dev: TestUser;
  let stranger: TestUser;
  beforeAll(async () => {
    server = await startTestServer('redis');
    [dev, stranger] = await Promise.all([newUser(server, 'Dev'), newUser(server, 'Stranger')]);
  });
  afterAll(() => server?.close());
  const { url, signIn, post } = developerPages(() => server.url);


  it('the owner turns it on and off; the provider then requires a pushed request; others cannot', async () => {
    const browser = await signIn(dev);
    expect((await post(browser, BASE, { name: 'Pushing App', kind: 'public', redirect_uris: REDIRECT, scope: ['PROFILE_READ'] })).status).toBe(303);
    const id = (await server.pg.db('oauth_clients').where('name', 'Pushing App').first('id')).id as string;
    const path = `${BASE}/${id}`;
    const setting = async () => (await server.pg.db('oauth_clients').where('id', id).first('require_pushed_authorization_requests')).require_pushed_authorization_requests as boolean;
    expect((await browser.get(url(path))).$('form.par input[name=par]').is(':checked')).toBe(false);

    expect((await post(browser, `${path}/par`, { par: 'on' })).status).toBe(303);
    expect(await setting()).toBe(true);
    const shown = await browser.get(url(path));
    expect(shown.$('form.par input[name=par]').is(':checked')).toBe(true);
    expect(shown.html).toContain('Pushed authorization requests required');
    // The address to push to, in the page's How to connect panel.
    expect(shown.$('code.par-endpoint').text()).toBe(`${server.url}/v2/auth/oauth2/par`);
    expect((await server.system.provider.Client.find(id))?.requirePushedAuthorizationRequests).toBe(true);

    expect((await post(browser, `${path}/par`, {}, 'not-the-token')).status).toBe(403);
    expect((await post(await signIn(stranger), `${path}/par`, {})).status).toBe(404);
    expect(await setting()).toBe(true);

    expect((await post(browser, `${path}/par`, {})).status).toBe(303);
    expect(await setting()).toBe(false);
    expect((await server.system.provider.Client.find(id))?.requirePushedAuthorizationRequests).toBe(false);
  });
});
