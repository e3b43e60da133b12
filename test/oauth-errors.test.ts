// Every refusal of the token, revocation and introspection endpoints wears one envelope, whoever
// wrote it (our steps in front of the provider, the limits, the provider itself) and whichever way
// the request came in: as spelled (the hot-path listener, its plain cases, then the back channel)
// or in another form of the request target (absolute-form, through the main app). The RFC 6749
// body, no caching (Cache-Control and Pragma), JSON, WWW-Authenticate exactly where due, a request
// id, the API's security headers and nothing meant for pages (src/http/envelope.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { approvedClient, newUser, operator, tokensFor, type TestClient } from './support/fixtures.ts';
import { comparable, raw, type Raw } from './support/raw-http.ts';
import { clientsSetRateLimit } from '../src/admin/commands.ts';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};
// Helmet's headers for pages: never on these endpoints.
const PAGE_HEADERS = ['x-dns-prefetch-control', 'cross-origin-opener-policy', 'origin-agent-cluster', 'x-download-options'];

/** The envelope every OAuth refusal wears. */
function expectOAuthEnvelope(answer: Raw, sentAuthorization: boolean, what: string) {
  expect(answer.status, what).toBeGreaterThanOrEqual(400);
  expect(answer.headers['content-type'], what).toBe('application/json; charset=utf-8');
  expect(answer.headers['cache-control'], what).toBe('no-store');
  expect(answer.headers.pragma, what).toBe('no-cache');
  expect(answer.headers['x-request-id'], what).toMatch(/^[0-9a-f-]{36}$/);
  expect(answer.headers, what).toMatchObject(SECURITY_HEADERS);
  for (const name of PAGE_HEADERS) expect(answer.headers[name], `${what}: ${name}`).toBeUndefined();
  // RFC 6749 5.2: a 401 to a client that authenticated with the Authorization header challenges it; nothing else does.
  if (answer.status === 401 && sentAuthorization) expect(answer.headers['www-authenticate'], what).toMatch(/^Basic realm="/);
  else expect(answer.headers['www-authenticate'], what).toBeUndefined();
  if (answer.status === 429 || answer.status === 503) expect(answer.headers['retry-after'], what).toMatch(/^[0-9]+$/);
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  expect(Object.keys(body).sort(), what).toEqual(['error', 'error_description']);
  expect(body.error, what).toMatch(/^[a-z_]+$/);
  expect(typeof body.error_description, what).toBe('string');
}

describe('OAuth error answers', () => {
  let server: TestServer;
  let client: TestClient;
  let busy: TestClient;
  let token: string;
  let ipCount = 0;
  // A fresh client address per request pair: the failure counters (per address) start equal.
  const freshIp = () => `192.0.2.${++ipCount}`;

  beforeAll(async () => {
    server = await startTestServer('redis', { TRUST_PROXY: 'true', RATE_LIMIT_AUTH_FAILURES: '2' });
    [client, busy] = await Promise.all([approvedClient(server, ['PROFILE_READ'], 'App'), approvedClient(server, ['PROFILE_READ'], 'Busy App')]);
    token = (await tokensFor(server, client, await newUser(server), 'PROFILE_READ')).access_token;
  });
  afterAll(() => server?.close());

  /** The same request as spelled (origin-form) and absolute-form, each from its own fresh address. */
  async function bothWays(method: string, target: string, headers: Record<string, string>, body?: string) {
    const asSpelled = await raw(server.url, method, target, { ...headers, 'x-forwarded-for': freshIp() }, body);
    const otherForm = await raw(server.url, method, `${server.url}${target}`, { ...headers, 'x-forwarded-for': freshIp() }, body);
    return [asSpelled, otherForm] as const;
  }

  it('has one shape and one set of headers for every refusal, ours or the provider\'s, either way in', async () => {
    const id = client.client_id;
    const secret = client.client_secret;
    const long = 'x'.repeat(17 * 1024);
    const refusals: Array<[string, string, Record<string, string>, string | undefined]> = [
      // Ours, before the provider (src/oauth/request-shims.ts).
      ['POST', '/v2/auth/oauth2/token', { 'content-type': 'text/plain', ...basic(id, secret) }, 'grant_type=refresh_token'],
      ['POST', '/v2/auth/oauth2/token', { 'content-type': 'application/json', ...basic(id, secret) }, '{"grant_type": 1}'],
      ['POST', '/v2/auth/oauth2/token', { 'content-type': 'application/json' }, 'not json'],
      ['POST', '/v2/auth/oauth2/token', FORM, `a=${long}`],
      ['POST', '/v2/auth/oauth2/introspect', { 'content-type': 'text/plain' }, 'token=x'],
      ['POST', '/v2/auth/oauth2/revoke', { 'content-type': 'text/plain' }, 'token=x'],
      // Ours: a URL past the limit (the envelope's route-family shape).
      ['POST', `/v2/auth/oauth2/token?${'a'.repeat(9000)}`, FORM, 'grant_type=refresh_token'],
      // The provider's, after the fast path handed the request over or never took it.
      ['POST', '/v2/auth/oauth2/token', FORM, `grant_type=refresh_token&refresh_token=junk&client_id=${id}&client_secret=${secret}`],
      ['POST', '/v2/auth/oauth2/token', { ...FORM, ...basic(id, secret) }, 'grant_type=refresh_token&refresh_token=junk'],
      ['POST', '/v2/auth/oauth2/token', { ...FORM, ...basic(id, 'wrong') }, 'grant_type=refresh_token&refresh_token=junk'],
      ['POST', '/v2/auth/oauth2/token', FORM, `grant_type=refresh_token&refresh_token=junk&client_id=${id}&client_secret=wrong`],
      ['POST', '/v2/auth/oauth2/token', { ...FORM, ...basic(id, secret) }, 'grant_type=password'],
      ['POST', '/v2/auth/oauth2/token', { ...FORM, ...basic(id, secret) }, 'grant_type=refresh_token&refresh_token=a&refresh_token=b'],
      ['POST', '/v2/auth/oauth2/token', FORM, 'grant_type=refresh_token'],
      // Not a method of these endpoints: our 405 with Allow, not the provider's plain-text 404.
      ['GET', '/v2/auth/oauth2/token', {}, undefined],
      ['PUT', '/v2/auth/oauth2/introspect', FORM, `token=${token}`],
      ['DELETE', '/v2/auth/oauth2/revoke', {}, undefined],
      ['OPTIONS', '/v2/auth/oauth2/token', {}, undefined],
      ['POST', '/v2/auth/oauth2/introspect', { ...FORM, ...basic(id, 'wrong') }, `token=${token}`],
      ['POST', '/v2/auth/oauth2/introspect', { ...FORM, ...basic(id, secret) }, 'token=a&token=b'],
      ['POST', '/v2/auth/oauth2/introspect', FORM, `token=${token}&client_id=${id}&client_secret=wrong`],
      ['POST', '/v2/auth/oauth2/revoke', { ...FORM, ...basic(id, 'wrong') }, 'token=junk'],
      ['POST', '/v2/auth/oauth2/revoke', { ...FORM, ...basic(id, secret) }, 'token_type_hint=access_token'],
    ];
    for (const [method, target, headers, body] of refusals) {
      const what = `${method} ${target.slice(0, 40)} ${JSON.stringify(headers)} ${body?.slice(0, 60)}`;
      const [asSpelled, otherForm] = await bothWays(method, target, headers, body);
      expectOAuthEnvelope(asSpelled, 'authorization' in headers, what);
      expect(comparable(asSpelled), what).toEqual(comparable(otherForm));
    }
  });

  it('answers a method the back channel does not take with 405 and `Allow: POST` (issue 50), either way in', async () => {
    for (const [method, endpoint, name] of [['GET', 'token', 'token'], ['HEAD', 'token', 'token'], ['PUT', 'introspect', 'introspection'], ['DELETE', 'revoke', 'revocation'], ['OPTIONS', 'token', 'token'], ['PATCH', 'token', 'token']] as const) {
      for (const answer of await bothWays(method, `/v2/auth/oauth2/${endpoint}`, {})) {
        expect(answer.status, `${method} ${endpoint}`).toBe(405);
        expect(answer.headers.allow, `${method} ${endpoint}`).toBe('POST');
        if (method !== 'HEAD') expect(JSON.parse(answer.body), `${method} ${endpoint}`).toEqual({ error: 'invalid_request', error_description: `the ${name} endpoint takes POST requests only` });
      }
    }
    // Other spellings are other paths: still the plain 404.
    for (const target of ['/v2/auth/oauth2/token/', '/v2/auth/oauth2/Token']) expect((await raw(server.url, 'GET', target, {})).status, target).toBe(404);
  });

  it('holds back failures past the limit (429, the provider\'s step) in the same envelope, with no challenge', async () => {
    for (const endpoint of ['token', 'introspect', 'revoke']) {
      const target = `/v2/auth/oauth2/${endpoint}`;
      const body = endpoint === 'token' ? 'grant_type=refresh_token&refresh_token=junk' : 'token=junk';
      const answers: Raw[] = [];
      // Two addresses with the same history: the limit's two failures, then one way in each.
      for (const form of ['origin', 'absolute']) {
        const ip = freshIp();
        const headers = { ...FORM, ...basic(client.client_id, 'wrong'), 'x-forwarded-for': ip };
        for (let i = 0; i < 2; i++) expect((await raw(server.url, 'POST', target, headers, body)).status).toBe(401);
        answers.push(await raw(server.url, 'POST', form === 'origin' ? target : `${server.url}${target}`, headers, body));
      }
      for (const answer of answers) {
        expect(answer.status, endpoint).toBe(429);
        expectOAuthEnvelope(answer, true, endpoint);
      }
      expect(comparable(answers[0]!), endpoint).toEqual(comparable(answers[1]!));
    }
  });

  it("holds back a client over its own budget (429, our step before the provider) in the same envelope, on the fast path's endpoints too", async () => {
    await clientsSetRateLimit(operator(server), busy.client_id, '2');
    const headers = { ...FORM, ...basic(busy.client_id, busy.client_secret) };
    // Its budget spent by introspections the fast path answers; the next ones are held back.
    for (let i = 0; i < 2; i++) expect((await raw(server.url, 'POST', '/v2/auth/oauth2/introspect', headers, `token=${token}`)).status).toBe(200);
    for (const target of ['/v2/auth/oauth2/introspect', '/v2/auth/oauth2/token', '/v2/auth/oauth2/revoke']) {
      const body = target.endsWith('token') ? 'grant_type=refresh_token&refresh_token=junk' : `token=${token}`;
      const [asSpelled, otherForm] = await bothWays('POST', target, headers, body);
      for (const answer of [asSpelled, otherForm]) {
        expect(answer.status, target).toBe(429);
        expectOAuthEnvelope(answer, true, target);
      }
      // The wait is counted down between the two: the seconds may differ by one.
      const seconds = ({ headers: h, body: b, ...rest }: Raw) => comparable({ ...rest, headers: { ...h, 'retry-after': 'n' }, body: b.replace(/[0-9]+/g, 'n') });
      expect(seconds(asSpelled), target).toEqual(seconds(otherForm));
    }
  });
});

describe("the fast path's own OAuth refusal", () => {
  let server: TestServer;

  // The fast path on, whatever the suite runs with: it is its answer that is tested here.
  beforeAll(async () => {
    server = await startTestServer('redis', { FAST_PATHS: 'on' });
  });
  afterAll(() => server?.close());

  it("writes the fast path's own refusal (a rotation the store failed mid-step: 503) in the provider's envelope", async () => {
    const client = await approvedClient(server, ['PROFILE_READ'], 'App');
    const user = await newUser(server);
    const [first, second] = [await tokensFor(server, client, user, 'PROFILE_READ'), await tokensFor(server, client, user, 'PROFILE_READ')];
    // A real store fault after the token was spent: the client's token index is no set any more,
    // so the rotation's script fails half-way (Redis does not roll a script back).
    const index = `${server.redis!.prefix}client:${client.client_id}`;
    await server.redis!.redis.set(index, 'not a set');
    try {
      const headers = { ...FORM, ...basic(client.client_id, client.client_secret) };
      const fast = await raw(server.url, 'POST', '/v2/auth/oauth2/token', headers, `grant_type=refresh_token&refresh_token=${first.refresh_token}`);
      expect(fast.status).toBe(503);
      expect(JSON.parse(fast.body)).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
      expectOAuthEnvelope(fast, true, 'fast path 503');
      // The provider meets the same fault when it saves: its refusal has the same headers (less the retry hint).
      const provider = await raw(server.url, 'POST', `${server.url}/v2/auth/oauth2/token`, headers, `grant_type=refresh_token&refresh_token=${second.refresh_token}`);
      expectOAuthEnvelope(provider, true, 'provider');
      const names = ({ headers: h }: Raw) => Object.keys(h).filter((n) => !['date', 'retry-after', 'content-length', 'x-request-id'].includes(n)).sort();
      expect(names(fast)).toEqual(names(provider));
      const { 'retry-after': _r, 'content-length': _l, ...fastHeaders } = comparable(fast).headers;
      const { 'retry-after': _r2, 'content-length': _l2, ...providerHeaders } = comparable(provider).headers;
      expect(fastHeaders).toEqual(providerHeaders);
    } finally {
      await server.redis!.redis.del(index);
    }
  });
});
