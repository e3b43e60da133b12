// The consent page explains who is asking and what they get: the platform, the app's developer,
// whether the platform reviewed it, its policy links, where the browser goes back to, the scopes
// grouped by whose data they reach, and the legacy full-access warning. Plus where the links
// come from: the developer registration form and `clients create`, both refusing unsafe links.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser, type Page } from './support/browser.ts';
import { reachConsent, type TestUser } from './support/oauth.ts';
import { newUser, operator, REDIRECT } from './support/fixtures.ts';
import { admin } from './support/processes.ts';
import { clientsCreate, clientsSetStatus } from '../src/admin/commands.ts';
import { ConfigError, loadConfig } from '../src/config.ts';

const PLATFORM = 'Acme Scheduling';
const POLICY = 'https://calsync.example/privacy';
const TERMS = 'http://localhost:8080/terms';

let server: TestServer;
let dev: TestUser & { id: number };
let user: TestUser & { id: number };

beforeAll(async () => {
  server = await startTestServer('redis', { PLATFORM_NAME: PLATFORM });
  [dev, user] = await Promise.all([newUser(server, 'Dana Developer'), newUser(server, 'Uma User')]);
});
afterAll(() => server?.close());

const url = (path: string) => `${server.url}${path}`;
const text = (page: Page, selector: string) => page.$(selector).text().replace(/\s+/g, ' ').trim();
const texts = (page: Page, selector: string) => page.$(selector).map((_, el) => page.$(el).text().replace(/\s+/g, ' ').trim()).get();

async function signedIn(person: TestUser): Promise<Browser> {
  const browser = new Browser();
  const login = await browser.get(url('/login?next=%2Fsettings%2Fdeveloper%2Foauth-clients'));
  expect((await browser.submit(login, 'form[action="/login"]', { email: person.email, password: person.password })).status).toBe(303);
  return browser;
}

