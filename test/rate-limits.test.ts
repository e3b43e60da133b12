// Abuse limits: failed client authentication locks out (client, IP) until the window passes, even
// for the right secret; volume limits per IP; growing sign-in delays. 429 + Retry-After + RFC body.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorizeUrl } from './support/oauth.ts';
import { approvedClient, codeFor, newUser, REDIRECT, type TestClient } from './support/fixtures.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function tokenFrom(base: string, ip: string, fields: Record<string, string>) {
  const res = await fetch(`${base}/v2/auth/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
    body: new URLSearchParams(fields),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, unknown> };
}

describe.each<Storage>(['redis', 'sql'])('rate limits (%s storage)', (storage) => {
  let server: TestServer;
  let client: TestClient;
  let user: Awaited<ReturnType<typeof newUser>>;

  beforeAll(async () => {
    server = await startTestServer(storage, {
      TRUST_PROXY: 'true', // lets the tests speak from several IP addresses
      RATE_LIMIT_AUTH_FAILURES: '3',
      RATE_LIMIT_AUTH_LOCKOUT_SECONDS: '2',
      RATE_LIMIT_TOKEN_PER_MINUTE_PER_IP: '12',
      RATE_LIMIT_SIGNIN_FREE_FAILURES: '2',
      RATE_LIMIT_SIGNIN_MAX_DELAY_SECONDS: '2',
    });
    client = await approvedClient(server, ['PROFILE_READ']);
    user = await newUser(server);
  });
  afterAll(() => server?.close());

  const exchange = (ip: string, code: string, secret = client.client_secret) =>
    tokenFrom(server.url, ip, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: client.client_id, client_secret: secret });

  it('locks out an IP after repeated failed client authentication, even for the right secret, until the window passes', async () => {
    const code = await codeFor(server, client, user, 'PROFILE_READ');
    for (let i = 0; i < 3; i++) expect((await exchange('198.51.100.1', code, 'wrong')).status).toBe(401);
    const locked = await exchange('198.51.100.1', code);
    expect(locked.status).toBe(429);
    expect(Number(locked.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(locked.body).toEqual({ error: 'slow_down', error_description: expect.stringContaining('retry after') });

    // The same client from another address is not locked out (client ids are public).
    expect((await exchange('198.51.100.2', await codeFor(server, client, user, 'PROFILE_READ'))).status).toBe(200);

    await sleep(2100);
    expect((await exchange('198.51.100.1', code)).status).toBe(200);
  });

  it('answers an unknown client id exactly as a wrong secret', async () => {
    const unknown = await tokenFrom(server.url, '198.51.100.3', { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'no-such-client', client_secret: 's' });
    const wrong = await tokenFrom(server.url, '198.51.100.4', { grant_type: 'refresh_token', refresh_token: 'x', client_id: client.client_id, client_secret: 's' });
    expect(unknown.status).toBe(401);
    expect(unknown).toEqual(wrong);
  });

  it('limits the volume of token requests per IP', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 13; i++) statuses.push((await tokenFrom(server.url, '198.51.100.5', { grant_type: 'refresh_token', refresh_token: 'x', ...client })).status);
    expect(statuses.slice(0, 12).every((s) => s === 400)).toBe(true);
    expect(statuses[12]).toBe(429);
  });

  it('makes each sign-in attempt after repeated failures wait longer, the right password included', async () => {
    const browser = new Browser();
    const login = await browser.follow(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }), server.url);
    const attempt = (password: string) => browser.submit(login, 'form:has(input[name=password])', { email: user.email, password });
    expect((await attempt('wrong-1')).status).toBe(401);
    expect((await attempt('wrong-2')).status).toBe(401);
    const held = await attempt(user.password);
    expect(held.status).toBe(429);
    expect(Number(held.headers.get('retry-after'))).toBe(1);
    expect(held.$('.alert').text()).toContain('Too many sign-in attempts');

    await sleep(1100);
    expect((await attempt('wrong-3')).status).toBe(401);
    const longer = await attempt(user.password);
    expect(longer.status).toBe(429);
    expect(Number(longer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1); // 2 s now: the delay grew
    expect(Number(longer.headers.get('retry-after'))).toBeLessThanOrEqual(2);
    await sleep(2100);
    expect((await attempt(user.password)).status).toBe(303);
  });
});
