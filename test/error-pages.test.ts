// Error pages in plain words (src/http/error-causes.ts): each cause gets its own title and advice,
// the library's wording only in the technical fold, the status as before, and no redirect. Back
// after sign-in or consent leads to "this step is finished", with the way on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { approvedClient, newUser, REDIRECT, type TestClient } from './support/fixtures.ts';
import { Browser, type Page } from './support/browser.ts';
import { authorizeUrl, reachConsent, type TestUser } from './support/oauth.ts';

let server: TestServer;
let client: TestClient;
let user: TestUser;

beforeAll(async () => {
  server = await startTestServer('redis');
  client = await approvedClient(server, ['PROFILE_READ'], 'Calendar Sync');
  user = await newUser(server);
});
afterAll(() => server?.close());

/** What the page tells a user (outside the fold), and what it folds away for developers. */
function read(page: Page) {
  const fold = page.$('details.error-technical');
  const plain = page.$('main').clone();
  plain.find('details').remove();
  return { title: page.$('h1').text().trim(), plain: plain.text(), fold: fold.text(), foldCount: fold.length, links: page.$('.error-way-on a').map((_, a) => page.$(a).attr('href')).get() };
}

function expectErrorPage(page: Page, status: number, title: string, code: string, libraryText?: string) {
  expect(page.status, page.html).toBe(status);
  expect(page.location).toBeUndefined();
  expect(page.headers.get('content-type')).toMatch(/text\/html/);
  const shown = read(page);
  expect(shown.title).toBe(title);
  expect(shown.foldCount).toBe(1);
  expect(shown.fold).toContain(code);
  if (libraryText) {
    expect(shown.fold).toContain(libraryText);
    expect(shown.plain).not.toContain(libraryText);
  }
  expect(shown.links.length).toBeGreaterThan(0);
  return shown;
}

const authorize = (params: Record<string, string>) => authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', ...params });

