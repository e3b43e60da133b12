// The authorization code flow end to end over real HTTP, on Redis and on SQL artifact storage.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorize, authorizeUrl, getMe, reachConsent, tokenRequest } from './support/oauth.ts';
import { clientsCreate, clientsSetStatus, usersCreate } from '../src/admin/commands.ts';
import { operator } from './support/fixtures.ts';

const REDIRECT = 'https://app.example.com/callback';
const user = { email: 'ada@example.com', password: 'correct horse battery' };

describe.each<Storage>(['redis', 'sql'])('authorization code flow (%s storage)', (storage) => {
  let server: TestServer;
  let base: string;
  let client: { client_id: string; client_secret: string };
  let pending: { client_id: string; client_secret: string };

  beforeAll(async () => {
    server = await startTestServer(storage);
    base = server.url;
    await usersCreate(server.system, { ...user, name: 'Ada Lovelace', timeZone: 'Europe/London' });
    const created = await clientsCreate(operator(server), { name: 'Acme Calendar Sync', redirectUri: [REDIRECT], scope: ['PROFILE_READ BOOKING_READ'] });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    client = { client_id: created.client_id, client_secret: created.client_secret! };
    const p = await clientsCreate(operator(server), { name: 'Not yet reviewed', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    pending = { client_id: p.client_id, client_secret: p.client_secret! };
  });
  afterAll(() => server?.close());

  async function codeFor(scope = 'PROFILE_READ BOOKING_READ', state = 'st-123') {
    const back = await authorize(new Browser(), base, { client_id: client.client_id, redirect_uri: REDIRECT, scope, state }, user);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('state')).toBe(state);
    return back.searchParams.get('code')!;
  }

  function exchange(code: string, extra: Record<string, string> = {}) {
    return tokenRequest(base, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...client, ...extra });
  }

  it('signs in, shows consent, redirects back with code, state and iss', async () => {
    const browser = new Browser();
    const params = { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ BOOKING_READ', state: 'xyz' };
    const login = await browser.follow(authorizeUrl(base, params), base);
    expect(login.status).toBe(200);
    expect(login.$('form input[name=email]')).toHaveLength(1);
    expect(login.$('form input[name=password]')).toHaveLength(1);

    const wrong = await browser.submit(login, 'form:has(input[name=password])', { email: user.email, password: 'wrong password' });
    expect(wrong.status).toBe(401);
    expect(wrong.html).toContain('not correct');

    const consent = await reachConsent(browser, base, params, user);
    expect(consent.$('h1').text()).toContain('Acme Calendar Sync');
    expect(consent.$('.scopes li')).toHaveLength(2);
    expect(consent.html).toContain('See your profile');
    expect(consent.html).toContain('See your bookings');
    expect(consent.$('button[name=decision]').map((_, b) => consent.$(b).text()).get()).toEqual(['Allow', 'Deny']);

    const allowed = await browser.submit(consent, 'button:contains("Allow")');
    expect(allowed.status).toBe(303);
    const back = new URL((await browser.follow(allowed.location!, base)).location!);
    expect(back.searchParams.get('code')).toBeTruthy();
    expect(back.searchParams.get('state')).toBe('xyz');
    expect(back.searchParams.get('iss')).toBe(`${base}/v2/auth/oauth2`);
  });

  it('exchanges the code (form body), calls /v2/me, refreshes with the same scope, and refuses the spent refresh token', async () => {
    const tokens = await exchange(await codeFor());
    expect(tokens.status).toBe(200);
    expect(tokens.headers.get('cache-control')).toBe('no-store');
    expect(tokens.body).toMatchObject({ token_type: 'bearer', expires_in: 1800, scope: 'PROFILE_READ BOOKING_READ' });
    expect(tokens.body.access_token).toEqual(expect.any(String));
    expect(tokens.body.refresh_token).toEqual(expect.any(String));
    expect(Object.keys(tokens.body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);

    const me = await getMe(base, tokens.body.access_token as string);
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      status: 'success',
      data: { id: expect.any(Number), email: user.email, username: 'ada', name: 'Ada Lovelace', timeZone: 'Europe/London' },
    });

    const refreshed = await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token as string, ...client });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body).toMatchObject({ token_type: 'bearer', expires_in: 1800, scope: 'PROFILE_READ BOOKING_READ' });
    expect(refreshed.body.access_token).not.toBe(tokens.body.access_token);
    expect(refreshed.body.refresh_token).not.toBe(tokens.body.refresh_token);
    expect((await getMe(base, refreshed.body.access_token as string)).status).toBe(200);

    // Presented again at once: the same answer (the grace window); once its successor was used: refused.
    const retried = await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token as string, ...client });
    expect(retried.body).toEqual(refreshed.body);
    expect((await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token as string, ...client })).status).toBe(200);
    const reused = await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token as string, ...client });
    expect(reused.status).toBe(400);
    expect(reused.body.error).toBe('invalid_grant');
  });

  it('accepts a JSON body and HTTP Basic client authentication', async () => {
    const json = await tokenRequest(base, { grant_type: 'authorization_code', code: await codeFor(), redirect_uri: REDIRECT, ...client }, { as: 'json' });
    expect(json.status).toBe(200);
    expect(json.body.token_type).toBe('bearer');

    const basic = await tokenRequest(
      base,
      { grant_type: 'authorization_code', code: await codeFor(), redirect_uri: REDIRECT },
      { basic: [client.client_id, client.client_secret] },
    );
    expect(basic.status).toBe(200);
    expect((await getMe(base, basic.body.access_token as string)).status).toBe(200);
  });

  it('refuses a malformed JSON body with an OAuth error, not a crash', async () => {
    const res = await fetch(`${base}/v2/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"grant_type":' });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toBe('invalid_request');
    const nested = await tokenRequest(base, { grant_type: 'refresh_token', refresh_token: { a: 1 } as unknown as string, ...client }, { as: 'json' });
    expect(nested.status).toBe(400);
    expect(nested.body.error).toBe('invalid_request');
  });

  it('answers a wrong client secret with 401 invalid_client, and the code stays unspent', async () => {
    const code = await codeFor();
    const wrong = await exchange(code, { client_secret: 'not-the-secret' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_client');
    const basic = await tokenRequest(base, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT }, { basic: [client.client_id, 'nope'] });
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect((await exchange(code)).status).toBe(200);
  });

  it('refuses an unknown code and a spent code with invalid_grant', async () => {
    const unknown = await exchange('not-a-real-code');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('invalid_grant');

    const code = await codeFor();
    expect((await exchange(code)).status).toBe(200);
    const again = await exchange(code);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
  });

  it('refuses a redirect_uri at the token endpoint that differs from the authorization request', async () => {
    const res = await exchange(await codeFor(), { redirect_uri: 'https://app.example.com/other' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_grant');
  });

  it('renders an error page and redirects nowhere for a pending client; its credentials get invalid_client', async () => {
    const page = await new Browser().get(authorizeUrl(base, { client_id: pending.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }));
    expect(page.status).toBe(400);
    expect(page.location).toBeUndefined();
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.$('h1').text()).toBeTruthy();

    const token = await tokenRequest(base, { grant_type: 'authorization_code', code: 'whatever', redirect_uri: REDIRECT, ...pending });
    expect(token.status).toBe(401);
    expect(token.body.error).toBe('invalid_client');
  });

  it('renders an error page and redirects nowhere for an unknown client or an unregistered redirect_uri', async () => {
    for (const params of [
      { client_id: 'no-such-client', redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' },
      { client_id: client.client_id, redirect_uri: 'https://evil.example.net/steal', scope: 'PROFILE_READ', state: 's' },
      { client_id: client.client_id, redirect_uri: `${REDIRECT}/`, scope: 'PROFILE_READ', state: 's' },
    ]) {
      const page = await new Browser().get(authorizeUrl(base, params));
      expect(page.status).toBe(400);
      expect(page.location).toBeUndefined();
      expect(page.html).not.toContain('evil.example.net/steal?');
    }
  });

  it('redirects with error=access_denied and state when the user clicks Deny', async () => {
    const browser = new Browser();
    const consent = await reachConsent(browser, base, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 'deny-me' }, user);
    const denied = await browser.submit(consent, 'button:contains("Deny")');
    expect(denied.status).toBe(303);
    const back = new URL((await browser.follow(denied.location!, base)).location!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('deny-me');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('answers /v2/me per RFC 6750: no token, a garbage token, a token without PROFILE_READ', async () => {
    const none = await getMe(base);
    expect(none.status).toBe(401);
    expect(none.challenge).toMatch(/^Bearer /);
    expect(none.challenge).not.toContain('error=');
    expect(none.body).toMatchObject({ status: 'error', error: { code: expect.any(String), message: expect.any(String) } });

    const garbage = await getMe(base, 'garbage-token');
    expect(garbage.status).toBe(401);
    expect(garbage.challenge).toContain('error="invalid_token"');
    expect(garbage.body.error.code).toBe('invalid_token');

    const tokens = await exchange(await codeFor('BOOKING_READ'));
    expect(tokens.body.scope).toBe('BOOKING_READ');
    const noScope = await getMe(base, tokens.body.access_token as string);
    expect(noScope.status).toBe(403);
    expect(noScope.challenge).toContain('error="insufficient_scope"');
    expect(noScope.challenge).toContain('scope="PROFILE_READ"');
    expect(noScope.body.error.code).toBe('insufficient_scope');
  });

  it('reports health and readiness', async () => {
    expect((await fetch(`${base}/health`)).status).toBe(200);
    const ready = await fetch(`${base}/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', database: 'ok' });
  });
});
