// Browser protections on every page: security headers, cookie flags, CSRF on the forms, inert
// rendering of attacker-controlled text, no CORS on pages, 303 after POST.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser, type Page } from './support/browser.ts';
import { authorizeUrl, reachConsent } from './support/oauth.ts';
import { approvedClient, newUser, REDIRECT, type TestClient } from './support/fixtures.ts';

let server: TestServer;
let client: TestClient;
let evil: TestClient;
let user: Awaited<ReturnType<typeof newUser>>;

beforeAll(async () => {
  server = await startTestServer('redis', { TRUST_PROXY: 'true' });
  client = await approvedClient(server, ['PROFILE_READ']);
  evil = await approvedClient(server, ['PROFILE_READ'], '<script>alert(1)</script><img src=x onerror=alert(2)>');
  user = await newUser(server);
});
afterAll(() => server?.close());

const request = (c: TestClient, extra: Record<string, string> = {}) => ({ client_id: c.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', ...extra });

function expectProtectiveHeaders(headers: Headers, what: string) {
  const csp = headers.get('content-security-policy') ?? '';
  expect(csp, what).toContain("frame-ancestors 'none'");
  expect(csp, what).toContain("default-src 'none'");
  expect(csp, what).not.toContain('unsafe-inline');
  expect(headers.get('x-content-type-options'), what).toBe('nosniff');
  expect(headers.get('referrer-policy'), what).toBe('no-referrer');
  expect(headers.get('x-frame-options'), what).toBe('DENY');
  expect(headers.get('access-control-allow-origin'), what).toBeNull();
}

describe('browser protections', () => {
  it('sends the protective headers on pages, redirects, errors and the API, and no CORS on them', async () => {
    const browser = new Browser();
    const origin = { Origin: 'https://evil.example' };
    const authorizeRedirect = await browser.request(authorizeUrl(server.url, request(client)), { headers: origin });
    expect(authorizeRedirect.status).toBe(303);
    expectProtectiveHeaders(authorizeRedirect.headers, 'authorization redirect');
    const login = await browser.request(authorizeRedirect.location!, { headers: origin });
    expectProtectiveHeaders(login.headers, 'sign-in page');
    const errorPage = await new Browser().request(authorizeUrl(server.url, { ...request(client), redirect_uri: 'https://elsewhere.example/cb' }), { headers: origin });
    expect(errorPage.status).toBe(400);
    expectProtectiveHeaders(errorPage.headers, 'error page');
    const api = await fetch(`${server.url}/v2/me`, { headers: origin });
    expectProtectiveHeaders(api.headers, 'API');
    const check = await fetch(`${server.url}/v2/auth/check`, { headers: { ...origin, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/me' } });
    expectProtectiveHeaders(check.headers, 'gateway check');
    expectProtectiveHeaders((await fetch(`${server.url}/v2/auth/check/v2/me`, { headers: origin })).headers, 'gateway check (Envoy form)');
  });

  it('sets session cookies HttpOnly and SameSite=Lax, and Secure when the public URL is https', async () => {
    const browser = new Browser();
    const res = await fetch(authorizeUrl(server.url, request(client)), { redirect: 'manual', headers: { 'x-forwarded-proto': 'https' } });
    const cookies = res.headers.getSetCookie();
    expect(cookies.length).toBeGreaterThan(0);
    for (const cookie of cookies) {
      expect(cookie).toMatch(/; httponly/i);
      expect(cookie).toMatch(/; samesite=lax/i);
      expect(cookie).toMatch(/; secure/i);
    }
    const plain = await browser.request(authorizeUrl(server.url, request(client)));
    for (const cookie of plain.headers.getSetCookie()) expect(cookie).not.toMatch(/; secure/i);
  });

  it('refuses sign-in and consent posts without the interaction’s CSRF token, or from another site', async () => {
    const browser = new Browser();
    const login = await browser.follow(authorizeUrl(server.url, request(client)), server.url);
    const form = 'form:has(input[name=password])';
    const credentials = { email: user.email, password: user.password };
    for (const [fields, headers] of [
      [{ ...credentials, csrf: '' }, {}],
      [{ ...credentials, csrf: 'forged' }, {}],
      [credentials, { 'sec-fetch-site': 'cross-site' }],
    ] as const) {
      const refused = await submitWith(browser, login, form, fields, headers);
      expect(refused.status).toBe(403);
      expect(refused.location).toBeUndefined();
    }
    // Nothing happened: the genuine form still works, and consent is protected the same way.
    const consent = await reachConsent(browser, server.url, request(client), user);
    expect(consent.$('h1').text()).toContain('wants access');
    const forged = await submitWith(browser, consent, 'button:contains("Allow")', { csrf: 'forged' });
    expect(forged.status).toBe(403);
    const allowed = await browser.submit(consent, 'button:contains("Allow")');
    expect(allowed.status).toBe(303);
  });

  it('renders attacker-controlled client names and parameters inert', async () => {
    const hostile = '"><img src=x onerror=alert(3)><script>alert(4)</script>';
    const browser = new Browser();
    const consent = await reachConsent(browser, server.url, request(evil, { state: hostile }), user);
    const pages: Page[] = [consent];
    pages.push(await new Browser().get(authorizeUrl(server.url, { ...request(evil), redirect_uri: hostile })));
    pages.push(await new Browser().get(authorizeUrl(server.url, { ...request(evil), client_id: hostile })));
    pages.push(await new Browser().get(`${server.url}/auth/oauth2/interaction/${encodeURIComponent(hostile)}`));
    for (const page of pages) {
      expect(page.html).not.toMatch(/<script>alert|<img src=x/i);
      expect(page.$('script')).toHaveLength(0);
      expect(page.$('img')).toHaveLength(0);
    }
    expect(consent.$('h1').text()).toContain('<script>alert(1)</script>');
  });

  it('answers form posts with 303, never 307; the authorization endpoint takes GET only', async () => {
    const browser = new Browser();
    const login = await browser.follow(authorizeUrl(server.url, request(client)), server.url);
    const signedIn = await browser.submit(login, 'form:has(input[name=password])', { email: user.email, password: user.password });
    expect(signedIn.status).toBe(303);
    const consent = await browser.follow(signedIn.location!, server.url);
    expect((await browser.submit(consent, 'button:contains("Deny")')).status).toBe(303);

    const post = await fetch(`${server.url}/v2/auth/oauth2/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...request(client), response_type: 'code' }),
    });
    expect(post.status).toBe(404);
    expect(post.headers.get('location')).toBeNull();
  });
});

/** Submits a form with some fields overridden and extra request headers. */
async function submitWith(browser: Browser, page: Page, selector: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const original = browser.request.bind(browser);
  browser.request = (url, init = {}) => original(url, { ...init, headers: { ...(init.headers as Record<string, string>), ...headers } });
  try {
    return await browser.submit(page, selector, fields);
  } finally {
    browser.request = original;
  }
}