/** Posts the developer registration form with these fields. */
async function register(browser: Browser, fields: Record<string, string | string[]>): Promise<Page> {
  const form = await browser.get(url('/settings/developer/oauth-clients/new'));
  const body = new URLSearchParams({ csrf: form.$('input[name=csrf]').val() as string });
  for (const [k, v] of Object.entries(fields)) for (const value of [v].flat()) body.append(k, value);
  return browser.request(url('/settings/developer/oauth-clients'), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
}

async function clientIdNamed(name: string): Promise<string> {
  const row = await server.pg.db('oauth_clients').where('name', name).first('id');
  expect(row, `no client named ${name}`).toBeDefined();
  return row.id as string;
}

const consentFor = (person: TestUser, clientId: string, scope?: string, extra: Record<string, string> = {}) =>
  reachConsent(new Browser(), server.url, { client_id: clientId, redirect_uri: REDIRECT, ...(scope ? { scope } : {}), state: 's', ...extra }, person);

describe('who is asking', () => {
  let devClient: string;

  beforeAll(async () => {
    const browser = await signedIn(dev);
    const res = await register(browser, { name: 'Calendar Sync Pro', kind: 'confidential', redirect_uris: REDIRECT, scope: ['PROFILE_READ', 'BOOKING_READ'], policy_uri: POLICY, tos_uri: TERMS });
    expect(res.status, res.html.slice(0, 300)).toBe(200); // the secret, shown once
    devClient = await clientIdNamed('Calendar Sync Pro');
  });

  it('says a pending app tried by its developer is not reviewed yet, with no approval mark', async () => {
    const consent = await consentFor(dev, devClient, 'PROFILE_READ');
    expect(consent.status).toBe(200);
    expect(consent.$('.consent-mark-approved')).toHaveLength(0);
    expect(text(consent, '.consent-review')).toContain('Not reviewed yet');
    expect(text(consent, '.consent-review')).toContain(`${PLATFORM} has not reviewed this app`);
  });

  it('names the platform, the app, its developer, where it sends the user back and its policies, with the approval mark', async () => {
    await clientsSetStatus(operator(server), devClient, 'approved');
    const consent = await consentFor(user, devClient, 'PROFILE_READ BOOKING_READ');
    expect(text(consent, '.brand')).toBe(PLATFORM);
    expect(text(consent, 'h1')).toBe('Calendar Sync Pro wants access to your account');
    expect(text(consent, '.consent-developer')).toBe(`Dana Developer (${dev.email})`);
    expect(text(consent, '.consent-mark-approved')).toBe(`✓ Approved by ${PLATFORM}`);
    expect(text(consent, '.consent-review')).not.toContain('Not reviewed');
    expect(text(consent, '.consent-return')).toBe('app.example.com');
    expect(consent.$('.consent-links a[href="' + POLICY + '"]').text()).toBe('Privacy policy');
    expect(consent.$('.consent-links a[href="' + TERMS + '"]').text()).toBe('Terms of service');
    // The account, and the way out of it, are still there.
    expect(text(consent, '.lead')).toContain(user.email);
    expect(consent.$('button:contains("Not you? Use another account")')).toHaveLength(1);
  });

  it('says an app registered with the operator scripts comes from the operators, and shows no links it was not given', async () => {
    const created = await clientsCreate(operator(server), { name: 'Ops Tool', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    const consent = await consentFor(user, created.client_id, 'PROFILE_READ');
    expect(text(consent, '.consent-developer')).toBe(`Registered by the operators of ${PLATFORM}`);
    expect(consent.$('.consent-mark-approved')).toHaveLength(1);
    expect(consent.$('.consent-links')).toHaveLength(0);
    expect(consent.html).not.toContain('Privacy policy');
  });

  it('names the app on this device that a native app returns to', async () => {
    const created = await clientsCreate(operator(server), { name: 'Phone App', redirectUri: ['com.example.app:/cb'], scope: ['PROFILE_READ'], public: true });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    const pkce = { code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' };
    const consent = await reachConsent(new Browser(), server.url, { client_id: created.client_id, redirect_uri: 'com.example.app:/cb', scope: 'PROFILE_READ', state: 's', ...pkce }, user);
    expect(text(consent, '.consent-return')).toBe('com.example.app (an app on this device)');
  });
});

describe('what the app gets', () => {
  let wide: string;

  beforeAll(async () => {
    const scopes = ['PROFILE_READ', 'BOOKING_WRITE', 'TEAM_BOOKING_READ', 'ORG_BOOKING_READ', 'ORG_BOOKING_WRITE'];
    wide = (await clientsCreate(operator(server), { name: 'Org Planner', redirectUri: [REDIRECT], scope: scopes })).client_id;
    await clientsSetStatus(operator(server), wide, 'approved');
  });

  it('groups scopes by whose data they reach, viewing apart from changing, with marks for changes and organization-wide access', async () => {
    const consent = await consentFor(user, wide, 'ORG_BOOKING_WRITE PROFILE_READ TEAM_BOOKING_READ BOOKING_WRITE ORG_BOOKING_READ');
    expect(texts(consent, '.consent-group h2')).toEqual(['Your account', 'Your teams', 'Everyone in your organization Organization-wide']);
    expect(consent.$('.consent-group-org .consent-mark-org')).toHaveLength(1);
    expect(consent.$('.consent-group-you .consent-mark-org, .consent-group-team .consent-mark-org')).toHaveLength(0);

    const you = (selector: string) => consent.$('.consent-group-you').find(selector);
    expect(you('h3').map((_, h) => consent.$(h).text()).get()).toEqual(['View', 'Can change']);
    expect(you('.scopes').first().text().trim()).toBe('See your profile, including your e-mail address');
    // The changes sit under their "Can change" heading, which is the mark (not repeated on each).
    expect(you('h3 + .consent-changes li').text().replace(/\s+/g, ' ').trim()).toMatch(/^Add guests and attendees/);
    expect(you('h3:has(.consent-mark-change) + .consent-changes li')).toHaveLength(1);

    const org = consent.$('.consent-group-org');
    expect(org.find('.scopes').first().text().trim()).toBe('See all bookings across your organization');
    expect(org.find('h3 .consent-mark-change').text()).toBe('Can change');
    expect(org.find('h3:has(.consent-mark-change) + .consent-changes li')).toHaveLength(1);
    // Every change is under a mark in words (one per group that changes), and nothing else is.
    expect(consent.$('.scopes li')).toHaveLength(5);
    expect(consent.$('.consent-mark-change')).toHaveLength(2);
    expect(consent.$('.scopes:not(.consent-changes) li')).toHaveLength(3);
    expect(consent.$('.scopes li').text()).not.toContain('Can change');
  });

  it('keeps the raw scope codes under a fold, not in the plain-words list', async () => {
    const consent = await consentFor(user, wide, 'PROFILE_READ ORG_BOOKING_WRITE');
    expect(consent.$('details.consent-codes summary')).toHaveLength(1);
    expect(texts(consent, 'details.consent-codes code')).toEqual(['PROFILE_READ', 'ORG_BOOKING_WRITE']);
    expect(consent.$('.scopes').text()).not.toMatch(/PROFILE_READ|ORG_BOOKING_WRITE/);
  });

  it('says the access lasts while the user is away, until revoked under apps with access', async () => {
    const consent = await consentFor(user, wide, 'PROFILE_READ');
    expect(text(consent, '.consent-lasting')).toBe('If you allow it, Org Planner keeps this access while you are away, until you revoke it under Apps with access.');
    expect(consent.$('.consent-lasting a').attr('href')).toBe('/settings/connected-apps');
    expect(consent.$('button[value=allow]').hasClass('primary')).toBe(true);
    expect(consent.$('button[value=deny]').hasClass('primary')).toBe(false);
  });

  it('warns plainly about legacy full access, and Deny is not the weaker button there', async () => {
    const legacy = await clientsCreate(operator(server), { name: 'Old Sync', redirectUri: [REDIRECT], legacy: true });
    await clientsSetStatus(operator(server), legacy.client_id, 'approved');
    const consent = await consentFor(user, legacy.client_id);
    const warning = text(consent, '.consent-full-access');
    expect(warning).toContain('full access to your account');
    expect(warning).toContain("your teams' event types, bookings, schedules and members");
    expect(warning).toContain('everyone in your organization');
    expect(warning).toContain('changing and deleting any of it');
    expect(consent.$('.consent-group, details.consent-codes, .scopes li')).toHaveLength(0);
    expect(consent.$('button[value=deny]').hasClass('primary')).toBe(true);
    expect(consent.$('button[value=allow]').hasClass('primary')).toBe(false);
    expect(texts(consent, 'button[name=decision]')).toEqual(['Allow', 'Deny']);
  });
});

describe('policy and terms links', () => {
  it('refuses links that are not https (or http on localhost), or too long, and registers nothing', async () => {
    const browser = await signedIn(dev);
    const base = { kind: 'public', redirect_uris: REDIRECT, scope: 'PROFILE_READ' };
    for (const [field, value, reason] of [
      ['policy_uri', 'http://calsync.example/privacy', /https/],
      ['tos_uri', 'javascript:alert(1)', /https/],
      ['policy_uri', 'ftp://calsync.example/privacy', /https/],
      ['tos_uri', 'not a link', /absolute URL/],
      ['policy_uri', `https://calsync.example/${'x'.repeat(600)}`, /at most 500 characters/],
    ] as const) {
      const res = await register(browser, { ...base, name: `Refused ${field} ${value.slice(0, 20)}`, [field]: value });
      expect(res.status, value).toBe(400);
      expect(text(res, `#${field}-error`), value).toMatch(reason);
      expect(res.$(`#${field}`).attr('aria-invalid')).toBe('true');
    }
    expect(await server.pg.db('oauth_clients').where('name', 'like', 'Refused %')).toHaveLength(0);
  });

  it('shows them on the developer client page, where the developer changes them; a bad one changes nothing', async () => {
    const browser = await signedIn(dev);
    expect((await register(browser, { name: 'Linked App', kind: 'public', redirect_uris: REDIRECT, scope: 'PROFILE_READ', policy_uri: POLICY })).status).toBe(303);
    const id = await clientIdNamed('Linked App');
    const page = await browser.get(url(`/settings/developer/oauth-clients/${id}`));
    expect(page.$('.client-policy a').attr('href')).toBe(POLICY);
    expect(text(page, '.client-tos')).toBe('none');
    expect(page.$('#policy_uri').val()).toBe(POLICY);

    const save = (fields: Record<string, string>) => {
      const body = new URLSearchParams({ csrf: page.$('input[name=csrf]').val() as string, redirect_uris: REDIRECT, scope: 'PROFILE_READ', ...fields });
      return browser.request(url(`/settings/developer/oauth-clients/${id}`), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
    };
    const refused = await save({ policy_uri: 'http://evil.example/privacy', tos_uri: TERMS });
    expect(refused.status).toBe(400);
    expect(text(refused, '#policy_uri-error')).toMatch(/https/);
    expect(await server.pg.db('oauth_clients').where('id', id).first('policy_uri', 'tos_uri')).toEqual({ policy_uri: POLICY, tos_uri: null });

    expect((await save({ policy_uri: '', tos_uri: TERMS })).status).toBe(303);
    expect(await server.pg.db('oauth_clients').where('id', id).first('policy_uri', 'tos_uri')).toEqual({ policy_uri: null, tos_uri: TERMS });
    // A form without the link fields (an older page) leaves them as they are.
    expect((await save({})).status).toBe(303);
    expect((await server.pg.db('oauth_clients').where('id', id).first('tos_uri')).tos_uri).toBe(TERMS);
  });

  it('takes them in `clients create --policy-uri --tos-uri`, shows them on `clients show`, and refuses unsafe ones', async () => {
    const env = { DATABASE_URL: server.pg.url };
    const created = await admin(['--json', 'clients', 'create', '--name', 'Scripted', '--redirect-uri', REDIRECT, '--scope', 'PROFILE_READ', '--policy-uri', POLICY, '--tos-uri', TERMS], env);
    expect(created.code, created.stderr).toBe(0);
    const id = JSON.parse(created.stdout).client_id as string;
    const shown = JSON.parse((await admin(['--json', 'clients', 'show', id], env)).stdout);
    expect(shown).toMatchObject({ policy_uri: POLICY, tos_uri: TERMS });

    const plain = await admin(['--json', 'clients', 'create', '--name', 'Scripted Plain', '--redirect-uri', REDIRECT, '--scope', 'PROFILE_READ'], env);
    expect(JSON.parse(plain.stdout)).toMatchObject({ policy_uri: null, tos_uri: null });

    const refused = await admin(['--json', 'clients', 'create', '--name', 'Scripted Bad', '--redirect-uri', REDIRECT, '--scope', 'PROFILE_READ', '--tos-uri', 'http://terms.example/'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/terms of service link must use https/);
    expect(await server.pg.db('oauth_clients').where('name', 'Scripted Bad')).toHaveLength(0);
  });
});

describe('PLATFORM_NAME', () => {
  it('has a default, is trimmed, and refuses names that could reorder the page', () => {
    expect(loadConfig({}).platformName).toBe('Scheduling Platform');
    expect(loadConfig({ PLATFORM_NAME: '  Acme  ' }).platformName).toBe('Acme');
    expect(() => loadConfig({ PLATFORM_NAME: 'Acme\u202eevil' })).toThrow(ConfigError);
    expect(() => loadConfig({ PLATFORM_NAME: 'x'.repeat(61) })).toThrow(/PLATFORM_NAME/);
  });
});
