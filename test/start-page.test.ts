// The start page at `/` (issue 38 point 3) over real HTTP: what this server is and the ways in,
// for a visitor, a user, an administrator (the review queue) and where the demo exists; `/` has one
// spelling like every path; and error pages for someone signed out lead somewhere they can go.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser, type Page } from './support/browser.ts';
import { authorizeUrl, type TestUser } from './support/oauth.ts';
import { newUser, operator, REDIRECT } from './support/fixtures.ts';
import { clientsCreate, usersSetAdmin } from '../src/admin/commands.ts';
import { addOrgMember, createOrg } from '../src/orgs/store.ts';
import { createClient } from '../src/clients/service.ts';
import { loadConfig } from '../src/config.ts';
import { seedDemo } from '../src/demo.ts';

let server: TestServer;
let user: TestUser;
let admin: TestUser;

beforeAll(async () => {
  server = await startTestServer('redis', { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', PLATFORM_NAME: 'Acme Scheduling' });
  [user, admin] = await Promise.all([newUser(server, 'Uma User'), newUser(server, 'Ari Admin')]);
  await usersSetAdmin(operator(server), admin.email);
});
afterAll(() => server?.close());

const url = (path: string) => `${server.url}${path}`;
const links = (page: Page) => page.$('.start-links h2 a').map((_, a) => ({ text: page.$(a).text().trim(), href: page.$(a).attr('href') })).get();

async function signedIn(who: TestUser): Promise<Browser> {
  const browser = new Browser();
  const login = await browser.get(url('/login?next=%2F'));
  const done = await browser.submit(login, 'form[action="/login"]', { email: who.email, password: who.password });
  expect(done.location).toBe(url('/'));
  return browser;
}

describe('the start page', () => {
  it('tells a visitor what this server is and offers sign-in, apps with access, developer settings and the discovery document', async () => {
    const page = await new Browser().get(url('/'));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.html).not.toContain('Page not found');
    expect(page.$('h1').text()).toBe('Sign-in and app access');
    expect(page.$('.lead').text()).toContain('let apps act on your Acme Scheduling account');
    expect(page.$('a.button.primary').text()).toBe('Sign in');
    expect(page.$('a.button.primary').attr('href')).toBe('/login?next=%2F');
    expect(links(page)).toEqual([
      { text: 'Apps with access', href: '/settings/connected-apps' },
      { text: 'Developer settings', href: '/settings/developer/oauth-clients' },
      { text: 'Organizations', href: '/settings/organizations' },
      { text: 'Discovery document', href: `${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2` },
    ]);
    // The discovery link works, and BASE_URL is APP_URL unless set.
    const discovery = await fetch(links(page)[3]!.href!);
    expect(discovery.status).toBe(200);
    expect(((await discovery.json()) as { issuer: string }).issuer).toBe(`${server.url}/v2/auth/oauth2`);
    expect(loadConfig({ NODE_ENV: 'test', APP_URL: 'https://id.example.com' }).baseUrl).toBe('https://id.example.com');
    expect(loadConfig({ NODE_ENV: 'test', APP_URL: 'https://id.example.com', BASE_URL: 'https://api.example.com' }).baseUrl).toBe('https://api.example.com');
  });

  it('signs in from the start page and comes back to it, without the review queue for a user', async () => {
    const page = await (await signedIn(user)).get(url('/'));
    expect(page.$('a.button.primary')).toHaveLength(0);
    expect(page.$('.topbar .who').text()).toBe(user.email);
    expect(links(page).map((l) => l.text)).toEqual(['Apps with access', 'Developer settings', 'Organizations', 'Discovery document']);
  });

  it('shows an administrator the review queue with the number of clients waiting', async () => {
    const browser = await signedIn(admin);
    const before = await browser.get(url('/'));
    const waiting = Number(/(\d+) clients? wait|No client/.exec(before.$('.start-review p').text())?.[1] ?? 0);
    await clientsCreate(operator(server), { name: 'Waiting App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    const page = await browser.get(url('/'));
    expect(page.$('.start-review h2 a').attr('href')).toBe('/admin/oauth-clients');
    expect(page.$('.start-review p').text()).toBe(waiting + 1 === 1 ? '1 client waits for review.' : `${waiting + 1} clients wait for review.`);
  });

  it('offers the demo where it was set up, and its link starts the authorization request', async () => {
    expect((await new Browser().get(url('/'))).$('.start-demo')).toHaveLength(0);
    await seedDemo(server.system, loadConfig({ NODE_ENV: 'test', APP_URL: server.url, DATABASE_URL: server.pg.url }));
    const page = await new Browser().get(url('/'));
    const demo = page.$('.start-demo h2 a').attr('href')!;
    expect(demo).toMatch(/^\/auth\/oauth2\/authorize\?client_id=/);
    const params = new URL(demo, server.url).searchParams;
    expect(params.get('redirect_uri')).toBe(`${server.url}/demo/callback`);
    expect(params.get('scope')).toBe('PROFILE_READ BOOKING_READ');
    const signIn = await new Browser().follow(url(demo), server.url);
    expect(signIn.status).toBe(200);
    expect(signIn.$('input[name=password]')).toHaveLength(1);
  });

  it('has one spelling: other spellings of it and of the pages are not found, and other methods are refused', async () => {
    const browser = new Browser();
    for (const path of ['//', '/index.html', '/Login', '/login/', '/settings/connected-apps/', '/SETTINGS/connected-apps', '/admin/oauth-clients/', '/Admin/oauth-clients', '/Settings/developer/oauth-clients', '/demo/callback/', '/auth/oauth2/authorize/', '/AUTH/oauth2/authorize']) {
      const res = await browser.get(url(path));
      expect(res.status, path).toBe(404);
    }
    const head = await browser.request(url('/'), { method: 'HEAD' });
    expect(head.status).toBe(200);
    const post = await browser.request(url('/'), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=b' });
    expect(post.status).toBe(405);
    // With a query string it is the same page.
    expect((await browser.get(url('/?utm_source=banner'))).$('h1').text()).toBe('Sign-in and app access');
  });
});

describe('error pages for someone signed out', () => {
  const wayOn = (page: Page) => page.$('.error-way-on a').map((_, a) => ({ text: page.$(a).text().trim(), href: page.$(a).attr('href') })).get();

  it('a page not found leads to the start page', async () => {
    const page = await new Browser().get(url('/no-such-page'));
    expect(page.status).toBe(404);
    expect(wayOn(page)).toEqual([{ text: 'Go to the start page', href: '/' }]);
  });

  it('an unknown app leads to the start page, not to a page that needs signing in', async () => {
    const page = await new Browser().follow(authorizeUrl(server.url, { client_id: 'no-such-app', redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }), server.url);
    expect(page.$('h1').text()).toBe('This app is not available');
    expect(wayOn(page)[0]).toEqual({ text: 'Go to the start page', href: '/' });
    expect(wayOn(page).map((l) => l.href)).not.toContain('/settings/connected-apps');
  });

  it('a signed-in person keeps the links to their pages', async () => {
    const page = await (await signedIn(user)).get(url('/settings/developer/oauth-clients/no-such-client'));
    expect(page.status).toBe(404);
    expect(wayOn(page).map((l) => l.href)).not.toContain('/');
  });
});

// Issue 50 item 5: every page a person can use is reached by following links from `/`, for
// whoever may use it, and nobody is shown a link to a page that is not theirs.
describe('every page is reached from the start page', () => {
  /** The pages reached from `/` by following same-site links (GET only; never sign-out). */
  async function reachable(browser: Browser): Promise<Set<string>> {
    const seen = new Set<string>();
    const queue = ['/'];
    while (queue.length && seen.size < 60) {
      const path = queue.shift()!;
      if (seen.has(path)) continue;
      seen.add(path);
      const page = await browser.get(url(path));
      if (page.status !== 200 || !(page.headers.get('content-type') ?? '').startsWith('text/html')) continue;
      page.$('a[href]').each((_, a) => {
        const target = new URL(page.$(a).attr('href')!, url(path));
        if (target.origin !== server.url || target.pathname === '/logout' || target.pathname.startsWith('/auth/')) return;
        if (!seen.has(target.pathname)) queue.push(target.pathname);
      });
    }
    return seen;
  }

  it('for a visitor, a user, an organization owner and an administrator: each reaches the pages they may use, and only those', async () => {
    const owner = await newUser(server, 'Olga Owner');
    const org = await createOrg(server.system.db, { name: 'Linked Org' });
    await addOrgMember(server.system.db, org.id, owner.id, 'owner');
    const { client } = await createClient(server.system, { name: 'Linked App', kind: 'confidential', legacy: false, scopes: ['PROFILE_READ'], redirectUris: [REDIRECT], ownerUserId: owner.id }, { actor: 'test' });
    const userPages = ['/', '/settings/connected-apps', '/settings/developer/oauth-clients', '/settings/developer/oauth-clients/new', '/settings/organizations'];

    const visitor = await reachable(new Browser());
    expect([...visitor]).toEqual(expect.arrayContaining(['/', '/login']));
    expect([...visitor].filter((p) => p.startsWith('/admin'))).toEqual([]);

    const asUser = await reachable(await signedIn(user));
    expect([...asUser]).toEqual(expect.arrayContaining(userPages));
    expect([...asUser].filter((p) => p.startsWith('/admin') || p.startsWith(`/settings/organizations/`))).toEqual([]);

    const asOwner = await reachable(await signedIn(owner));
    expect([...asOwner]).toEqual(expect.arrayContaining([...userPages, `/settings/organizations/${org.id}/apps`, `/settings/developer/oauth-clients/${client.clientId}`]));
    expect([...asOwner].filter((p) => p.startsWith('/admin'))).toEqual([]);

    const asAdmin = await reachable(await signedIn(admin));
    expect([...asAdmin]).toEqual(expect.arrayContaining([...userPages, '/admin/oauth-clients']));
  });

  it('the top bar leads home from every page, marked as the current page only at home', async () => {
    const browser = await signedIn(user);
    for (const path of ['/', '/settings/connected-apps', '/settings/organizations']) {
      const page = await browser.get(url(path));
      const home = page.$('.topbar nav a[href="/"]');
      expect(home.text(), path).toBe('Home');
      expect(home.attr('aria-current'), path).toBe(path === '/' ? 'page' : undefined);
      expect(page.$('.topbar nav a[href="/settings/organizations"]').text(), path).toBe('Organizations');
    }
  });
});
