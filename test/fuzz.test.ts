// Hostile and random input at the authorization and token endpoints (fast-check): never a 5xx,
// never a token without a valid grant, never a redirect to an unregistered URI.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { startTestServer, type TestServer } from './support/server.ts';
import { approvedClient, codeFor, newUser, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';

let server: TestServer;
let client: TestClient;
// Real credentials of another client in play: its code and refresh token must never work for ours.
let foreign: { code: string; refreshToken: string };

beforeAll(async () => {
  server = await startTestServer('redis', { RATE_LIMITS: 'off' });
  client = await approvedClient(server, ['PROFILE_READ']);
  const other = await approvedClient(server, ['PROFILE_READ'], 'Other App');
  const user = await newUser(server);
  foreign = { code: await codeFor(server, other, user, 'PROFILE_READ'), refreshToken: (await tokensFor(server, other, user, 'PROFILE_READ')).refresh_token };
});
afterAll(() => server?.close());

const PARAMS = ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'prompt', 'response_mode', 'request', 'request_uri', 'nonce', 'code', 'grant_type', 'refresh_token', 'client_secret', 'code_verifier', 'resource', 'claims', 'max_age'];

const hostile = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.constantFrom(
    REDIRECT,
    `${REDIRECT}/../evil`,
    'https://evil.example/cb',
    'javascript:alert(1)',
    '"><script>alert(1)</script>',
    'PROFILE_READ',
    'code',
    'authorization_code',
    'refresh_token',
    // Grants this server does not offer, asked for with valid client credentials.
    'client_credentials',
    'password',
    'urn:ietf:params:oauth:grant-type:device_code',
    'urn:ietf:params:oauth:grant-type:token-exchange',
    'urn:ietf:params:oauth:grant-type:jwt-bearer',
    'S256',
    'plain',
    '%00',
    '\u0000',
    '../../../../etc/passwd',
    '{"a":1}',
    '[]',
  ),
  fc.constant('x'.repeat(5000)),
);

// Pairs instead of an object, so a parameter can be repeated.
const foreignCredential = fc.constantFrom<() => string>(() => foreign.code, () => foreign.refreshToken);
const paramList = fc.array(fc.tuple(fc.oneof(fc.constantFrom(...PARAMS), fc.string({ maxLength: 20 })), hostile), { maxLength: 12 });

function withClient(pairs: Array<[string, string]>, includeClient: boolean): Array<[string, string]> {
  return includeClient ? [['client_id', client.client_id], ...pairs] : pairs;
}

describe('hostile input', () => {
  it('the authorization endpoint never fails with 5xx nor redirects anywhere but the registered URI', async () => {
    await fc.assert(
      fc.asyncProperty(paramList, fc.boolean(), async (pairs, includeClient) => {
        const query = new URLSearchParams(withClient(pairs, includeClient));
        const res = await fetch(`${server.url}/auth/oauth2/authorize?${query}`, { redirect: 'manual' });
        expect(res.status, query.toString()).toBeLessThan(500);
        const location = res.headers.get('location');
        if (location) {
          const target = new URL(location, server.url);
          const ours = target.origin === new URL(server.url).origin && target.pathname.startsWith('/auth/oauth2/interaction/');
          const registered = `${target.origin}${target.pathname}` === REDIRECT;
          expect(ours || registered, `redirected to ${location}`).toBe(true);
          expect(target.searchParams.get('code')).toBeNull();
        }
      }),
      { numRuns: 150 },
    );
  });

  it('the token endpoint never fails with 5xx nor issues a token, for form and JSON bodies', async () => {
    await fc.assert(
      fc.asyncProperty(paramList, fc.boolean(), fc.boolean(), fc.boolean(), fc.option(foreignCredential), async (pairs, includeClient, json, withSecret, stolen) => {
        const fields = withClient(pairs, includeClient);
        if (withSecret) fields.push(['client_secret', client.client_secret]);
        // Valid client credentials with another client's code or refresh token, or a grant we do not offer.
        if (stolen) fields.push(['code', stolen()], ['refresh_token', stolen()]);
        const body = json ? JSON.stringify(Object.fromEntries(fields)) : new URLSearchParams(fields).toString();
        const res = await fetch(`${server.url}/v2/auth/oauth2/token`, {
          method: 'POST',
          headers: { 'content-type': json ? 'application/json' : 'application/x-www-form-urlencoded' },
          body,
        });
        const text = await res.text();
        expect(res.status, body).toBeLessThan(500);
        expect(res.status, text).not.toBe(200);
        expect(text).not.toContain('access_token');
        expect(() => JSON.parse(text)).not.toThrow();
        expect(JSON.parse(text)).toHaveProperty('error');
      }),
      { numRuns: 150 },
    );
  });

  it('survives oversized bodies, odd content types and malformed encodings without a 5xx', async () => {
    const cases: Array<[string, string]> = [
      ['application/x-www-form-urlencoded', `grant_type=refresh_token&refresh_token=${'a'.repeat(40_000)}`],
      ['application/json', JSON.stringify({ grant_type: 'x'.repeat(40_000) })],
      ['application/json', '{"grant_type": "refresh_token", "grant_type": "authorization_code"}'],
      ['application/x-www-form-urlencoded', 'grant_type=%ZZ&code=%'],
      ['text/plain', 'grant_type=refresh_token'],
      ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="grant_type"\r\n\r\nrefresh_token\r\n--x--'],
      ['application/json', '\u0000\u0001'],
    ];
    for (const [type, body] of cases) {
      const res = await fetch(`${server.url}/v2/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': type }, body });
      expect(res.status, `${type}: ${body.slice(0, 40)}`).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect((await res.json()).error).toBeTruthy();
    }
    const longUrl = await fetch(`${server.url}/auth/oauth2/authorize?state=${'s'.repeat(10_000)}`);
    expect(longUrl.status).toBe(414);
    // NUL bytes, which PostgreSQL text cannot hold, in every place a client can put them.
    for (const [type, body] of [
      ['application/x-www-form-urlencoded', 'grant_type=refresh_token&refresh_token=x&client_id=%00&client_secret=s'],
      ['application/json', JSON.stringify({ grant_type: 'refresh_token', refresh_token: 'x', client_id: 'a\u0000b', client_secret: 's' })],
    ] as const) {
      const res = await fetch(`${server.url}/v2/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': type }, body });
      expect(res.status).toBe(401);
    }
    for (const path of ['/auth/oauth2/authorize?client_id=%00&response_type=code', '/settings/developer/oauth-clients/%00', '/v2/me%00']) {
      expect((await fetch(`${server.url}${path}`, { redirect: 'manual' })).status, path).toBe(400);
    }
  });
});
