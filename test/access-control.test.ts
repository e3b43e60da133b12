// Access control of the pages and the authorization flow, attacked as an outsider would: path
// spellings around the guards, other users' ids, pending clients as redirectors, sign-out and
// account switching, stale consent and review forms, CSRF binding, proxies and malformed ids.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import pino from 'pino';
import { startTestServer, startInstance, type TestServer } from './support/server.ts';
import { Browser, type Page } from './support/browser.ts';
import { authorize, authorizeUrl, getMe, reachConsent, tokenRequest, type TestUser } from './support/oauth.ts';
import { approvedClient, newUser, operator, REDIRECT, type TestClient } from './support/fixtures.ts';
import { clientsCreate, clientsSetScopes, clientsSetStatus, usersSetAdmin } from '../src/admin/commands.ts';
import { createClient, findClient } from '../src/clients/service.ts';
import { DEV_DATA_KEYS } from '../src/config.ts';

let server: TestServer;
let dev: TestUser & { id: number }; // owns the pending clients
let other: TestUser & { id: number }; // signed in, not an administrator
let admin: TestUser & { id: number };
let pendingPublic: string; // dev's pending public client: its forms act on nothing
let pendingEvil: string; // dev's pending client whose redirect URI is an attacker's
let approvedOfOther: string; // other's approved client
const EVIL = 'https://evil.example/cb';

beforeAll(async () => {
  server = await startTestServer('redis');
  [dev, other, admin] = await Promise.all([newUser(server, 'Dev'), newUser(server, 'Other'), newUser(server, 'Admin')]);
  await usersSetAdmin(operator(server), admin.email);
  const by = { actor: 'test' };
  pendingPublic = (await createClient(server.system, { name: 'Dev Mobile', kind: 'public', legacy: false, scopes: ['PROFILE_READ'], redirectUris: ['com.example.app:/cb'], ownerUserId: dev.id }, by)).client.clientId;
  pendingEvil = (await createClient(server.system, { name: 'Evil App', kind: 'confidential', legacy: false, scopes: ['PROFILE_READ'], redirectUris: [EVIL], ownerUserId: dev.id }, by)).client.clientId;
  approvedOfOther = (await createClient(server.system, { name: 'Other App', kind: 'confidential', legacy: false, scopes: ['PROFILE_READ'], redirectUris: [REDIRECT], ownerUserId: other.id }, by)).client.clientId;
  await clientsSetStatus(operator(server), approvedOfOther, 'approved');
});
afterAll(() => server?.close());

const url = (path: string) => `${server.url}${path}`;
const form = { 'content-type': 'application/x-www-form-urlencoded' };

async function signIn(user: TestUser): Promise<Browser> {
  const browser = new Browser();
  const login = await browser.get(url('/login'));
  const done = await browser.submit(login, 'form[action="/login"]', { email: user.email, password: user.password });
  expect(done.status).toBe(303);
  return browser;
}

/** The CSRF token the pages give this browser (bound to its session, or to the visitor). */
async function csrfOf(browser: Browser, signedIn: boolean): Promise<string> {
  const page = await browser.get(url(signedIn ? '/settings/connected-apps' : '/login'));
  return page.$('input[name=csrf]').first().val() as string;
}