describe('error pages', () => {
  it('an unknown app: "not available", nothing redirected', async () => {
    const page = await new Browser().get(authorize({ client_id: 'no-such-client' }));
    const shown = expectErrorPage(page, 400, 'This app is not available', 'invalid_client', 'client is invalid');
    expect(shown.plain).toContain('Nothing was shared');
  });

  it('an unregistered redirect URI: "set up incorrectly", nothing shared, nothing redirected', async () => {
    const page = await new Browser().get(authorize({ redirect_uri: 'https://evil.example.net/steal' }));
    const shown = expectErrorPage(page, 400, 'This app is set up incorrectly', 'invalid_redirect_uri', "redirect_uri did not match any of the client's registered redirect_uris");
    expect(shown.plain).toContain('Nothing was shared with it');
    expect(page.html).not.toContain('evil.example.net');
  });

  it('invalid request parameters: the plain title, the library wording folded', async () => {
    const page = await new Browser().get(`${server.url}/auth/oauth2/authorize?client_id=${client.client_id}&response_type=code&scope=PROFILE_READ`);
    expectErrorPage(page, 400, 'Something is wrong with this link', 'invalid_request', "missing required parameter 'redirect_uri'");
  });

  it('an expired or foreign sign-in step: "expired", whichever part is missing', async () => {
    // Opened in another browser: no cookie for the step.
    const browser = new Browser();
    const login = await browser.follow(authorize({}), server.url);
    expect(login.$('input[name=password]')).toHaveLength(1);
    expectErrorPage(await new Browser().get(login.url), 400, 'This sign-in has expired', 'invalid_request', 'interaction session id cookie not found');
    // The step's record expired while the page was open.
    const uid = login.url.split('/').pop()!;
    await (await server.system.provider.Interaction.find(uid))!.destroy();
    expectErrorPage(await browser.get(login.url), 400, 'This sign-in has expired', 'invalid_request', 'interaction session not found');
    // The provider's resume address without its cookie.
    expectErrorPage(await new Browser().get(`${server.url}/auth/oauth2/authorize/${uid}`), 400, 'This sign-in has expired', 'invalid_request', 'authorization request has expired');
  });

  it('a sign-in form from elsewhere: "form has expired", 403 as before', async () => {
    const browser = new Browser();
    const login = await browser.follow(authorize({}), server.url);
    const sent = await browser.submit(login, 'form:has(input[name=password])', { email: user.email, password: user.password, csrf: 'forged' });
    expectErrorPage(sent, 403, 'This form has expired', 'invalid_request');
  });

  it('a page that does not exist: "not found", 404 as before', async () => {
    expectErrorPage(await new Browser().get(`${server.url}/no/such/page`), 404, 'Page not found', 'not_found');
  });

  it("the pages' own refusals are the one error page, in their words and statuses (thrown, rendered by the envelope)", async () => {
    const browser = new Browser();
    const login = await browser.get(`${server.url}/login`);
    expect((await browser.submit(login, 'form[action="/login"]', { email: user.email, password: user.password })).status).toBe(303);
    // A page form from another site: 403, its words, no technical fold.
    const forged = await browser.request(`${server.url}/settings/developer/oauth-clients`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'csrf=forged&name=x' });
    expect(forged.status).toBe(403);
    expect(read(forged)).toMatchObject({ title: 'This form has expired', foldCount: 0 });
    expect(read(forged).plain).toContain('The form was not sent from this site, or it is too old. Please go back, reload the page and try again.');
    // An administrators' page for a user who is not one: 403, what an operator does.
    const adminOnly = await browser.get(`${server.url}/admin/oauth-clients`);
    expect(adminOnly.status).toBe(403);
    expect(read(adminOnly)).toMatchObject({ title: 'Administrators only', foldCount: 0 });
    expect(read(adminOnly).plain).toContain(`users set-admin ${user.email}`);
    // Signed out, a form sent: 401.
    const signedOut = await new Browser().request(`${server.url}/settings/developer/oauth-clients`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'csrf=x' });
    expect(signedOut.status).toBe(401);
    expect(read(signedOut)).toMatchObject({ title: 'Please sign in', foldCount: 0 });
  });

  it('an error page of a signed-in user keeps a working Sign out', async () => {
    const browser = new Browser();
    const login = await browser.get(`${server.url}/login`);
    expect((await browser.submit(login, 'form[action="/login"]', { email: user.email, password: user.password })).status).toBe(303);
    const missing = await browser.get(`${server.url}/settings/developer/oauth-clients/no-such-client`);
    expectErrorPage(missing, 404, 'Page not found', 'not_found');
    expect(missing.$('form[action="/logout"] input[name=csrf]').val()).not.toBe('');
    expect((await browser.submit(missing, 'form[action="/logout"]')).status).toBe(303);
    expect((await browser.get(`${server.url}/settings/developer/oauth-clients`)).status).toBe(303); // signed out: to the sign-in page
  });

  it('keeps the JSON error shapes of the token endpoint and the API', async () => {
    const token = await fetch(`${server.url}/v2/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=authorization_code&code=x' });
    expect(Object.keys(await token.json()).sort()).toEqual(['error', 'error_description']);
    const api = await fetch(`${server.url}/v2/no-such-thing`);
    expect(api.status).toBe(404);
    expect(await api.json()).toMatchObject({ status: 'error', error: { code: 'not_found' } });
  });
});

describe('Back after a finished step', () => {
  it('after sign-in: the sign-in page says the step is finished and continues the authorization', async () => {
    const browser = new Browser();
    const login = await browser.follow(authorize({ state: 'back-1' }), server.url);
    const consent = await reachConsent(browser, server.url, new URL(login.url), user);
    expect(consent.$('button:contains("Allow")')).toHaveLength(1);

    const back = await browser.get(login.url);
    expect(back.status).toBe(200);
    expect(back.location).toBeUndefined();
    expect(back.$('h1').text()).toBe('This step is finished');
    expect(back.$('.notice').text()).toContain('You already signed in');
    const next = back.$('.error-way-on a').first();
    expect(next.text()).toBe('Continue to Calendar Sync');
    const again = new URL(next.attr('href')!, server.url);
    expect(again.pathname).toBe('/auth/oauth2/authorize');
    expect(Object.fromEntries(again.searchParams)).toMatchObject({ client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 'back-1' });
    // Continuing: still signed in, so straight to the consent page of a new step.
    const resumed = await browser.follow(again.href, server.url);
    expect(resumed.$('button:contains("Allow")')).toHaveLength(1);

    // Only the browser that finished the step is told so; another one gets "expired".
    expectErrorPage(await new Browser().get(login.url), 400, 'This sign-in has expired', 'invalid_request');
  });

  it('after Allow: the consent page says access was given, and continuing returns to the app', async () => {
    const browser = new Browser();
    const consent = await reachConsent(browser, server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 'back-2' }, user);
    const allowed = await browser.submit(consent, 'button:contains("Allow")');
    const atApp = await browser.follow(allowed.location!, server.url);
    expect(atApp.location).toMatch(/^https:\/\/app\.example\.com\/callback\?code=/);

    const back = await browser.get(consent.url);
    expect(back.status).toBe(200);
    expect(back.$('.notice').text()).toContain('You already allowed Calendar Sync');
    const again = await browser.follow(new URL(back.$('.error-way-on a').first().attr('href')!, server.url).href, server.url);
    const returned = new URL(again.location!);
    expect(`${returned.origin}${returned.pathname}`).toBe(REDIRECT);
    expect(returned.searchParams.get('code')).toBeTruthy();
    expect(returned.searchParams.get('state')).toBe('back-2');
  });

  it('keeps the authorization request on the server: the cookie holds none of its parameters, not even decoded', async () => {
    const state = `state-${Date.now()}-kept-on-server`;
    await expectFinishedStepsWithoutParameters(server, client, user, state);
  });

  it('shows a finished step only at its own interaction: its cookie moved to another one is ignored', async () => {
    const browser = new Browser();
    const consent = await reachConsent(browser, server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 'moved' }, user);
    await browser.submit(consent, 'button:contains("Allow")');
    const [finished, signature] = await finishedStepCookies(browser, consent.url);
    const other = new Browser();
    const login = await other.follow(authorize({ state: 'other' }), server.url);
    const path = new URL(login.url).pathname;
    await other.jar.setCookie(`finished_step=${finished!.value}; Path=${path}`, login.url);
    await other.jar.setCookie(`finished_step.sig=${signature!.value}; Path=${path}`, login.url);
    await (await server.system.provider.Interaction.find(path.split('/').pop()!))!.destroy();
    expectErrorPage(await other.get(login.url), 400, 'This sign-in has expired', 'invalid_request');
  });

  it('ignores a finished-step cookie that was not signed by us', async () => {
    const browser = new Browser();
    const login = await browser.follow(authorize({}), server.url);
    const forged = Buffer.from(JSON.stringify({ outcome: 'allowed', params: { client_id: client.client_id } })).toString('base64url');
    await browser.jar.setCookie(`finished_step=${forged}; Path=${new URL(login.url).pathname}`, login.url);
    await (await server.system.provider.Interaction.find(login.url.split('/').pop()!))!.destroy();
    expectErrorPage(await browser.get(login.url), 400, 'This sign-in has expired', 'invalid_request');
  });
});

/** The finished-step cookie and its signature, as the browser holds them for the page at `url`. */
async function finishedStepCookies(browser: Browser, url: string) {
  const cookies = await browser.jar.getCookies(url);
  const finished = cookies.find((c) => c.key === 'finished_step');
  expect(finished, cookies.map((c) => c.key).join()).toBeDefined();
  return [finished, cookies.find((c) => c.key === 'finished_step.sig')] as const;
}

/** Sign-in and Allow; Back to both pages says "finished", and no cookie carries client_id, redirect_uri or state. */
async function expectFinishedStepsWithoutParameters(at: TestServer, app: TestClient, who: TestUser, state: string) {
  const browser = new Browser();
  const login = await browser.follow(authorizeUrl(at.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state }), at.url);
  const consent = await reachConsent(browser, at.url, new URL(login.url), who);
  const allowed = await browser.submit(consent, 'button:contains("Allow")');
  expect((await browser.follow(allowed.location!, at.url)).location).toMatch(/^https:\/\/app\.example\.com\/callback\?code=/);
  const secrets = [app.client_id, REDIRECT, encodeURIComponent(REDIRECT), state];
  for (const pageUrl of [login.url, consent.url]) {
    const cookies = await browser.jar.getCookies(pageUrl);
    expect(cookies.some((c) => c.key === 'finished_step')).toBe(true);
    for (const cookie of cookies) {
      const value = decodeURIComponent(cookie.value);
      const readings = [value, Buffer.from(value, 'base64').toString('latin1'), Buffer.from(value, 'base64url').toString('latin1')];
      for (const reading of readings) for (const secret of secrets) expect(reading, `${cookie.key}`).not.toContain(secret);
    }
    const back = await browser.get(pageUrl);
    expect(back.$('h1').text()).toBe('This step is finished');
    const again = new URL(back.$('.error-way-on a').first().attr('href')!, at.url);
    expect(Object.fromEntries(again.searchParams)).toMatchObject({ client_id: app.client_id, redirect_uri: REDIRECT, state });
  }
}

describe('Back after a finished step, without Redis', () => {
  let sql: TestServer;
  let sqlClient: TestClient;
  let sqlUser: TestUser;
  beforeAll(async () => {
    sql = await startTestServer('sql');
    sqlClient = await approvedClient(sql, ['PROFILE_READ'], 'Calendar Sync');
    sqlUser = await newUser(sql);
  });
  afterAll(() => sql?.close());

  it('keeps the finished step in the database, and the page works the same', async () => {
    await expectFinishedStepsWithoutParameters(sql, sqlClient, sqlUser, 'sql-state-kept-on-server');
    expect(await sql.pg.db('oidc_models').where('model', 'FinishedStep')).toHaveLength(2);
  });
});
