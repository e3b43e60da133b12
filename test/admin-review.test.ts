// The admin review table at scale (tabs with counts, search, paging, the suspend confirmation,
// refusals on their item) and the apps with access page (revoke confirmation, last used), over
// real HTTP on real PostgreSQL and Redis.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser, type Page } from './support/browser.ts';
import { getMe, tokenRequest, type TestUser } from './support/oauth.ts';
import { approvedClient, newUser, operator, REDIRECT, tokensFor } from './support/fixtures.ts';
import { clientsSetStatus, usersSetAdmin } from '../src/admin/commands.ts';
import { addRedirectUri, createClient, findClient } from '../src/clients/service.ts';
import { editClient } from '../src/clients/changes.ts';
import { formatDate } from '../src/dates.ts';
import { eventually } from './support/eventually.ts';

let server: TestServer;
let admin: TestUser & { id: number };
let dev: TestUser & { id: number };
let person: TestUser & { id: number };
let other: TestUser & { id: number };

beforeAll(async () => {
  server = await startTestServer('redis', { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent' });
  [admin, dev, person, other] = await Promise.all([newUser(server, 'Admin'), newUser(server, 'Dev'), newUser(server, 'Person'), newUser(server, 'Other')]);
  await usersSetAdmin(operator(server), admin.email);
});
afterAll(() => server?.close());

const url = (path: string) => `${server.url}${path}`;
const READABLE_DATE = /\b\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4}, \d{2}:\d{2} UTC\b/;

async function signIn(user: TestUser): Promise<Browser> {
  const browser = new Browser();
  const login = await browser.get(url('/login'));
  expect((await browser.submit(login, 'form[action="/login"]', { email: user.email, password: user.password })).status).toBe(303);
  return browser;
}

async function after(browser: Browser, res: Page): Promise<Page> {
  expect(res.status, res.html.slice(0, 300)).toBe(303);
  return browser.get(res.location!);
}

function post(browser: Browser, path: string, fields: Record<string, string>): Promise<Page> {
  return browser.request(url(path), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
}

const csrfOf = (page: Page) => page.$('input[name=csrf]').first().val() as string;
const tag = () => randomBytes(3).toString('hex');
const newClient = (name: string, ownerUserId: number | undefined = dev.id) =>
  createClient(server.system, { name, kind: 'confidential', legacy: false, scopes: ['PROFILE_READ'], redirectUris: [REDIRECT], ...(ownerUserId ? { ownerUserId } : {}) }, { actor: 'test' }).then((c) => c.client.clientId);
const statusOf = async (clientId: string) => (await findClient(server.system.db, clientId))!.status;
const rowOf = (page: Page, clientId: string) => page.$(`tr[id="client-${clientId}"]`);
const countsOf = (page: Page) => Object.fromEntries(page.$('.tabs a').map((_, a) => [[page.$(a).text().trim().split(/\s+/)[0]!.toLowerCase(), page.$(a).find('.count').text()]]).get());

describe('the review table', () => {
  it('has status tabs with counts, the pending queue first, owners by e-mail and readable dates', async () => {
    const t = tag();
    const ids = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((n) => newClient(`Tabs ${t} ${n}`)));
    for (const id of ids.slice(3, 5)) await clientsSetStatus(operator(server), id, 'approved');
    await clientsSetStatus(operator(server), ids[5]!, 'rejected');
    await clientsSetStatus(operator(server), ids[6]!, 'approved');
    await clientsSetStatus(operator(server), ids[6]!, 'suspended');
    const browser = await signIn(admin);

    const page = await browser.get(url(`/admin/oauth-clients?q=${encodeURIComponent(`Tabs ${t}`)}`));
    expect(page.status).toBe(200);
    expect(countsOf(page)).toEqual({ pending: '3', approved: '2', rejected: '1', suspended: '1', all: '7' });
    expect(page.$('.tabs a[aria-current=page]').text()).toContain('Pending');
    expect(page.$('tbody tr')).toHaveLength(3);
    const row = rowOf(page, ids[0]!);
    expect(row.find('td[data-label=Owner]').text()).toBe(dev.email);
    expect(row.find('td[data-label=Registered]').text()).toMatch(READABLE_DATE);
    expect(page.html).not.toMatch(/user:\d/);

    const suspended = await browser.get(url(`/admin/oauth-clients?status=suspended&q=${encodeURIComponent(`Tabs ${t}`)}`));
    expect(suspended.$('tbody tr').map((_, tr) => suspended.$(tr).attr('id')).get()).toEqual([`client-${ids[6]}`]);
    expect(rowOf(suspended, ids[6]!).find('button[value=reinstate]')).toHaveLength(1);
    const all = await browser.get(url(`/admin/oauth-clients?status=all&q=${encodeURIComponent(`Tabs ${t}`)}`));
    expect(all.$('tbody .status').map((_, s) => all.$(s).text()).get()).toEqual(['pending', 'pending', 'pending', 'approved', 'approved', 'suspended', 'rejected']);
  });

  it('searches by owner e-mail, name and client id, literally', async () => {
    const owner = await newUser(server, 'Searched Owner');
    const t = tag();
    const [mine, theirs] = await Promise.all([newClient(`Search ${t} one`, owner.id), newClient(`Search ${t} two`)]);
    const browser = await signIn(admin);
    const ids = (page: Page) => page.$('tbody tr').map((_, tr) => page.$(tr).attr('id')).get();

    const byEmail = await browser.get(url(`/admin/oauth-clients?status=all&q=${encodeURIComponent(owner.email.toUpperCase())}`));
    expect(ids(byEmail)).toEqual([`client-${mine}`]);
    expect(byEmail.$('input#q').val()).toBe(owner.email.toUpperCase());
    expect(ids(await browser.get(url(`/admin/oauth-clients?q=${encodeURIComponent(`search ${t} TWO`)}`)))).toEqual([`client-${theirs}`]);
    expect(ids(await browser.get(url(`/admin/oauth-clients?q=${theirs.slice(4, 20)}`)))).toEqual([`client-${theirs}`]);
    // LIKE wildcards are searched for as they are: "%" matches no client here.
    const wildcard = await browser.get(url('/admin/oauth-clients?status=all&q=%25'));
    expect(wildcard.status).toBe(200);
    expect(wildcard.$('tbody tr')).toHaveLength(0);
    expect(countsOf(wildcard).all).toBe('0');

    for (const bad of ['status=archived', 'page=0', 'page=abc', 'q=%00', `q=${'x'.repeat(201)}`, 'status=pending&status=all']) {
      const res = await browser.get(url(`/admin/oauth-clients?${bad}`));
      expect(res.status, bad).toBe(400);
      expect(res.html, bad).not.toContain(mine);
    }
  });

  it('pages 10,000 clients fifty at a time, quickly', async () => {
    const bulk = await newUser(server, 'Bulk Owner');
    await server.pg.db.raw(
      `insert into oauth_clients (id, name, kind, status, owner_user_id, created_at)
       select 'bulk-' || lpad(n::text, 5, '0'), 'Bulk app ' || lpad(n::text, 5, '0'), 'public', 'pending', ?, now() - (10000 - n) * interval '1 second'
       from generate_series(1, 10000) as n`,
      [bulk.id],
    );
    const browser = await signIn(admin);
    const q = encodeURIComponent(bulk.email);
    const started = performance.now();
    const first = await browser.get(url(`/admin/oauth-clients?q=${q}`));
    const elapsed = performance.now() - started;
    expect(first.status).toBe(200);
    expect(elapsed).toBeLessThan(2000);
    expect(countsOf(first).pending).toBe('10,000');
    expect(first.$('tbody tr')).toHaveLength(50);
    expect(first.$('tbody h3').first().text()).toBe('Bulk app 00001'); // the queue: oldest first
    expect(first.$('.pager').text()).toContain('Showing 1–50 of 10,000');
    const next = first.$('.pager a[rel=next]').attr('href')!;
    expect(next).toBe(`/admin/oauth-clients?q=${encodeURIComponent(bulk.email).replace(/%20/g, '+')}&page=2`);
    const second = await browser.get(url(next));
    expect(second.$('tbody h3').first().text()).toBe('Bulk app 00051');

    const last = await browser.get(url(`/admin/oauth-clients?q=${q}&page=200`));
    expect(last.$('tbody h3').last().text()).toBe('Bulk app 10000');
    expect(last.$('.pager a[rel=next]')).toHaveLength(0);
    const beyond = await browser.get(url(`/admin/oauth-clients?q=${q}&page=201`));
    expect(beyond.status).toBe(200);
    expect(beyond.$('tbody tr')).toHaveLength(0);
    expect(beyond.$('.pager a[rel=prev]').attr('href')).toContain('page=200');

    // Without a search too: every pending client counted, one page rendered.
    const everything = await browser.get(url('/admin/oauth-clients'));
    expect(Number(countsOf(everything).pending!.replace(/,/g, ''))).toBeGreaterThanOrEqual(10_000);
    expect(everything.$('tbody tr')).toHaveLength(50);
    await server.pg.db('oauth_clients').where('owner_user_id', bulk.id).delete();
  });
});

describe('decisions on the table', () => {
  it('suspends only from the confirmation page, which names the client; then every token stops working', async () => {
    const name = `Suspended ${tag()}`;
    const client = await approvedClient(server, ['PROFILE_READ'], name);
    const tokens = await tokensFor(server, client, person, 'PROFILE_READ');
    const browser = await signIn(admin);
    const view = `?status=approved&q=${encodeURIComponent(name).replace(/%20/g, '+')}`;
    const table = await browser.get(url(`/admin/oauth-clients${view}`));
    const row = rowOf(table, client.client_id);
    expect(row.find('td[data-label=Owner]').text()).toBe('created by an operator');

    // A direct POST without the confirmation field only leads to the confirmation page.
    const suspendLink = row.find('a:contains("Suspend")').attr('href')!;
    const version = new URL(suspendLink, server.url).searchParams.get('version')!;
    const direct = await post(browser, `/admin/oauth-clients/${client.client_id}/status`, { csrf: csrfOf(table), action: 'suspend', version, reason: 'abuse' });
    expect(direct.status).toBe(303);
    expect(new URL(direct.location!).pathname).toBe(`/admin/oauth-clients/${client.client_id}/suspend`);
    expect(await statusOf(client.client_id)).toBe('approved');
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);

    const confirm = await browser.get(url(suspendLink));
    expect(confirm.$('h1').text()).toBe(`Suspend ${name}?`);
    expect(confirm.$('main').text()).toContain("Every user's access to this app ends at once");
    expect(confirm.$('a:contains("Cancel")').attr('href')).toBe(`/admin/oauth-clients${view}`);
    const done = await after(browser, await browser.submit(confirm, `button:contains("Suspend ${name}")`, { reason: 'abuse' }));
    expect(done.url).toBe(url(`/admin/oauth-clients${view}`));
    expect(done.$('.notice').text()).toContain(`${name}: suspended`);
    expect(await statusOf(client.client_id)).toBe('suspended');
    expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
    const refresh = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client });
    expect(refresh.body.error).toBe('invalid_client'); // a suspended client gets no tokens at all
    const trail = await server.pg.db('audit_events').where({ action: 'client.suspended', client_id: client.client_id }).first();
    expect(trail).toMatchObject({ actor: `user:${admin.id}`, details: { reason: 'abuse' } });
  });

  it('shows a refusal on the item it concerns: a stale version, a decision this status does not allow', async () => {
    const name = `Stale ${tag()}`;
    const id = await newClient(name);
    const browser = await signIn(admin);
    const view = `/admin/oauth-clients?q=${encodeURIComponent(name)}`;
    const table = await browser.get(url(view));
    await addRedirectUri(server.system, id, 'https://app.example.com/other', { actor: 'test' }); // the owner changes it meanwhile

    const refused = await after(browser, await browser.submit(table, `tr[id="client-${id}"] button[value=approve]`));
    const row = rowOf(refused, id);
    expect(row.hasClass('refused')).toBe(true);
    expect(row.find('.alert').text()).toContain('changed since you opened the page');
    expect(refused.$('tr.refused')).toHaveLength(1);
    expect(await statusOf(id)).toBe('pending');

    // Suspending a pending client, asked from the approved tab: refused, shown on the client itself.
    const notAllowed = await after(browser, await browser.get(url(`/admin/oauth-clients/${id}/suspend?back=status%3Dapproved`)));
    expect(notAllowed.$('.tabs a[aria-current=page]').text()).toContain('Approved');
    expect(rowOf(notAllowed, id).find('.alert').text()).toContain('only an approved client can be suspended; this one is pending');
    const confirmed = await after(browser, await post(browser, `/admin/oauth-clients/${id}/status`, { csrf: csrfOf(notAllowed), action: 'suspend', confirm: 'yes', version: rowOf(notAllowed, id).find('input[name=version]').val() as string }));
    expect(rowOf(confirmed, id).find('.alert').text()).toContain('a pending client cannot become suspended');
    expect(await statusOf(id)).toBe('pending');
    const unknown = await after(browser, await post(browser, `/admin/oauth-clients/${id}/status`, { csrf: csrfOf(notAllowed), action: 'delete' }));
    expect(rowOf(unknown, id).find('.alert').text()).toContain('unknown action');
  });

  it('keeps pending changes of approved clients reviewable, with who asked by e-mail', async () => {
    const name = `Growing ${tag()}`;
    const id = await newClient(name);
    await clientsSetStatus(operator(server), id, 'approved');
    await editClient(server.system, id, { scopes: ['PROFILE_READ', 'BOOKING_READ'], redirectUris: [REDIRECT] }, { actor: `user:${dev.id}` });
    const browser = await signIn(admin);
    const review = await browser.get(url('/admin/oauth-clients'));
    const change = review.$(`li.item:has(h3:contains("${name}"))`);
    expect(change.text()).toContain('Add scope BOOKING_READ');
    expect(change.text()).toContain(`Requested by ${dev.email}`);
    expect(change.text()).toMatch(READABLE_DATE);
    const approved = await after(browser, await browser.submit(review, `li.item:has(h3:contains("${name}")) button[value=approve]`));
    expect(approved.$('.notice').text()).toContain(`${name}: change approved`);
    expect((await findClient(server.system.db, id))!.scopes).toContain('BOOKING_READ');
  });

  it('is for administrators only: the table, the confirmation page and the decisions', async () => {
    const id = await newClient(`Guarded ${tag()}`);
    await clientsSetStatus(operator(server), id, 'approved');
    const browser = await signIn(dev);
    const csrf = csrfOf(await browser.get(url('/settings/connected-apps')));
    expect((await browser.get(url('/admin/oauth-clients?status=all'))).status).toBe(403);
    expect((await browser.get(url(`/admin/oauth-clients/${id}/suspend`))).status).toBe(403);
    expect((await post(browser, `/admin/oauth-clients/${id}/status`, { csrf, action: 'suspend', confirm: 'yes' })).status).toBe(403);
    expect((await new Browser().get(url(`/admin/oauth-clients/${id}/suspend`))).status).toBe(303);
    expect(await statusOf(id)).toBe('approved');
  });
});

