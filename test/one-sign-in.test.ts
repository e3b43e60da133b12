// One sign-in across the site (issue 50 item 4): signing in for an app signs in to the pages, signing
// in to the pages signs in for apps (unless the request asks for a fresh sign-in), "Sign out" ends
// both, and a different account signing in replaces the other's sessions: never two accounts mixed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser, signedIn, type Page } from './support/browser.ts';
import { authorize, authorizeUrl, reachConsent, type TestUser } from './support/oauth.ts';
import { approvedClient, newUser, REDIRECT, type TestClient } from './support/fixtures.ts';

let server: TestServer;
let client: TestClient;
let alice: TestUser & { id: number };
let bob: TestUser & { id: number };

beforeAll(async () => {
  server = await startTestServer('redis');
  client = await approvedClient(server, ['PROFILE_READ']);
  [alice, bob] = await Promise.all([newUser(server, 'Alice'), newUser(server, 'Bob')]);
});
afterAll(() => server?.close());

const url = (path: string) => `${server.url}${path}`;
const request = (extra: Record<string, string> = {}) => ({ client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', ...extra });
/** Where an authorization request lands in this browser, without signing in. */
const landing = (browser: Browser, extra: Record<string, string> = {}) => browser.follow(authorizeUrl(server.url, request(extra)), server.url);
const asksPassword = (page: Page) => page.$('input[name=password]').length > 0;
/** Who the pages say is signed in ('' for nobody). */
const pagesUser = async (browser: Browser) => (await browser.get(url('/'))).$('form[action="/logout"] .who').text().trim();
const webSessionsOf = async (userId: number) => Number((await server.pg.db('web_sessions').where('user_id', userId).count({ n: '*' }).first())!.n);

async function signOut(browser: Browser): Promise<void> {
  const home = await browser.get(url('/'));
  const res = await browser.submit(home, 'form[action="/logout"]');
  expect(res.status).toBe(303);
}

describe('signing in for an app', () => {
  it('signs in to the pages: the start page shows the user and "Apps with access" opens without a password', async () => {
    const browser = new Browser();
    const back = await authorize(browser, server.url, request(), alice);
    expect(back.searchParams.get('code')).toBeTruthy();
    expect(await pagesUser(browser)).toBe(alice.email);
    const apps = await browser.get(url('/settings/connected-apps'));
    expect(apps.status, apps.location).toBe(200);
    expect(apps.html).toContain('Test App');
  });

  it('with a wrong password signs in nowhere', async () => {
    const browser = new Browser();
    const form = await landing(browser);
    const res = await browser.submit(form, 'form:has(input[name=password])', { email: alice.email, password: 'not-the-password' });
    expect(res.status).toBe(401);
    expect(await pagesUser(browser)).toBe('');
    expect(asksPassword(await landing(browser))).toBe(true);
  });

  it('by another account replaces the pages’ session: the pages show only the new account', async () => {
    const browser = await signedIn(server.url, alice);
    expect(await pagesUser(browser)).toBe(alice.email);
    const before = await webSessionsOf(alice.id);
    const form = await landing(browser, { prompt: 'login' });
    expect(asksPassword(form)).toBe(true);
    const res = await browser.submit(form, 'form:has(input[name=password])', { email: bob.email, password: bob.password });
    expect(res.status).toBe(303);
    const consent = await browser.follow(res.location!, server.url);
    expect(consent.html).toContain(bob.email);
    expect(await pagesUser(browser)).toBe(bob.email);
    // Alice's session of this browser is gone, not merely unused.
    expect(await webSessionsOf(alice.id)).toBe(before - 1);
  });
});

describe('signing in to the pages', () => {
  it('signs in for apps: an authorization request goes to the consent page without the password form', async () => {
    const browser = await signedIn(server.url, bob);
    const consent = await landing(browser);
    expect(asksPassword(consent), consent.html.slice(0, 300)).toBe(false);
    expect(consent.$('button:contains("Allow")').length).toBe(1);
    expect(consent.html).toContain(bob.email);
    const allowed = await browser.submit(consent, 'button:contains("Allow")');
    const back = new URL((await browser.follow(allowed.location!, server.url)).location!);
    expect(back.searchParams.get('code')).toBeTruthy();
  });

  it('prompt=login still asks for the password, and the sign-in then is for the account given', async () => {
    const browser = await signedIn(server.url, bob);
    const form = await landing(browser, { prompt: 'login' });
    expect(asksPassword(form)).toBe(true);
    const res = await browser.submit(form, 'form:has(input[name=password])', { email: bob.email, password: bob.password });
    const consent = await browser.follow(res.location!, server.url);
    expect(consent.html).toContain(bob.email);
  });

  it('as another account ends the authorization session of the browser: the next request is for the new account', async () => {
    const browser = new Browser();
    await authorize(browser, server.url, request(), alice);
    // The pages' session ends on its own (12 h) while the authorization session lives on.
    await server.pg.db('web_sessions').where('user_id', alice.id).delete();
    expect(await pagesUser(browser)).toBe('');
    const login = await browser.get(url('/login'));
    expect((await browser.submit(login, 'form[action="/login"]', { email: bob.email, password: bob.password })).status).toBe(303);
    const consent = await landing(browser);
    expect(asksPassword(consent)).toBe(false);
    expect(consent.html).toContain(bob.email);
    expect(consent.html).not.toContain(alice.email);
  });
});

describe('"Sign out"', () => {
  it('ends both: the next authorization asks for the password, and so do the pages', async () => {
    const browser = new Browser();
    await authorize(browser, server.url, request(), alice);
    expect(await pagesUser(browser)).toBe(alice.email);
    await signOut(browser);
    expect(await pagesUser(browser)).toBe('');
    const apps = await browser.get(url('/settings/connected-apps'));
    expect(apps.status).toBe(303);
    expect(apps.location).toContain('/login');
    expect(asksPassword(await landing(browser))).toBe(true);
    // And a sign-in after it works as before.
    const consent = await reachConsent(browser, server.url, request(), alice);
    expect(consent.html).toContain(alice.email);
  });
});