function post(browser: Browser, path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Page> {
  return browser.request(url(path), { method: 'POST', headers: { ...form, ...headers }, body: new URLSearchParams(fields).toString() });
}

async function statusOf(clientId: string) {
  return (await findClient(server.system.db, clientId))!.status;
}

describe('guards cannot be skipped by the spelling of a path', () => {
  type Who = 'anonymous' | 'other' | 'owner' | 'admin';
  const WHO: Who[] = ['anonymous', 'other', 'owner', 'admin'];
  const browsers = {} as Record<Who, { browser: Browser; csrf: string }>;

  beforeAll(async () => {
    const anonymous = new Browser();
    browsers.anonymous = { browser: anonymous, csrf: await csrfOf(anonymous, false) };
    for (const [who, user] of [['other', other], ['owner', dev], ['admin', admin]] as const) {
      const browser = await signIn(user);
      browsers[who] = { browser, csrf: await csrfOf(browser, true) };
    }
  });

  // Each page route with what each visitor gets at its one canonical spelling. The POSTs carry
  // the visitor's valid CSRF token and fields that change nothing (an unknown action, an empty
  // name, a public client's secrets), so the statuses show the guards alone.
  const dev_ = '/settings/developer/oauth-clients';
  const ROUTES: Array<{ method: 'GET' | 'POST'; path: () => string; fields?: Record<string, string>; expect: Record<Who, number> }> = [
    { method: 'GET', path: () => '/settings/connected-apps', expect: { anonymous: 303, other: 200, owner: 200, admin: 200 } },
    { method: 'GET', path: () => `/settings/connected-apps/${approvedOfOther}/revoke`, expect: { anonymous: 303, other: 303, owner: 303, admin: 303 } },
    { method: 'POST', path: () => `/settings/connected-apps/${approvedOfOther}/revoke`, expect: { anonymous: 401, other: 303, owner: 303, admin: 303 } },
    { method: 'GET', path: () => dev_, expect: { anonymous: 303, other: 200, owner: 200, admin: 200 } },
    { method: 'GET', path: () => `${dev_}/new`, expect: { anonymous: 303, other: 200, owner: 200, admin: 200 } },
    { method: 'POST', path: () => dev_, fields: { name: '', kind: 'public' }, expect: { anonymous: 401, other: 400, owner: 400, admin: 400 } },
    { method: 'GET', path: () => `${dev_}/${pendingPublic}`, expect: { anonymous: 303, other: 404, owner: 200, admin: 404 } },
    { method: 'POST', path: () => `${dev_}/${pendingPublic}`, fields: { redirect_uris: '' }, expect: { anonymous: 401, other: 404, owner: 400, admin: 404 } },
    { method: 'POST', path: () => `${dev_}/${pendingPublic}/name`, fields: { name: '' }, expect: { anonymous: 401, other: 404, owner: 400, admin: 404 } },
    { method: 'GET', path: () => `${dev_}/${pendingPublic}/delete`, expect: { anonymous: 303, other: 404, owner: 200, admin: 404 } },
    { method: 'POST', path: () => `${dev_}/${pendingPublic}/delete`, fields: { confirm_name: 'not its name' }, expect: { anonymous: 401, other: 404, owner: 400, admin: 404 } },
    { method: 'POST', path: () => `${dev_}/${pendingPublic}/secrets`, expect: { anonymous: 401, other: 404, owner: 303, admin: 404 } },
    { method: 'GET', path: () => `${dev_}/${pendingPublic}/secrets/1/revoke`, expect: { anonymous: 303, other: 404, owner: 303, admin: 404 } },
    { method: 'POST', path: () => `${dev_}/${pendingPublic}/secrets/1/revoke`, expect: { anonymous: 401, other: 404, owner: 303, admin: 404 } },
    { method: 'GET', path: () => '/admin/oauth-clients', expect: { anonymous: 303, other: 403, owner: 403, admin: 200 } },
    { method: 'GET', path: () => `/admin/oauth-clients/${pendingPublic}/suspend`, expect: { anonymous: 303, other: 403, owner: 403, admin: 303 } },
    { method: 'POST', path: () => `/admin/oauth-clients/${pendingPublic}/status`, fields: { action: 'none' }, expect: { anonymous: 401, other: 403, owner: 403, admin: 303 } },
    { method: 'POST', path: () => '/admin/oauth-clients/changes/999999', fields: { decision: 'reject' }, expect: { anonymous: 401, other: 403, owner: 403, admin: 303 } },
    // Metadata-document clients' decisions (their ids are URLs, so they travel in the form).
    { method: 'POST', path: () => '/admin/oauth-clients/documents', fields: { action: 'none', client_id: 'https://agent.example.com/client.json' }, expect: { anonymous: 401, other: 403, owner: 403, admin: 303 } },
    // Only where the demo was set up (not here): nobody gets anything.
    { method: 'GET', path: () => '/demo/callback?code=x', expect: { anonymous: 404, other: 404, owner: 404, admin: 404 } },
  ];

  /** The same path spelled otherwise: every letter of the fixed words upper case, a capital, a trailing slash. */
  function variants(path: string): Record<string, string> {
    const fixed = (transform: (word: string) => string) =>
      path.split('/').map((seg) => (/^[a-z-]+$/.test(seg) ? transform(seg) : seg)).join('/');
    return {
      upper: fixed((w) => w.toUpperCase()),
      mixed: fixed((w) => w.charAt(0).toUpperCase() + w.slice(1)),
      'trailing slash': `${path}/`,
    };
  }

  it('answers each canonical route as its guard says, for every kind of visitor', async () => {
    const seen: string[] = [];
    for (const route of ROUTES) {
      for (const who of WHO) {
        const { browser, csrf } = browsers[who];
        const res =
          route.method === 'GET' ? await browser.get(url(route.path())) : await post(browser, route.path(), { csrf, ...route.fields });
        seen.push(`${who} ${route.method} ${route.path()} → ${res.status}`);
        expect(res.status, `${who} ${route.method} ${route.path()}: ${res.html.slice(0, 200)}`).toBe(route.expect[who]);
      }
    }
    expect(seen).toHaveLength(ROUTES.length * WHO.length);
  });

  it('answers 404 to every other spelling, for every kind of visitor, and changes nothing', async () => {
    for (const route of ROUTES) {
      for (const [name, path] of Object.entries(variants(route.path()))) {
        for (const who of WHO) {
          const { browser, csrf } = browsers[who];
          const res = route.method === 'GET' ? await browser.get(url(path)) : await post(browser, path, { csrf, ...route.fields });
          expect(res.status, `${who} ${route.method} ${path} (${name})`).toBe(404);
        }
      }
    }
    expect(await statusOf(pendingPublic)).toBe('pending');
  });

  it('stops the attacks as they were made: reading the admin list, approving, suspending', async () => {
    const anonymousList = await new Browser().get(url('/Admin/oauth-clients'));
    expect(anonymousList.status).toBe(404);
    expect(anonymousList.html).not.toContain('Evil App');

    const { browser, csrf } = browsers.owner; // a signed-in non-admin, owner of the pending clients
    for (const path of [`/admin/OAUTH-CLIENTS/${pendingEvil}/status`, `/Admin/oauth-clients/${pendingEvil}/status`, `/admin/oauth-clients/${pendingEvil}/status/`]) {
      expect((await post(browser, path, { csrf, action: 'approve' })).status, path).toBe(404);
    }
    expect((await post(browser, `/admin/oauth-clients/${pendingEvil}/status`, { csrf, action: 'approve' })).status).toBe(403);
    expect(await statusOf(pendingEvil)).toBe('pending');

    expect((await post(browser, `/admin/OAUTH-CLIENTS/${approvedOfOther}/status`, { csrf, action: 'suspend' })).status).toBe(404);
    expect((await post(browser, `/admin/Oauth-clients/changes/1`, { csrf, decision: 'approve' })).status).toBe(404);
    expect(await statusOf(approvedOfOther)).toBe('approved');
  });

  it('never answers 500 to upper-case page, API and provider paths, signed in or not', async () => {
    const paths = ['/ADMIN/OAUTH-CLIENTS', '/SETTINGS/CONNECTED-APPS', '/SETTINGS/DEVELOPER/OAUTH-CLIENTS/X', '/LOGIN', '/V2/ME', '/v2/Me', '/v2/me/', '/v2/auth/Check',
      '/v2/auth/oauth2/Token', '/v2/auth/oauth2/token/', '/V2/AUTH/OAUTH2/TOKEN', '/v2/auth/oauth2/%74oken', '/v2/auth/oauth2/JWKS', '/auth/oauth2/Authorize', '/auth/oauth2/authorize/',
      '/auth/oauth2/Interaction/abc', '/v2/auth/oauth2/.well-known/OPENID-configuration'];
    for (const who of ['anonymous', 'owner'] as const) {
      for (const path of paths) {
        for (const method of ['GET', 'POST']) {
          const res = await browsers[who].browser.request(url(path), { method, headers: form, body: method === 'POST' ? 'grant_type=client_credentials' : undefined });
          expect(res.status, `${who} ${method} ${path}`).toBe(404);
        }
      }
    }
  });
});

describe('an unreviewed client is never an open redirector', () => {
  const request = (extra: Record<string, string> = {}) => authorizeUrl(server.url, { client_id: pendingEvil, redirect_uri: EVIL, scope: 'PROFILE_READ', state: 's', ...extra });

  function expectErrorPage(page: Page, what: string) {
    expect(page.location, `${what}: redirected to ${page.location}`).toBeUndefined();
    expect(page.status, what).toBe(403);
    expect(page.html, what).toContain('waiting for review');
  }

  it('shows the error page for a bad scope, prompt=none and Cancel, to anyone but its signed-in owner', async () => {
    expectErrorPage(await new Browser().follow(request({ scope: 'NOT_A_SCOPE' }), server.url), 'bad scope');
    expectErrorPage(await new Browser().follow(request({ prompt: 'none' }), server.url), 'prompt=none');

    const visitor = new Browser();
    const login = await visitor.follow(request(), server.url);
    expect(login.$('input[name=password]')).toHaveLength(1);
    const cancelled = await visitor.submit(login, 'button:contains("Cancel")');
    expect(cancelled.status).toBe(303);
    expectErrorPage(await visitor.follow(cancelled.location!, server.url), 'Cancel');

    // Another signed-in user: the consent step refuses, and prompt=none does not redirect either.
    const someone = new Browser();
    await authorize(someone, server.url, { client_id: approvedOfOther, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, other);
    expectErrorPage(await someone.follow(request({ prompt: 'none' }), server.url), 'prompt=none, other user signed in');
    expectErrorPage(await someone.follow(request({ scope: 'NOT_A_SCOPE' }), server.url), 'bad scope, other user signed in');
  });

  it('redirects inside a flow of its signed-in owner', async () => {
    const owner = new Browser();
    const back = await authorize(owner, server.url, new URL(request()), dev);
    expect(back.href.startsWith(EVIL)).toBe(true);
    expect(back.searchParams.get('code')).toBeTruthy();
    const bad = await owner.follow(request({ scope: 'NOT_A_SCOPE' }), server.url);
    expect(new URL(bad.location!).searchParams.get('error')).toBe('invalid_scope');
  });
});

describe('signing out signs out; switching accounts works', () => {
  let app: TestClient;
  beforeAll(async () => {
    app = await approvedClient(server, ['PROFILE_READ', 'BOOKING_READ'], 'Switch App');
  });
  const request = (extra: Record<string, string> = {}) => ({ client_id: app.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', ...extra });

  async function userOfCode(back: URL): Promise<string> {
    const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, ...app });
    expect(res.status).toBe(200);
    return String((await getMe(server.url, res.body.access_token as string)).body.data.id);
  }

  it('ends the authorization session at sign-out: the next person at the browser must sign in', async () => {
    const browser = new Browser();
    expect(await userOfCode(await authorize(browser, server.url, request(), dev))).toBe(String(dev.id));
    // Without sign-out, the same browser gets a code straight away (the session and the grant exist).
    const again = await browser.follow(authorizeUrl(server.url, request()), server.url);
    expect(new URL(again.location!).searchParams.get('code')).toBeTruthy();

    // One sign-in across the site (issue 50 item 4): the flow's sign-in signed in to the pages too.
    expect((await browser.get(url('/settings/connected-apps'))).status).toBe(200);
    const signedOut = await post(browser, '/logout', { csrf: await csrfOf(browser, true) });
    expect(signedOut.status).toBe(303);

    const next = await browser.follow(authorizeUrl(server.url, request()), server.url);
    expect(next.location).toBeUndefined();
    expect(next.$('input[name=password]')).toHaveLength(1);
    expect((await browser.get(url('/settings/connected-apps'))).status).toBe(303);
  });

  it('keeps the authorization session in a browser-session cookie unless "Keep me signed in" is ticked', async () => {
    for (const remember of [false, true]) {
      const browser = new Browser();
      const login = await browser.follow(authorizeUrl(server.url, request()), server.url);
      const done = await browser.submit(login, 'form:has(input[name=password])', { email: dev.email, password: dev.password, ...(remember ? { remember: 'yes' } : {}) });
      const resumed = await browser.get(done.location!);
      const session = resumed.headers.getSetCookie().find((c) => c.startsWith('_session='));
      expect(session, 'the session cookie is set on resume').toBeDefined();
      expect(/;\s*expires=/i.test(session!), `remember=${remember}: ${session}`).toBe(remember);
    }
  });

  it('offers "Not you? Use another account" on the consent page, and it works', async () => {
    const browser = new Browser();
    await authorize(browser, server.url, request(), dev);
    const consent = await browser.follow(authorizeUrl(server.url, request({ scope: 'PROFILE_READ BOOKING_READ' })), server.url);
    expect(consent.html).toContain(dev.email);
    const switched = await browser.submit(consent, 'button:contains("Not you?")');
    expect(switched.status).toBe(303);
    const login = await browser.follow(switched.location!, server.url);
    expect(login.$('input[name=password]')).toHaveLength(1);
    const signedIn = await browser.submit(login, 'form:has(input[name=password])', { email: other.email, password: other.password });
    const otherConsent = await browser.follow(signedIn.location!, server.url);
    expect(otherConsent.html).toContain(other.email);
    expect(otherConsent.html).not.toContain(dev.email);
    const allowed = await browser.submit(otherConsent, 'button:contains("Allow")');
    const back = new URL((await browser.follow(allowed.location!, server.url)).location!);
    expect(await userOfCode(back)).toBe(String(other.id));
  });

  it('switches accounts with prompt=login instead of landing on a dead end', async () => {
    const browser = new Browser();
    await authorize(browser, server.url, request(), dev);
    const login = await browser.follow(authorizeUrl(server.url, request({ prompt: 'login' })), server.url);
    expect(login.$('input[name=password]')).toHaveLength(1);
    const signedIn = await browser.submit(login, 'form:has(input[name=password])', { email: other.email, password: other.password });
    const consent = await browser.follow(signedIn.location!, server.url);
    expect(consent.status, consent.html.slice(0, 300)).toBe(200);
    expect(consent.html).toContain(other.email);
    const allowed = await browser.submit(consent, 'button:contains("Allow")');
    const back = new URL((await browser.follow(allowed.location!, server.url)).location!);
    expect(await userOfCode(back)).toBe(String(other.id));
    // The previous account's session is gone: its grant no longer gets codes in this browser.
    const again = await browser.follow(authorizeUrl(server.url, request()), server.url);
    expect(await userOfCode(new URL(again.location!))).toBe(String(other.id));
  });
});

describe('pre-migration full-access tokens end at the next authorization, every one', () => {
  it('revokes the legacy grant when a scoped authorization skips consent', async () => {
    const created = await clientsCreate(operator(server), { name: 'Legacy Tool', redirectUri: [REDIRECT], legacy: true });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    const legacy = { client_id: created.client_id, client_secret: created.client_secret! };
    const user = await newUser(server, 'Lea');
    const exchange = async (back: URL) => {
      const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, ...legacy });
      expect(res.status).toBe(200);
      return res.body as { access_token: string; refresh_token: string };
    };
    // Browser 1 grants PROFILE_READ; browser 2 then gets a full-access token (no scope).
    const first = new Browser();
    await exchange(await authorize(first, server.url, { client_id: legacy.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, user));
    const fullAccess = await exchange(await authorize(new Browser(), server.url, { client_id: legacy.client_id, redirect_uri: REDIRECT, state: 's' }, user));
    expect((await getMe(server.url, fullAccess.access_token)).status).toBe(200);

    // Browser 1 authorizes the scoped request again: no consent page (already granted there).
    const again = await first.follow(authorizeUrl(server.url, { client_id: legacy.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }), server.url);
    expect(new URL(again.location!).searchParams.get('code')).toBeTruthy();
    expect((await getMe(server.url, fullAccess.access_token)).status).toBe(401);
    const refreshed = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: fullAccess.refresh_token, ...legacy });
    expect(refreshed.body.error).toBe('invalid_grant');
  });
});

