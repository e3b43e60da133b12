// Developer settings over real HTTP: the scope grid, refusals beside their fields, the
// how-to-connect panel, the only secret kept, rename before review only, delete with confirmation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { developerPages } from './support/developer-pages.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser, type Page } from './support/browser.ts';
import { authorize, getMe, tokenRequest, type TestUser } from './support/oauth.ts';
import { newUser, operator, REDIRECT } from './support/fixtures.ts';
import { clientsSetStatus, secretsGenerate, secretsRevoke } from '../src/admin/commands.ts';
import { RFC8414_PATH } from '../src/http/paths.ts';

// BASE_URL apart from APP_URL: the panel must put each endpoint on its own host.
const BASE_URL = 'https://api.example.test';
const BASE = '/settings/developer/oauth-clients';

let server: TestServer;
let dev: TestUser & { id: number };
let other: TestUser & { id: number };

beforeAll(async () => {
  server = await startTestServer('redis', { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', BASE_URL });
  [dev, other] = await Promise.all([newUser(server, 'Dev'), newUser(server, 'Other')]);
});
afterAll(() => server?.close());

const { url, signIn, post } = developerPages(() => server.url);
const db = () => server.pg.db;



async function follow(browser: Browser, res: Page): Promise<Page> {
  expect(res.status, res.$('.alert').text() || res.html.slice(0, 300)).toBe(303);
  return browser.get(res.location!);
}

async function register(browser: Browser, name: string, kind = 'confidential', scopes = ['PROFILE_READ']) {
  const res = await post(browser, BASE, { name, kind, redirect_uris: REDIRECT, scope: scopes });
  expect([200, 303]).toContain(res.status);
  const row = await db()('oauth_clients').where('name', name).first();
  return { id: row.id as string, secret: res.$('#secret').val() as string | undefined };
}

const stored = async (id: string) => db()('oauth_clients').where('id', id).first();
const activeSecretIds = async (id: string) => db()('oauth_client_secrets').where('client_id', id).whereNull('revoked_at').orderBy('id').pluck('id');

describe('the scope grid', () => {
  it('shows one table per audience with a view and a change column, and posts the ticked scopes', async () => {
    const browser = await signIn(dev);
    const form = await browser.get(url(`${BASE}/new`));
    expect(form.$('.scope-table caption').map((_, el) => form.$(el).text()).get()).toEqual(['Your account', 'Your teams', 'Everyone in your organization']);
    expect(form.$('.scope-table thead').first().text()).toMatch(/Resource\s*View\s*Change/);
    expect(form.$('tr:has(#scope-BOOKING_READ) th').text()).toBe('Bookings');
    expect(form.$('tr:has(#scope-BOOKING_READ) #scope-BOOKING_WRITE')).toHaveLength(1);
    // Every scope of the catalogue once, each with its own label; no empty header cell.
    const boxes = form.$('input[name=scope]');
    expect(boxes).toHaveLength(28);
    boxes.each((_, el) => {
      const id = form.$(el).attr('id')!;
      expect(id).toBe(`scope-${form.$(el).val()}`);
      expect(form.$(`label[for="${id}"]`).text()).toContain(form.$(el).val() as string);
    });
    form.$('th').each((_, el) => expect(form.$(el).text().trim()).not.toBe(''));

    for (const name of ['TEAM_BOOKING_WRITE', 'ORG_PROFILE_READ', 'PROFILE_READ']) form.$(`#scope-${name}`).attr('checked', '');
    // What a browser sends for the ticked boxes of the grid: name=scope, value=the scope.
    const ticked = form.$('form:has(#scope-PROFILE_READ) input[name=scope][checked]').map((_, el) => form.$(el).val() as string).get();
    const done = await post(browser, BASE, { name: 'Grid App', kind: 'confidential', redirect_uris: REDIRECT, scope: ticked });
    expect(done.status, done.$('.alert').text()).toBe(200);
    expect((await db()('oauth_clients').where('name', 'Grid App').first()).scopes.sort()).toEqual(['ORG_PROFILE_READ', 'PROFILE_READ', 'TEAM_BOOKING_WRITE']);
  });
});

describe('refusals beside their fields', () => {
  it('marks each refused field with aria-invalid and its message, keeps what was typed, and creates nothing', async () => {
    const browser = await signIn(dev);
    const before = await db()('oauth_clients').count('* as n').first();
    const res = await post(browser, BASE, { name: '', kind: 'public', redirect_uris: 'http://plain.example/cb' });
    expect(res.status).toBe(400);
    const described = (selector: string) => {
      const el = res.$(selector);
      expect(el.attr('aria-invalid'), selector).toBe('true');
      return res.$(`#${el.attr('aria-describedby')}`).text();
    };
    expect(described('#name')).toMatch(/name must be 1 to 100 characters/);
    expect(described('#redirect_uris')).toMatch(/must use https/);
    expect(described('#scopes')).toBe('Choose at least one scope.');
    expect(res.html).not.toContain('--legacy');
    expect(res.$('textarea#redirect_uris').text()).toBe('http://plain.example/cb');
    expect(res.$('#kind-public').attr('checked')).toBeDefined();
    // The summary links each message to its field.
    expect(res.$('.alert a[href="#redirect_uris"]').text()).toMatch(/https/);
    expect(await db()('oauth_clients').count('* as n').first()).toEqual(before);

    // One field wrong: only it is marked, and the ticked scopes stay ticked.
    const one = await post(browser, BASE, { name: 'Kept Name', kind: 'confidential', redirect_uris: 'https://*.example.com/cb', scope: ['BOOKING_READ', 'ORG_BOOKING_WRITE'] });
    expect(one.status).toBe(400);
    expect(one.$('#name').attr('aria-invalid')).toBeUndefined();
    expect(one.$('#name').val()).toBe('Kept Name');
    expect(one.$('#redirect_uris').attr('aria-invalid')).toBe('true');
    expect(one.$('input[name=scope][checked]').map((_, el) => one.$(el).val()).get()).toEqual(['BOOKING_READ', 'ORG_BOOKING_WRITE']);
  });

  it('marks the settings form of a client the same way, and changes nothing', async () => {
    const browser = await signIn(dev);
    const { id } = await register(browser, 'Settings Errors');
    const res = await post(browser, `${BASE}/${id}`, { redirect_uris: 'not a url' });
    expect(res.status).toBe(400);
    expect(res.$('#redirect_uris').attr('aria-invalid')).toBe('true');
    expect(res.$('#redirect_uris-error').text()).toMatch(/absolute URL/);
    expect(res.$('#scope-error').text()).toBe('Choose at least one scope.');
    expect(res.$('textarea#redirect_uris').text()).toBe('not a url');
    expect((await stored(id)).scopes).toEqual(['PROFILE_READ']);
  });
});

describe('the client page', () => {
  it('shows the client id with a copy button, readable dates and how to connect, from the configuration', async () => {
    const browser = await signIn(dev);
    const { id } = await register(browser, 'Connect Me');
    const page = await browser.get(url(`${BASE}/${id}`));
    expect(page.$('#client-id').text()).toBe(id);
    expect(page.$('button.copy[data-copy-target=client-id]')).toHaveLength(1);
    expect(page.$('script[src="/assets/copy.js"]')).toHaveLength(1);
    const metadata = (await (await fetch(url(RFC8414_PATH))).json()) as Record<string, string>;
    const panel = (term: string) => page.$(`.connect dt:contains("${term}") + dd`).text();
    expect(panel('Authorization endpoint')).toBe(metadata.authorization_endpoint);
    expect(panel('Authorization endpoint').startsWith(server.url)).toBe(true); // APP_URL
    expect(panel('Token endpoint')).toBe(metadata.token_endpoint);
    expect(panel('Token endpoint').startsWith(BASE_URL)).toBe(true);
    expect(panel('Discovery')).toBe(`${BASE_URL}${RFC8414_PATH}`);
    expect(panel('Pushed authorization requests')).toBe(metadata.pushed_authorization_request_endpoint);
    expect(panel('Pushed authorization requests').startsWith(BASE_URL)).toBe(true);
    expect(page.$('.connect .example').text()).toContain(`client_id=${id}`);
    const date = /^\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4}, \d{2}:\d{2} UTC$/;
    expect(page.$('.facts time').text()).toMatch(date);
    expect(page.$('table.stack td[data-label=Created]').text().trim()).toMatch(date);
    page.$('th').each((_, el) => expect(page.$(el).text().trim()).not.toBe(''));
    expect((await browser.get(url(BASE))).$('td[data-label=Registered]').first().text().trim()).toMatch(date);
  });
});

describe('secrets', () => {
  it('refuses to revoke the only active secret on the page, and revokes one of two', async () => {
    const browser = await signIn(dev);
    const { id } = await register(browser, 'Only Secret');
    const [only] = await activeSecretIds(id);
    let page = await browser.get(url(`${BASE}/${id}`));
    expect(page.$('a:contains("Revoke")')).toHaveLength(0);
    const refused = await follow(browser, await post(browser, `${BASE}/${id}/secrets/${only}/revoke`, {}));
    expect(refused.$('.alert').text()).toMatch(/only active secret: generate a new one/);
    expect(await activeSecretIds(id)).toEqual([only]);
    const confirmPage = await follow(browser, await browser.get(url(`${BASE}/${id}/secrets/${only}/revoke`)));
    expect(confirmPage.$('.alert').text()).toMatch(/only active secret/);

    await post(browser, `${BASE}/${id}/secrets`, {});
    const [, second] = await activeSecretIds(id);
    page = await browser.get(url(`${BASE}/${id}`));
    expect(page.$('a:contains("Revoke")')).toHaveLength(2);
    const done = await follow(browser, await post(browser, `${BASE}/${id}/secrets/${only}/revoke`, {}));
    expect(done.$('.notice').text()).toContain('Secret revoked');
    expect(await activeSecretIds(id)).toEqual([second]);
    expect(await activeSecretIds(id)).toHaveLength(1);
  });

  it("numbers a client's secrets from 1, whatever other clients hold, and a secret keeps its number after another is revoked", async () => {
    await register(await signIn(other), 'Secrets Before');
    const browser = await signIn(dev);
    const { id } = await register(browser, 'Numbered Secrets');
    const [first] = await activeSecretIds(id);
    expect(first, 'another client made a secret before: the id is not 1').toBeGreaterThan(1);
    const numbers = async () => {
      const page = await browser.get(url(`${BASE}/${id}`));
      return page.$('td[data-label="Secret"]').map((_, td) => page.$(td).text().trim()).get();
    };
    expect(await numbers()).toEqual(['1']);
    const made = await post(browser, `${BASE}/${id}/secrets`, {});
    expect(made.$('main').text()).toMatch(/· secret 2 ·/);
    expect(await numbers()).toEqual(['1', '2']);
    const [, second] = await activeSecretIds(id);
    expect((await browser.get(url(`${BASE}/${id}/secrets/${second}/revoke`))).$('h1').text()).toBe('Revoke secret 2 of Numbered Secrets?');
    await post(browser, `${BASE}/${id}/secrets/${first}/revoke`, {});
    expect(await numbers()).toEqual(['2']);
  });

  it('generates a secret with a chosen lifetime and shows when each expires; refuses a lifetime it does not offer', async () => {
    const browser = await signIn(dev);
    const { id } = await register(browser, 'Lifetime');
    const made = await post(browser, `${BASE}/${id}/secrets`, { lifetime: '90d' });
    expect(made.status).toBe(200);
    const [, second] = await activeSecretIds(id);
    const expiresAt = (await db()('oauth_client_secrets').where('id', second).first()).expires_at as Date;
    expect(Math.round((expiresAt.getTime() - Date.now()) / 86_400_000)).toBe(90);
    expect(made.$('time').attr('datetime')).toBe(expiresAt.toISOString());
    const page = await browser.get(url(`${BASE}/${id}`));
    expect(page.$('td[data-label="Expires"]').map((_, td) => page.$(td).text().trim()).get()).toEqual(['never', expect.stringMatching(/UTC$/)]);
    await post(browser, `${BASE}/${id}/secrets/${second}/revoke`, {});
    const bad = await follow(browser, await post(browser, `${BASE}/${id}/secrets`, { lifetime: '9999d' }));
    expect(bad.$('.alert').text()).toMatch(/choose one of the offered values/i);
    expect(await activeSecretIds(id)).toHaveLength(1);
  });

  it('rotates with overlap: the new secret once, and when the current one stops working', async () => {
    const browser = await signIn(dev);
    const { id } = await register(browser, 'Rotate');
    const [old] = await activeSecretIds(id);
    const shown = await post(browser, `${BASE}/${id}/secrets/rotate`, { overlap: '1d' });
    expect(shown.status).toBe(200);
    expect(shown.$('#secret').val()).toMatch(/^spcs_[0-9A-Za-z]{49}$/);
    expect(shown.$('main').text()).toContain('current secret (secret 1) keeps working until');
    expect(shown.$('main').text()).toMatch(/· secret 2 ·/);
    const oldExpiry = (await db()('oauth_client_secrets').where('id', old).first()).expires_at as Date;
    expect(Math.round((oldExpiry.getTime() - Date.now()) / 3_600_000)).toBe(24);
    expect(await activeSecretIds(id)).toHaveLength(2);
    // Two active: the rotate form is gone, and a posted one is refused.
    expect((await browser.get(url(`${BASE}/${id}`))).$(`form[action$="/secrets/rotate"]`)).toHaveLength(0);
    const refused = await follow(browser, await post(browser, `${BASE}/${id}/secrets/rotate`, { overlap: '1d' }));
    expect(refused.$('.alert').text()).toMatch(/already has 2 active secrets/);
  });

  it('asks for a confirmation before revoking a secret the app used in the last 10 minutes', async () => {
    const browser = await signIn(dev);
    const { id, secret } = await register(browser, 'Recently Used');
    await clientsSetStatus(operator(server), id, 'approved');
    // Any authenticated request uses the secret (this token is unknown: the answer is inactive).
    const res = await fetch(url('/v2/auth/oauth2/introspect'), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: 'unknown', client_id: id, client_secret: secret! }).toString() });
    expect(res.status).toBe(200);
    await server.system.secretUses.flush();
    const [used] = await activeSecretIds(id);
    await post(browser, `${BASE}/${id}/secrets`, {});
    const confirm = await browser.get(url(`${BASE}/${id}/secrets/${used}/revoke`));
    expect(confirm.$('.alert').text()).toMatch(/was used (less than a minute|\d+ minutes?) ago/);
    const unconfirmed = await post(browser, `${BASE}/${id}/secrets/${used}/revoke`, {});
    expect(unconfirmed.status).toBe(409);
    expect(unconfirmed.$('.alert').text()).toMatch(/Tick the box to confirm/);
    expect(await activeSecretIds(id)).toContain(used);
    const done = await follow(browser, await post(browser, `${BASE}/${id}/secrets/${used}/revoke`, { confirm_recent: 'yes' }));
    expect(done.$('.notice').text()).toContain('Secret revoked');
    expect(await activeSecretIds(id)).not.toContain(used);
  });

  it("shows the client's use of its token-endpoint budget this minute", async () => {
    const browser = await signIn(dev);
    const { id, secret } = await register(browser, 'Budget Shown');
    await clientsSetStatus(operator(server), id, 'approved');
    expect((await browser.get(url(`${BASE}/${id}`))).$('#budget').text()).toMatch(/this minute: 0 of 6000/);
    for (let i = 0; i < 3; i++) {
      const res = await fetch(url('/v2/auth/oauth2/introspect'), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: 'unknown', client_id: id, client_secret: secret! }).toString() });
      expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"client";r=${5999 - i};t=\\d+$`));
    }
    expect((await browser.get(url(`${BASE}/${id}`))).$('#budget').text()).toMatch(/this minute: 3 of 6000/);
  });

  it('leaves the operator script free to revoke the last secret', async () => {
    const browser = await signIn(dev);
    const { id } = await register(browser, 'Operator Revokes');
    const [only] = await activeSecretIds(id);
    await secretsRevoke(operator(server), id, String(only));
    expect(await activeSecretIds(id)).toEqual([]);
    await secretsGenerate(operator(server), id);
  });
});

describe('rename', () => {
  it('renames a client that waits for review, refuses a bad name beside the field, and records it', async () => {
    const browser = await signIn(dev);
    const { id } = await register(browser, 'Old Name');
    const bad = await post(browser, `${BASE}/${id}/name`, { name: ' ' });
    expect(bad.status).toBe(400);
    expect(bad.$('#name').attr('aria-invalid')).toBe('true');
    expect(bad.$('#name-error').text()).toMatch(/1 to 100 characters/);
    expect((await stored(id)).name).toBe('Old Name');
    const tooLong = 'x'.repeat(101);
    const kept = await post(browser, `${BASE}/${id}/name`, { name: tooLong });
    expect(kept.$('#name').val()).toBe(tooLong);

    const done = await follow(browser, await post(browser, `${BASE}/${id}/name`, { name: 'New Name' }));
    expect(done.$('h1').text()).toBe('New Name');
    expect((await stored(id)).name).toBe('New Name');
    expect(await db()('audit_events').where({ client_id: id, action: 'client.renamed' }).first()).toMatchObject({ actor: `user:${dev.id}`, details: { from: 'Old Name', to: 'New Name' } });
  });

  it('leaves the name of a reviewed client to an administrator', async () => {
    const browser = await signIn(dev);
    const { id } = await register(browser, 'Approved Name');
    await clientsSetStatus(operator(server), id, 'approved');
    const page = await browser.get(url(`${BASE}/${id}`));
    expect(page.$('form[action$="/name"]')).toHaveLength(0);
    expect(page.html).toContain('only an administrator can rename it');
    const refused = await post(browser, `${BASE}/${id}/name`, { name: 'Sneaky Rename' });
    expect(refused.status).toBe(400);
    expect(refused.$('.alert').text()).toMatch(/only an administrator can rename it/);
    expect((await stored(id)).name).toBe('Approved Name');
  });
});

describe('delete', () => {
  it('asks for the name, then removes the client and everything it was issued', async () => {
    const browser = await signIn(dev);
    const { id, secret } = await register(browser, 'Doomed App', 'confidential', ['PROFILE_READ']);
    await clientsSetStatus(operator(server), id, 'approved');
    const code = (await authorize(new Browser(), server.url, { client_id: id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, other)).searchParams.get('code')!;
    const tokens = (await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: id, client_secret: secret! })).body as Record<string, string>;
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);

    const confirm = await browser.get(url(`${BASE}/${id}/delete`));
    expect(confirm.$('h1').text()).toBe('Delete Doomed App?');
    for (const typed of ['', 'doomed app', 'Doomed']) {
      const wrong = await browser.submit(confirm, 'button:contains("Delete the client")', { confirm_name: typed });
      expect(wrong.status).toBe(400);
      expect(wrong.$('#confirm_name').attr('aria-invalid')).toBe('true');
      expect(wrong.$('#confirm_name').val()).toBe(typed);
      expect(wrong.$(`#${wrong.$('#confirm_name').attr('aria-describedby')}`).text()).toContain('Doomed App');
    }
    expect(await stored(id)).toBeDefined();
    expect(await db()('user_grants').where('client_id', id)).not.toHaveLength(0);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);

    const done = await follow(browser, await browser.submit(confirm, 'button:contains("Delete the client")', { confirm_name: 'Doomed App' }));
    expect(done.$('.notice').text()).toContain('“Doomed App” is deleted');
    expect(await stored(id)).toBeUndefined();
    expect(await db()('oauth_client_secrets').where('client_id', id)).toHaveLength(0);
    expect(await db()('user_grants').where('client_id', id)).toHaveLength(0);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
    const refresh = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: id, client_secret: secret! });
    expect(refresh.status).toBe(401);
    expect(await db()('audit_events').where({ client_id: id, action: 'client.deleted' }).first()).toMatchObject({ actor: `user:${dev.id}`, details: { name: 'Doomed App' } });
    expect((await browser.get(url(`${BASE}/${id}`))).status).toBe(404);
  });

  it('lets nobody but the owner rename or delete a client', async () => {
    const owner = await signIn(dev);
    const { id } = await register(owner, 'Not Yours');
    const intruder = await signIn(other);
    expect((await intruder.get(url(`${BASE}/${id}/delete`))).status).toBe(404);
    expect((await post(intruder, `${BASE}/${id}/delete`, { confirm_name: 'Not Yours' })).status).toBe(404);
    expect((await post(intruder, `${BASE}/${id}/name`, { name: 'Taken Over' })).status).toBe(404);
    expect(await stored(id)).toMatchObject({ name: 'Not Yours', owner_user_id: dev.id });
    expect(await db()('audit_events').where('client_id', id).whereIn('action', ['client.deleted', 'client.renamed'])).toHaveLength(0);
  });
});