describe('apps with access', () => {
  it('confirms before revoking, names the app, and never reaches another user\'s access', async () => {
    const client = await approvedClient(server, ['PROFILE_READ'], 'Calendar Sync Pro');
    const tokens = await tokensFor(server, client, person, 'PROFILE_READ');

    // Another user, with a valid form token, cannot revoke the person's access.
    const intruder = await signIn(other);
    const intruderCsrf = csrfOf(await intruder.get(url('/settings/connected-apps')));
    const foreign = await after(intruder, await post(intruder, `/settings/connected-apps/${client.client_id}/revoke`, { csrf: intruderCsrf, confirm: 'yes' }));
    expect(foreign.$('.alert').text()).toContain('no access');
    expect((await intruder.get(url(`/settings/connected-apps/${client.client_id}/revoke`))).status).toBe(303);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);

    const browser = await signIn(person);
    const list = await browser.get(url('/settings/connected-apps'));
    const link = list.$('.item:has(h2:contains("Calendar Sync Pro")) a:contains("Revoke access")').attr('href')!;
    const confirm = await browser.get(url(link));
    expect(confirm.$('h1').text()).toBe('Revoke access of Calendar Sync Pro?');
    // Without the confirmation field the POST only leads back to the confirmation page.
    const direct = await post(browser, link, { csrf: csrfOf(confirm) });
    expect(direct.location).toBe(url(link));
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);

    const done = await after(browser, await browser.submit(confirm, 'button:contains("Revoke access")'));
    expect(done.$('.notice').text()).toContain('Access revoked for Calendar Sync Pro');
    expect(done.$('.item:has(h2:contains("Calendar Sync Pro"))')).toHaveLength(0);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
    expect((await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client })).body.error).toBe('invalid_grant');
  });

  it('shows when each app last used its access: set by the token endpoint at most once a minute, never by /v2/me', async () => {
    const client = await approvedClient(server, ['PROFILE_READ'], 'Last Used App');
    let tokens = await tokensFor(server, client, person, 'PROFILE_READ');
    const lastUsed = async () => (await server.pg.db('user_grants').where({ account_id: String(person.id), client_id: client.client_id }).first()).last_used_at as Date | null;
    await expect.poll(lastUsed).not.toBeNull(); // the code exchange
    const browser = await signIn(person);
    const shown = async () => (await browser.get(url('/settings/connected-apps'))).$('.item:has(h2:contains("Last Used App")) .last-used').text();
    expect(await shown()).toBe(`Last used ${formatDate((await lastUsed())!)}`);
    expect((await browser.get(url('/settings/connected-apps'))).$('main').text()).toContain('last signed you in or refreshed its access');

    const long = new Date('2020-01-02T03:04:00Z');
    await server.pg.db('user_grants').where({ account_id: String(person.id), client_id: client.client_id }).update({ last_used_at: long });
    // A refresh within the minute of the last write writes nothing; nor do API calls with the token.
    const refresh = () => tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client });
    let res = await refresh();
    expect(res.status).toBe(200);
    tokens = res.body as typeof tokens;
    for (let i = 0; i < 3; i++) expect((await getMe(server.url, tokens.access_token)).status).toBe(200);
    // Nothing written, seen once a use recorded after them is: another user's first use of the app
    // goes in the same batch as a write they caused, or a later one.
    const marker = await newUser(server, 'Marker');
    await tokensFor(server, client, marker, 'PROFILE_READ');
    await eventually(async () => expect((await server.pg.db('user_grants').where({ account_id: String(marker.id), client_id: client.client_id }).first()).last_used_at).not.toBeNull());
    expect(await lastUsed()).toEqual(long);
    expect(await shown()).toBe('Last used 2 Jan 2020, 03:04 UTC');

    // A minute later a refresh records its use.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 61_000, shouldAdvanceTime: true });
    try {
      res = await refresh();
      expect(res.status).toBe(200);
      await expect.poll(async () => (await lastUsed())!.getTime()).toBeGreaterThan(long.getTime());
    } finally {
      vi.useRealTimers();
    }
    expect(await shown()).toBe(`Last used ${formatDate((await lastUsed())!)}`);
  });
});