describe('Allow grants only what the client may have at that moment', () => {
  it('intersects with the scopes the client has when Allow is clicked', async () => {
    const app = await approvedClient(server, ['PROFILE_READ', 'BOOKING_READ'], 'Narrowed App');
    const user = await newUser(server);
    const browser = new Browser();
    const consent = await reachConsent(browser, server.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ BOOKING_READ', state: 's' }, user);
    expect(consent.$('.scopes li')).toHaveLength(2);
    await clientsSetScopes(operator(server), app.client_id, ['PROFILE_READ']);
    const allowed = await browser.submit(consent, 'button:contains("Allow")');
    const back = new URL((await browser.follow(allowed.location!, server.url)).location!);
    const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, ...app });
    expect(res.body.scope).toBe('PROFILE_READ');
  });

  it('gives no full access once the legacy client is migrated, and nothing once it is suspended', async () => {
    const created = await clientsCreate(operator(server), { name: 'Migrating Tool', redirectUri: [REDIRECT], legacy: true });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    const user = await newUser(server);

    let browser = new Browser();
    let consent = await reachConsent(browser, server.url, { client_id: created.client_id, redirect_uri: REDIRECT, state: 's' }, user);
    expect(consent.html).toContain('full access');
    await clientsSetScopes(operator(server), created.client_id, ['PROFILE_READ'], { force: true });
    let allowed = await browser.submit(consent, 'button:contains("Allow")');
    expect(allowed.status).toBe(409);
    expect(allowed.location).toBeUndefined();
    expect(await server.pg.db('legacy_grants').where('client_id', created.client_id)).toHaveLength(0);

    const app = await approvedClient(server, ['PROFILE_READ'], 'Suspended App');
    browser = new Browser();
    consent = await reachConsent(browser, server.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, user);
    await clientsSetStatus(operator(server), app.client_id, 'suspended');
    allowed = await browser.submit(consent, 'button:contains("Allow")');
    expect(allowed.status).toBe(403);
    expect(allowed.location).toBeUndefined();
  });
});

