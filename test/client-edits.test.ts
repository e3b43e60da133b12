// An owner's edits of a reviewed client, attacked as its developer would: nothing that widens what
// the app may reach or what users are shown beside "Approved by …" applies before an administrator
// approves it (issue 32, items 1 and 10). Over real HTTP, on both stores.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser, type Page } from './support/browser.ts';
import { authorize, authorizeUrl, reachConsent, tokenRequest, type TestUser } from './support/oauth.ts';
import { newUser, operator, REDIRECT } from './support/fixtures.ts';
import { clientsCreate, clientsSetScopes, clientsSetStatus, usersSetAdmin } from '../src/admin/commands.ts';
import { decideChange, pendingChangeOf } from '../src/clients/changes.ts';
import { findClient } from '../src/clients/service.ts';
import { admin as runAdmin } from './support/processes.ts';

const BASE = '/settings/developer/oauth-clients';
const POLICY = 'https://app.example.com/privacy';
const TERMS = 'https://app.example.com/terms';

describe('edits of a reviewed client (redis)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let dev: TestUser & { id: number };
  let person: TestUser & { id: number };
  const url = (path: string) => `${server.url}${path}`;

  beforeAll(async () => {
    server = await startTestServer(storage, { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent' });
    [dev, person] = await Promise.all([newUser(server, 'Dev'), newUser(server, 'Person')]);
  });
  afterAll(() => server?.close());

  async function signIn(user: TestUser): Promise<Browser> {
    const browser = new Browser();
    const login = await browser.get(url('/login'));
    expect((await browser.submit(login, 'form[action="/login"]', { email: user.email, password: user.password })).status).toBe(303);
    return browser;
  }

  /** Posts the client's settings form as its owner's browser would, with exactly these fields. */
  async function postSettings(browser: Browser, clientId: string, fields: Record<string, string | string[]>): Promise<Page> {
    const csrf = (await browser.get(url(`${BASE}/${clientId}`))).$('input[name=csrf]').first().val() as string;
    const body = new URLSearchParams({ csrf });
    for (const [k, v] of Object.entries(fields)) for (const value of [v].flat()) body.append(k, value);
    return browser.request(url(`${BASE}/${clientId}`), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
  }

  /** An imported legacy client owned by `dev`, approved and migrated to PROFILE_READ. */
  async function migratedLegacyClient(): Promise<{ client_id: string; client_secret: string }> {
    const created = await clientsCreate(operator(server), { name: 'Imported Tool', redirectUri: [REDIRECT], legacy: true });
    await server.system.db('oauth_clients').where('id', created.client_id).update({ owner_user_id: dev.id });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    await clientsSetScopes(operator(server), created.client_id, ['PROFILE_READ'], { force: true });
    return { client_id: created.client_id, client_secret: created.client_secret! };
  }

  async function gatewayAllows(accessToken: string, method: string, path: string): Promise<number> {
    const res = await fetch(url('/v2/auth/check'), { headers: { authorization: `Bearer ${accessToken}`, 'x-original-method': method, 'x-original-uri': path } });
    return res.status;
  }

  it('keeps a migrated legacy client scoped when its owner sends no scope: full access waits for an administrator', async () => {
    const client = await migratedLegacyClient();
    const browser = await signIn(dev);
    const res = await postSettings(browser, client.client_id, { redirect_uris: REDIRECT });
    expect(res.status).toBe(303);
    const after = (await findClient(server.system.db, client.client_id))!;
    expect(after).toMatchObject({ legacy: true, scopes: ['PROFILE_READ'] });
    expect(await pendingChangeOf(server.system.db, client.client_id)).toMatchObject({ toFullAccess: true, addScopes: [] });
    const page = await browser.get(url(`${BASE}/${client.client_id}`));
    expect(page.$('.notice:contains("Waiting for review")').text()).toContain('full access again');

    // Users' new authorizations stay within PROFILE_READ: wider scopes are refused.
    const wide = await new Browser().follow(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'ORG_BOOKING_WRITE ORG_PROFILE_WRITE', state: 's' }), server.url);
    expect(new URL(wide.location!).searchParams.get('error')).toBe('invalid_scope');
    const back = await authorize(new Browser(), server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, person);
    const tokens = await tokenRequest(server.url, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, ...client });
    expect(tokens.body.scope).toBe('PROFILE_READ');
    expect(await gatewayAllows(tokens.body.access_token as string, 'DELETE', '/v2/organizations/1/bookings/77')).toBe(403);

    // An administrator's approval is the only way back to full access.
    await decideChange(server.system, (await pendingChangeOf(server.system.db, client.client_id))!.id, true, { actor: 'user:admin' });
    expect((await findClient(server.system.db, client.client_id))!.scopes).toEqual([]);
  });

  it('refuses to replace every approved scope while the new ones wait, and changes nothing', async () => {
    const client = await migratedLegacyClient();
    const browser = await signIn(dev);
    const res = await postSettings(browser, client.client_id, { redirect_uris: REDIRECT, scope: 'BOOKING_READ' });
    expect(res.status).toBe(400);
    expect(res.$('.alert').text()).toContain('Keep at least one of the approved scopes until the new ones are reviewed');
    expect((await findClient(server.system.db, client.client_id))!.scopes).toEqual(['PROFILE_READ']);
    expect(await pendingChangeOf(server.system.db, client.client_id)).toBeUndefined();
  });

  it('holds new policy and terms links of an approved client for review; removing one applies at once', async () => {
    const created = await clientsCreate(operator(server), { name: 'Linked App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'], policyUri: POLICY, tosUri: TERMS });
    await server.system.db('oauth_clients').where('id', created.client_id).update({ owner_user_id: dev.id });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    const browser = await signIn(dev);
    const evil = 'https://phish.example.net/privacy';
    expect((await postSettings(browser, created.client_id, { redirect_uris: REDIRECT, scope: 'PROFILE_READ', policy_uri: evil, tos_uri: '' })).status).toBe(303);

    // The terms link is gone at once; the new policy link waits, the approved one is still shown.
    expect(await findClient(server.system.db, created.client_id)).toMatchObject({ policyUri: POLICY, tosUri: null });
    const change = (await pendingChangeOf(server.system.db, created.client_id))!;
    expect(change).toMatchObject({ toFullAccess: false, addScopes: [], addRedirectUris: [], setLinks: { policyUri: evil, tosUri: null } });
    const consent = await reachConsent(new Browser(), server.url, { client_id: created.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, person);
    expect(consent.$(`a[href="${POLICY}"]`)).toHaveLength(1);
    expect(consent.html).not.toContain(evil);

    await decideChange(server.system, change.id, true, { actor: 'user:admin' });
    expect(await findClient(server.system.db, created.client_id)).toMatchObject({ policyUri: evil, tosUri: null });
  });

  it('the operator scripts decide a pending change by the client id: reject-change keeps what was approved, approve-change applies it; none pending is refused', async () => {
    const created = await clientsCreate(operator(server), { name: 'Scripted App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    await server.system.db('oauth_clients').where('id', created.client_id).update({ owner_user_id: dev.id });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    const cli = (...args: string[]) => runAdmin(['--json', ...args], { DATABASE_URL: server.pg.url, REDIS_URL: server.redis!.url });
    const browser = await signIn(dev);
    const ask = () => postSettings(browser, created.client_id, { redirect_uris: REDIRECT, scope: ['PROFILE_READ', 'BOOKING_READ'] });
    expect((await ask()).status).toBe(303);
    const rejected = await cli('--reason', 'not needed', 'clients', 'reject-change', created.client_id);
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(JSON.parse(rejected.stdout)).toMatchObject({ client_id: created.client_id, scopes: ['PROFILE_READ'] });
    expect(await pendingChangeOf(server.system.db, created.client_id)).toBeUndefined();
    expect((await ask()).status).toBe(303);
    const approved = await cli('clients', 'approve-change', created.client_id);
    expect(JSON.parse(approved.stdout)).toMatchObject({ scopes: ['PROFILE_READ', 'BOOKING_READ'] });
    const none = await cli('clients', 'approve-change', created.client_id);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toMatch(/has no pending change/);
  });

  it("refuses an administrator's approval of a client whose links changed since the page showed it", async () => {
    const admin = await newUser(server, 'Admin');
    await usersSetAdmin(operator(server), admin.email);
    const created = await clientsCreate(operator(server), { name: 'Relinked App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'], policyUri: POLICY });
    await server.system.db('oauth_clients').where('id', created.client_id).update({ owner_user_id: dev.id });
    const reviewer = await signIn(admin);
    const table = await reviewer.get(url(`/admin/oauth-clients?q=${encodeURIComponent('Relinked App')}`));
    expect(table.$(`tr[id="client-${created.client_id}"]`).text()).toContain(POLICY);
    // Before review the owner's new link applies at once; the approval the page offered is stale.
    const owner = await signIn(dev);
    expect((await postSettings(owner, created.client_id, { redirect_uris: REDIRECT, scope: 'PROFILE_READ', policy_uri: 'https://phish.example.net/p' })).status).toBe(303);
    const refused = await reviewer.submit(table, `tr[id="client-${created.client_id}"] button[value=approve]`);
    const shown = await reviewer.get(refused.location!);
    expect(shown.$(`tr[id="client-${created.client_id}"] .alert`).text()).toContain('changed since you opened the page');
    expect((await findClient(server.system.db, created.client_id))!.status).toBe('pending');
  });
});
