// The web application pages over real HTTP: developer settings, admin review, apps with access,
// with their authorization rules and refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser, type Page } from './support/browser.ts';
import { authorize, authorizeUrl, getMe, tokenRequest, type TestUser } from './support/oauth.ts';
import { newUser, operator, REDIRECT } from './support/fixtures.ts';
import { usersSetAdmin } from '../src/admin/commands.ts';

let server: TestServer;
let dev: TestUser & { id: number };
let other: TestUser & { id: number };
let admin: TestUser & { id: number };

beforeAll(async () => {
  server = await startTestServer('redis', { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent' });
  [dev, other, admin] = await Promise.all([newUser(server, 'Dev'), newUser(server, 'Other'), newUser(server, 'Admin')]);
  await usersSetAdmin(operator(server), admin.email);
});
afterAll(() => server?.close());

const url = (path: string) => `${server.url}${path}`;

async function signIn(user: TestUser, next = '/settings/connected-apps'): Promise<Browser> {
  const browser = new Browser();
  const login = await browser.get(url(`/login?next=${encodeURIComponent(next)}`));
  const done = await browser.submit(login, 'form[action="/login"]', { email: user.email, password: user.password });
  expect(done.status).toBe(303);
  expect(done.location).toBe(url(next));
  return browser;
}

/** Follows a 303 after a form post and returns the page, with its flash message. */
async function after(browser: Browser, res: Page): Promise<Page> {
  expect(res.status, res.html.slice(0, 300)).toBe(303);
  return browser.get(res.location!);
}

async function register(browser: Browser, fields: Record<string, string | string[]>): Promise<Page> {
  const form = await browser.get(url('/settings/developer/oauth-clients/new'));
  const body = new URLSearchParams({ csrf: form.$('input[name=csrf]').val() as string });
  for (const [k, v] of Object.entries(fields)) for (const value of [v].flat()) body.append(k, value);
  return browser.request(url('/settings/developer/oauth-clients'), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
}

describe('sign-in to the pages', () => {
  it('sends signed-out visitors to the sign-in page and back, and never to another site', async () => {
    const browser = new Browser();
    const res = await browser.get(url('/settings/developer/oauth-clients'));
    expect(res.status).toBe(303);
    expect(res.location).toBe(url('/login?next=%2Fsettings%2Fdeveloper%2Foauth-clients'));
    const wrong = await browser.submit(await browser.get(res.location!), 'form[action="/login"]', { email: dev.email, password: 'nope-nope' });
    expect(wrong.status).toBe(401);
    expect(wrong.$('.alert').text()).toContain('not correct');

    const evil = new Browser();
    const login = await evil.get(url('/login?next=//evil.example/x'));
    const done = await evil.submit(login, 'form[action="/login"]', { email: dev.email, password: dev.password });
    expect(done.location).toBe(url('/settings/connected-apps'));
  });

  it('refuses form posts without the CSRF token, and signed-out posts', async () => {
    const browser = await signIn(dev);
    const forged = await browser.request(url('/settings/developer/oauth-clients'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=X&kind=public&redirect_uris=https%3A%2F%2Fa.example%2Fcb&scope=PROFILE_READ&csrf=forged',
    });
    expect(forged.status).toBe(403);
    const anonymous = await new Browser().request(url('/settings/connected-apps/x/revoke'), { method: 'POST' });
    expect(anonymous.status).toBe(401);
    expect(await server.pg.db('oauth_clients').where('name', 'X')).toHaveLength(0);
  });
});

describe('developer settings', () => {
  it('registers a client as pending and shows its secret exactly once', async () => {
    const browser = await signIn(dev);
    const shown = await register(browser, { name: 'Dev Calendar', kind: 'confidential', redirect_uris: `${REDIRECT}\nhttp://localhost:8080/cb`, scope: ['PROFILE_READ', 'BOOKING_READ'] });
    expect(shown.status).toBe(200);
    expect(shown.headers.get('cache-control')).toBe('no-store');
    expect(shown.html).toContain('you will not see this again');
    const secret = shown.$('#secret').val() as string;
    expect(secret).toMatch(/^spcs_[0-9A-Za-z]{49}$/); // docs/credentials.md

    const list = await browser.get(url('/settings/developer/oauth-clients'));
    expect(list.$('td a').text()).toContain('Dev Calendar');
    expect(list.$('.status').text()).toContain('pending');
    const clientId = list.$('td code').first().text();
    const detail = await browser.get(url(`/settings/developer/oauth-clients/${clientId}`));
    expect(detail.html).not.toContain(secret);
    expect(detail.$('textarea#redirect_uris').text()).toContain('http://localhost:8080/cb');
    expect(detail.$('input[name=scope][checked]').map((_, el) => detail.$(el).val()).get()).toEqual(['BOOKING_READ', 'PROFILE_READ']);
    const row = await server.pg.db('oauth_clients').where('id', clientId).first();
    expect(row).toMatchObject({ status: 'pending', owner_user_id: dev.id });
  });

  it('shows each refusal on the form and creates nothing', async () => {
    const browser = await signIn(dev);
    const before = (await server.pg.db('oauth_clients').count('* as n').first())!.n;
    const cases: Array<[Record<string, string | string[]>, RegExp]> = [
      [{ name: 'A', kind: 'confidential', redirect_uris: REDIRECT }, /at least one scope/],
      [{ name: 'A', kind: 'confidential', redirect_uris: 'http://plain.example/cb', scope: 'PROFILE_READ' }, /https/],
      [{ name: 'A', kind: 'confidential', redirect_uris: 'https://*.example.com/cb', scope: 'PROFILE_READ' }, /matched exactly/],
      [{ name: 'A', kind: 'confidential', redirect_uris: Array.from({ length: 11 }, (_, i) => `${REDIRECT}${i}`).join('\n'), scope: 'PROFILE_READ' }, /at most 10/i],
      [{ name: 'A', kind: 'confidential', redirect_uris: REDIRECT, scope: 'ADMIN_ALL' }, /unknown scope/i],
      [{ name: '', kind: 'confidential', redirect_uris: REDIRECT, scope: 'PROFILE_READ' }, /name/],
      [{ name: 'A', kind: 'robot', redirect_uris: REDIRECT, scope: 'PROFILE_READ' }, /kind/],
    ];
    for (const [fields, reason] of cases) {
      const res = await register(browser, fields);
      expect(res.status).toBe(400);
      expect(res.$('.alert').text()).toMatch(reason);
      expect(res.$('input#name').val()).toBe(fields.name); // the form keeps what was typed
    }
    expect((await server.pg.db('oauth_clients').count('* as n').first())!.n).toBe(before);
  });

  it("lets only the owner see and change a client, and authorize it while it is pending", async () => {
    const devBrowser = await signIn(dev);
    await register(devBrowser, { name: 'Owner Only', kind: 'confidential', redirect_uris: REDIRECT, scope: 'PROFILE_READ' });
    const clientId = (await server.pg.db('oauth_clients').where('name', 'Owner Only').first()).id as string;

    const otherBrowser = await signIn(other);
    expect((await otherBrowser.get(url(`/settings/developer/oauth-clients/${clientId}`))).status).toBe(404);
    const csrf = (await otherBrowser.get(url('/settings/developer/oauth-clients'))).$('input[name=csrf]').val() as string;
    const post = (path: string) =>
      otherBrowser.request(url(path), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ csrf, redirect_uris: 'https://evil.example/cb', scope: 'PROFILE_READ' }).toString() });
    expect((await post(`/settings/developer/oauth-clients/${clientId}`)).status).toBe(404);
    expect((await post(`/settings/developer/oauth-clients/${clientId}/secrets`)).status).toBe(404);
    expect((await server.pg.db('oauth_client_redirect_uris').where('client_id', clientId).pluck('uri'))).toEqual([REDIRECT]);

    // The owner tries the pending client with their own account; nobody else can.
    const back = await authorize(new Browser(), server.url, { client_id: clientId, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, dev);
    expect(back.searchParams.get('code')).toBeTruthy();
    const browser = new Browser();
    let page = await browser.follow(authorizeUrl(server.url, { client_id: clientId, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }), server.url);
    page = await browser.submit(page, 'form:has(input[name=password])', { email: other.email, password: other.password });
    page = await browser.follow(page.location!, server.url);
    expect(page.status).toBe(403);
    expect(page.location).toBeUndefined();
    expect(page.html).toContain('waiting for review');
  });

  it('replaces one of ten redirect URIs and the scopes in one step, and a refused edit changes nothing', async () => {
    const browser = await signIn(dev);
    const ten = Array.from({ length: 10 }, (_, i) => `https://ten.example.com/cb${i}`);
    await register(browser, { name: 'Ten URIs', kind: 'public', redirect_uris: ten.join('\n'), scope: ['PROFILE_READ'] });
    const clientId = (await server.pg.db('oauth_clients').where('name', 'Ten URIs').first()).id as string;
    const detailUrl = url(`/settings/developer/oauth-clients/${clientId}`);
    const stored = async () => ({
      scopes: (await server.pg.db('oauth_clients').where('id', clientId).first()).scopes,
      uris: await server.pg.db('oauth_client_redirect_uris').where('client_id', clientId).orderBy('position').pluck('uri'),
    });
    const replaced = [...ten.slice(0, 9), 'https://ten.example.com/new'];
    const form = async () => browser.get(detailUrl);
    const saved = await browser.submit(await form(), 'form:has(textarea) button[type=submit]', { redirect_uris: replaced.join('\n'), scope: 'BOOKING_READ' });
    expect(saved.status, saved.$('.alert').text()).toBe(303);
    expect(await stored()).toEqual({ scopes: ['BOOKING_READ'], uris: replaced });

    // A scope change beside an invalid redirect URI: refused as a whole, nothing half-written.
    const refused = await browser.submit(await form(), 'form:has(textarea) button[type=submit]', { redirect_uris: [...replaced.slice(0, 9), 'http://not-loopback.example.com/cb'].join('\n'), scope: 'PROFILE_READ' });
    expect(refused.status).toBe(400);
    expect(await stored()).toEqual({ scopes: ['BOOKING_READ'], uris: replaced });
  });

  it('rotates secrets from the client page: at most two, revoke with confirmation', async () => {
    const browser = await signIn(dev);
    const first = await register(browser, { name: 'Rotator', kind: 'confidential', redirect_uris: REDIRECT, scope: 'PROFILE_READ' });
    const oldSecret = first.$('#secret').val() as string;
    const client = await server.pg.db('oauth_clients').where('name', 'Rotator').first();
    const detailUrl = url(`/settings/developer/oauth-clients/${client.id}`);

    let detail = await browser.get(detailUrl);
    const second = await browser.submit(detail, 'form[action$="/secrets"] button');
    expect(second.status).toBe(200);
    const newSecret = second.$('#secret').val() as string;
    expect(newSecret).not.toBe(oldSecret);
    detail = await browser.get(detailUrl);
    expect(detail.$('form[action$="/secrets"] button').attr('disabled')).toBeDefined();
    const refused = await after(browser, await browser.submit(detail, 'form[action$="/secrets"] button'));
    expect(refused.$('.alert').text()).toContain('2 active secrets');

    const confirm = await browser.get(new URL(detail.$('a:contains("Revoke")').first().attr('href')!, server.url).href);
    expect(confirm.$('h1').text()).toContain('Revoke secret');
    const revoked = await after(browser, await browser.submit(confirm, 'button:contains("Revoke the secret")'));
    expect(revoked.$('.notice').text()).toContain('Secret revoked');
    expect(revoked.$('table.stack tbody tr')).toHaveLength(1);
  });
});

describe('admin review and pending changes', () => {
  it('is for administrators only', async () => {
    expect((await (await signIn(dev)).get(url('/admin/oauth-clients'))).status).toBe(403);
    expect((await (await signIn(admin)).get(url('/admin/oauth-clients'))).status).toBe(200);
  });

  it('lists pending clients first, approves, rejects with a reason, suspends and reinstates', async () => {
    const devBrowser = await signIn(dev);
    await register(devBrowser, { name: 'Review Me', kind: 'public', redirect_uris: 'com.example.reviewme:/cb', scope: 'PROFILE_READ' });
    await register(devBrowser, { name: 'Reject Me', kind: 'public', redirect_uris: 'com.example.rejectme:/cb', scope: 'PROFILE_READ' });
    const browser = await signIn(admin);
    let page = await browser.get(url('/admin/oauth-clients'));
    const statusesOf = (p: Page) => p.$('tr.item .status').map((_, el) => p.$(el).text()).get();
    // The pending queue is the default tab; "all" lists pending first, then approved, suspended, rejected.
    expect(page.$('.tabs a[aria-current=page]').text()).toContain('Pending');
    expect(new Set(statusesOf(page))).toEqual(new Set(['pending']));

    const item = (name: string) => `.item:has(h3:contains("${name}"))`;
    page = await after(browser, await browser.submit(page, `${item('Review Me')} button[value=approve]`));
    expect(page.$('.notice').text()).toContain('Review Me: approved');
    const statuses = statusesOf(await browser.get(url('/admin/oauth-clients?status=all')));
    expect(statuses).toContain('approved');
    expect(statuses.slice(statuses.findIndex((s) => s !== 'pending'))).not.toContain('pending');

    const noReason = await after(browser, await browser.submit(page, `${item('Reject Me')} button[value=reject]`));
    expect(noReason.$(`${item('Reject Me')} .alert`).text()).toContain('reason');
    page = await after(browser, await browser.submit(noReason, `${item('Reject Me')} button[value=reject]`, { reason: 'Not a real app' }));
    expect(page.$('.notice').text()).toContain('Reject Me: rejected');

    // Suspending asks for confirmation on a page of its own; reinstating does not.
    const approved = await browser.get(url('/admin/oauth-clients?status=approved'));
    const confirm = await browser.get(url(approved.$(`${item('Review Me')} a:contains("Suspend")`).attr('href')!));
    page = await after(browser, await browser.submit(confirm, 'button:contains("Suspend Review Me")', { reason: 'abuse' }));
    expect(page.$('.notice').text()).toContain('Review Me: suspended');
    page = await browser.get(url('/admin/oauth-clients?status=suspended'));
    expect(page.$(`${item('Review Me')} .status`).text()).toBe('suspended');
    page = await after(browser, await browser.submit(page, `${item('Review Me')} button[value=reinstate]`));
    expect(page.$('.notice').text()).toContain('Review Me: reinstated');
    expect(await server.pg.db('oauth_clients').where('name', 'Review Me').first()).toMatchObject({ status: 'approved' });
    const trail = await server.pg.db('audit_events').where('action', 'client.rejected').first();
    expect(trail).toMatchObject({ actor: `user:${admin.id}`, details: { reason: 'Not a real app' } });
  });

  it('holds widening changes of an approved client for review while narrowing applies at once', async () => {
    const devBrowser = await signIn(dev);
    const created = await register(devBrowser, { name: 'Growing App', kind: 'confidential', redirect_uris: `${REDIRECT}\nhttps://app.example.com/old`, scope: ['PROFILE_READ', 'BOOKING_READ'] });
    const secret = created.$('#secret').val() as string;
    const clientId = (await server.pg.db('oauth_clients').where('name', 'Growing App').first()).id as string;
    const adminBrowser = await signIn(admin);
    let review = await adminBrowser.get(url('/admin/oauth-clients'));
    await adminBrowser.submit(review, `.item:has(h3:contains("Growing App")) button[value=approve]`);

    // A user authorizes the approved configuration.
    const tokens = (await tokenRequest(server.url, {
      grant_type: 'authorization_code',
      code: (await authorize(new Browser(), server.url, { client_id: clientId, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, other)).searchParams.get('code')!,
      redirect_uri: REDIRECT,
      client_id: clientId,
      client_secret: secret,
    })).body;

    // The owner adds a redirect URI and a scope (widening) and removes one of each (narrowing).
    const detailUrl = url(`/settings/developer/oauth-clients/${clientId}`);
    const detail = await devBrowser.get(detailUrl);
    const saved = await after(devBrowser, await devBrowser.submit(detail, 'form:has(textarea) button[type=submit]', { redirect_uris: `${REDIRECT}\nhttps://app.example.com/new`, scope: 'PROFILE_READ' }));
    expect(saved.$('.notice').first().text()).toContain('wait for review');
    expect(saved.html).toContain('https://app.example.com/new');
    const row = await server.pg.db('oauth_clients').where('id', clientId).first();
    expect(row.scopes).toEqual(['PROFILE_READ']); // BOOKING_READ removed at once
    expect(await server.pg.db('oauth_client_redirect_uris').where('client_id', clientId).pluck('uri')).toEqual([REDIRECT]);
    // The new URI does not work yet; the approved configuration still does, for existing users too.
    const early = await new Browser().get(authorizeUrl(server.url, { client_id: clientId, redirect_uri: 'https://app.example.com/new', scope: 'PROFILE_READ', state: 's' }));
    expect(early.status).toBe(400);
    expect((await getMe(server.url, tokens.access_token as string)).status).toBe(200);

    review = await adminBrowser.get(url('/admin/oauth-clients'));
    expect(review.$('.item:has(h3:contains("Growing App"))').first().text()).toContain('Add redirect URI https://app.example.com/new');
    const decided = await after(adminBrowser, await adminBrowser.submit(review, '.item:has(h3:contains("Growing App")) button[value=approve]'));
    expect(decided.$('.notice').text()).toContain('change approved');
    const late = await new Browser().follow(authorizeUrl(server.url, { client_id: clientId, redirect_uri: 'https://app.example.com/new', scope: 'PROFILE_READ', state: 's' }), server.url);
    expect(late.status).toBe(200); // the sign-in page: the new redirect URI is accepted now
  });
});

describe('apps with access', () => {
  it('lists the apps a user authorized and revokes one at once', async () => {
    const adminBrowser = await signIn(admin);
    const devBrowser = await signIn(dev);
    const created = await register(devBrowser, { name: 'Connected One', kind: 'confidential', redirect_uris: REDIRECT, scope: ['PROFILE_READ', 'SCHEDULE_READ'] });
    const secret = created.$('#secret').val() as string;
    const clientId = (await server.pg.db('oauth_clients').where('name', 'Connected One').first()).id as string;
    await adminBrowser.submit(await adminBrowser.get(url('/admin/oauth-clients')), '.item:has(h3:contains("Connected One")) button[value=approve]');
    const code = (await authorize(new Browser(), server.url, { client_id: clientId, redirect_uri: REDIRECT, scope: 'PROFILE_READ SCHEDULE_READ', state: 's' }, other)).searchParams.get('code')!;
    const tokens = (await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: clientId, client_secret: secret })).body;

    const browser = await signIn(other);
    const page = await browser.get(url('/settings/connected-apps'));
    const item = page.$('.item:has(h2:contains("Connected One"))');
    expect(item.text()).toContain('See your profile');
    expect(item.text()).toContain('See your schedules');
    const confirm = await browser.get(url(page.$('.item:has(h2:contains("Connected One")) a:contains("Revoke access")').attr('href')!));
    expect(confirm.$('h1').text()).toBe('Revoke access of Connected One?');
    const done = await after(browser, await browser.submit(confirm, 'button:contains("Revoke access")'));
    expect(done.$('.notice').text()).toContain('Access revoked for Connected One');
    expect(done.$('.item:has(h2:contains("Connected One"))')).toHaveLength(0);
    expect((await getMe(server.url, tokens.access_token as string)).status).toBe(401);
    const refresh = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string, client_id: clientId, client_secret: secret });
    expect(refresh.body.error).toBe('invalid_grant');

    // Nothing to revoke for a client the user never authorized; another user's page is their own.
    const csrf = done.$('input[name=csrf]').val() as string;
    const none = await after(browser, await browser.request(url(`/settings/connected-apps/${clientId}/revoke`), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `csrf=${csrf}` }));
    expect(none.$('.alert').text()).toContain('no access');
  });
});