describe('an approval approves what the administrator saw', () => {
  it('refuses a stale Approve after the owner changed the client, and approves the fresh one', async () => {
    const owner = await signIn(dev);
    const reviewer = await signIn(admin);
    const ownerCsrf = await csrfOf(owner, true);
    const created = await createClient(server.system, { name: 'Changing App', kind: 'confidential', legacy: false, scopes: ['PROFILE_READ'], redirectUris: ['https://good.example/cb'], ownerUserId: dev.id }, { actor: 'test' });
    const id = created.client.clientId;

    const review = await reviewer.get(url('/admin/oauth-clients'));
    const approveForm = `form[action="/admin/oauth-clients/${id}/status"]`;
    expect(review.$(approveForm)).toHaveLength(1);
    const edited = await post(owner, `/settings/developer/oauth-clients/${id}`, { csrf: ownerCsrf, redirect_uris: 'https://evil.example/cb', scope: 'PROFILE_READ' });
    expect(edited.status).toBe(303);

    const stale = await reviewer.submit(review, `${approveForm} button[value=approve]`);
    expect(stale.status).toBe(303);
    expect((await reviewer.get(stale.location!)).$('[role=status]').text()).toContain('changed since you opened the page');
    expect(await statusOf(id)).toBe('pending');

    const fresh = await reviewer.get(url('/admin/oauth-clients'));
    expect(fresh.$(approveForm).text()).not.toBe('');
    expect((await reviewer.submit(fresh, `${approveForm} button[value=approve]`)).status).toBe(303);
    expect(await statusOf(id)).toBe('approved');
    expect((await findClient(server.system.db, id))!.redirectUris).toEqual(['https://evil.example/cb']);
  });
});

describe('page CSRF tokens are bound to the session', () => {
  it('refuses an anonymous token in a signed-in session, and a session token after sign-out', async () => {
    const browser = new Browser();
    const anonymousToken = await csrfOf(browser, false);
    const login = await browser.get(url('/login'));
    expect((await browser.submit(login, 'form[action="/login"]', { email: other.email, password: other.password })).status).toBe(303);
    const create = { name: 'CSRF Probe', kind: 'public', redirect_uris: 'com.example.probe:/cb', scope: 'PROFILE_READ' };
    expect((await post(browser, '/settings/developer/oauth-clients', { csrf: anonymousToken, ...create })).status).toBe(403);

    const sessionToken = await csrfOf(browser, true);
    expect(sessionToken).not.toBe(anonymousToken);
    expect((await post(browser, '/settings/developer/oauth-clients', { csrf: sessionToken, ...create }, { 'sec-fetch-site': 'same-site' })).status).toBe(403);
    expect((await post(browser, '/settings/developer/oauth-clients', { csrf: sessionToken, ...create }, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect(await server.pg.db('oauth_clients').where('name', 'CSRF Probe')).toHaveLength(0);
    expect((await post(browser, '/settings/developer/oauth-clients', { csrf: sessionToken, ...create }, { 'sec-fetch-site': 'same-origin' })).status).toBe(303);

    expect((await post(browser, '/logout', { csrf: sessionToken })).status).toBe(303);
    // Signed in again in the same browser: the old session's token is worthless.
    const again = await browser.get(url('/login'));
    expect((await browser.submit(again, 'form[action="/login"]', { email: other.email, password: other.password })).status).toBe(303);
    expect((await post(browser, '/settings/developer/oauth-clients', { csrf: sessionToken, ...create, name: 'CSRF Probe 2' })).status).toBe(403);
  });
});

describe('pages with an https APP_URL', () => {
  it('sets Secure __Host- cookies and Secure provider cookies whatever TRUST_PROXY says', async () => {
    const instance = await startInstance({ DATABASE_URL: server.pg.url, APP_URL: 'https://auth.example.com', BASE_URL: 'https://api.example.com' }, { db: server.system.db });
    try {
      const login = await fetch(`${instance.url}/login`);
      const cookies = login.headers.getSetCookie();
      expect(cookies.length).toBeGreaterThan(0);
      for (const cookie of cookies) {
        expect(cookie, cookie).toMatch(/^__Host-/);
        expect(cookie, cookie).toMatch(/;\s*secure/i);
        expect(cookie, cookie).toMatch(/;\s*path=\//i);
      }
      const app = await approvedClient(server, ['PROFILE_READ'], 'Https App');
      const authorizeRes = await fetch(authorizeUrl(instance.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }), { redirect: 'manual' });
      expect(authorizeRes.status).toBe(303);
      const providerCookies = authorizeRes.headers.getSetCookie();
      expect(providerCookies.some((c) => c.startsWith('_interaction='))).toBe(true);
      for (const cookie of providerCookies) expect(cookie, cookie).toMatch(/;\s*secure/i);
    } finally {
      await instance.close();
    }
  });
});

describe('proxies and client addresses', () => {
  async function withLoggedInstance(env: Record<string, string>, run: (base: string, lines: Array<Record<string, unknown>>) => Promise<void>) {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const instance = await startInstance({ DATABASE_URL: server.pg.url, ...env }, { db: server.system.db, log: pino({ level: 'info' }, sink) });
    try {
      await run(instance.url, lines);
    } finally {
      await instance.close();
    }
  }
  const ipsLogged = (lines: Array<Record<string, unknown>>) => lines.filter((l) => l.msg === 'request').map((l) => l.ip);

  it('takes the address the nearest trusted proxy saw, never the one a client wrote', async () => {
    await withLoggedInstance({ TRUST_PROXY: 'true' }, async (base, lines) => {
      await fetch(`${base}/health`, { headers: { 'x-forwarded-for': '6.6.6.6, 203.0.113.7' } });
      await fetch(`${base}/health`, { headers: { 'x-forwarded-for': '203.0.113.8' } });
      expect(ipsLogged(lines)).toEqual(['203.0.113.7', '203.0.113.8']);
    });
    await withLoggedInstance({ TRUST_PROXY: '2' }, async (base, lines) => {
      await fetch(`${base}/health`, { headers: { 'x-forwarded-for': '6.6.6.6, 198.51.100.1, 10.0.0.2' } });
      expect(ipsLogged(lines)).toEqual(['198.51.100.1']);
    });
    await withLoggedInstance({}, async (base, lines) => {
      await fetch(`${base}/health`, { headers: { 'x-forwarded-for': '6.6.6.6' } });
      expect(ipsLogged(lines)).toEqual([expect.stringMatching(/127\.0\.0\.1$/)]);
    });
  });

  it('warns once in production when a proxy sends X-Forwarded-Proto and none is trusted', async () => {
    // The file's server (development) stored its signing key under the development key: kept second to decrypt it.
    const production = { NODE_ENV: 'production', COOKIE_KEYS: 'k'.repeat(40), DATA_ENCRYPTION_KEYS: ['d'.repeat(40), ...DEV_DATA_KEYS].join(',') };
    await withLoggedInstance(production, async (base, lines) => {
      for (let i = 0; i < 3; i++) await fetch(`${base}/health`, { headers: { 'x-forwarded-proto': 'https' } });
      const warnings = lines.filter((l) => String(l.msg).includes('TRUST_PROXY'));
      expect(warnings).toHaveLength(1);
    });
    await withLoggedInstance({ ...production, TRUST_PROXY: '1' }, async (base, lines) => {
      await fetch(`${base}/health`, { headers: { 'x-forwarded-proto': 'https' } });
      expect(lines.filter((l) => String(l.msg).includes('TRUST_PROXY'))).toHaveLength(0);
    });
  });
});

describe('small leaks and crashes', () => {
  it('answers 404, not 500, to non-numeric or out-of-range ids in page URLs', async () => {
    const owner = await signIn(dev);
    const reviewer = await signIn(admin);
    // Past 2^31-1 (the integer columns) too: 11 digits were a database error, a 500.
    const ids = ['abc', '1.5', '-1', '99999999999999999999', '0x10', '99999999999', '2147483648', '4294967297', '01', '+1', '1e3', ' 1', '1 ', '１', '1%FF'];
    for (const clientId of [pendingPublic, pendingEvil]) {
      const base = `/settings/developer/oauth-clients/${clientId}/secrets`;
      for (const id of ids) {
        const path = `${base}/${id.includes('%') ? id : encodeURIComponent(id)}/revoke`;
        expect((await owner.get(url(path))).status, id).toBe(404);
        expect((await post(owner, path, { csrf: await csrfOf(owner, true) })).status, id).toBe(404);
      }
    }
    for (const id of ids) {
      const path = `/admin/oauth-clients/changes/${id.includes('%') ? id : encodeURIComponent(id)}`;
      expect((await post(reviewer, path, { csrf: await csrfOf(reviewer, true), decision: 'reject', reason: 'x' })).status, id).toBe(404);
    }
  });

  it('answers 404, not 500, to client ids no client can have in page URLs (NUL, invalid UTF-8, very long)', async () => {
    const owner = await signIn(dev);
    const reviewer = await signIn(admin);
    // A NUL anywhere in a URL is refused before routing (400); the others are no client (404).
    const clientError = (status: number) => (status === 400 || status === 404 ? 'refused' : status);
    for (const id of ['%00', 'a%00b', '%FF', '%C0%80', 'x'.repeat(4000), '%20', '..']) {
      expect(clientError((await owner.get(url(`/settings/developer/oauth-clients/${id}`))).status), id).toBe('refused');
      expect(clientError((await reviewer.get(url(`/admin/oauth-clients/${id}/suspend`))).status), id).toBe('refused');
      expect((await post(reviewer, `/admin/oauth-clients/${id}/status`, { csrf: await csrfOf(reviewer, true), action: 'approve' })).status, id).toBeLessThan(500);
      expect((await owner.get(url(`/settings/connected-apps/${id}/revoke`))).status, id).toBeLessThan(500);
    }
  });

  it('sends Cache-Control: no-store on the sign-in and consent pages', async () => {
    const app = await approvedClient(server, ['PROFILE_READ'], 'Cache App');
    const browser = new Browser();
    const login = await browser.follow(authorizeUrl(server.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }), server.url);
    expect(login.$('input[name=password]')).toHaveLength(1);
    expect(login.headers.get('cache-control')).toBe('no-store');
    const consent = await reachConsent(browser, server.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, dev);
    expect(consent.$('button:contains("Allow")')).toHaveLength(1);
    expect(consent.headers.get('cache-control')).toBe('no-store');
  });
});
