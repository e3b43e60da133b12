// Legacy clients and their migration to scopes (spec 3 rule 4 and 5.6), the whole story over HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorize, authorizeUrl, getMe, reachConsent, tokenRequest, type TestUser } from './support/oauth.ts';
import { newUser, operator, REDIRECT, type TestClient } from './support/fixtures.ts';
import { clientsCreate, clientsSetScopes, clientsSetStatus, clientsShow } from '../src/admin/commands.ts';
import { ALL_SCOPES } from '../src/oauth/scopes.ts';

let server: TestServer;
let client: TestClient;
let ada: TestUser;
let bob: TestUser;
let cyd: TestUser;

beforeAll(async () => {
  server = await startTestServer('redis');
  const created = await clientsCreate(operator(server), { name: 'Old Sync Tool', redirectUri: [REDIRECT], legacy: true });
  expect(created.scopes).toEqual([]);
  await clientsSetStatus(operator(server), created.client_id, 'approved');
  client = { client_id: created.client_id, client_secret: created.client_secret! };
  [ada, bob, cyd] = await Promise.all([newUser(server, 'Ada'), newUser(server, 'Bob'), newUser(server, 'Cyd')]);
});
afterAll(() => server?.close());

/** Authorizes (scope omitted when undefined) and exchanges the code. */
async function tokens(user: TestUser, scope: string | undefined, browser = new Browser()) {
  const back = await authorize(browser, server.url, { client_id: client.client_id, redirect_uri: REDIRECT, state: 's', ...(scope ? { scope } : {}) }, user);
  const code = back.searchParams.get('code');
  expect(code, back.href).toBeTruthy();
  const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, ...client });
  expect(res.status).toBe(200);
  return res.body as { access_token: string; refresh_token: string; scope: string };
}

async function check(method: string, uri: string, token: string) {
  const res = await fetch(`${server.url}/v2/auth/check`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-method': method, 'x-forwarded-uri': uri } });
  return { status: res.status, scopes: res.headers.get('x-auth-scopes') };
}

const ANYWHERE: Array<[string, string]> = [
  ['GET', '/v2/me'],
  ['PATCH', '/v2/me'],
  ['DELETE', '/v2/event-types/1'],
  ['POST', '/v2/teams/5/memberships'],
  ['PUT', '/v2/organizations/1/schedules/3'],
  ['GET', '/v2/calendars/busy-times'],
];

async function errorFor(query: Record<string, string>) {
  const page = await new Browser().follow(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: REDIRECT, state: 'q', ...query }), server.url);
  if (!page.location) return { status: page.status, error: null as string | null, description: null as string | null };
  const back = new URL(page.location);
  return { status: page.status, error: back.searchParams.get('error'), description: back.searchParams.get('error_description') };
}

describe('a legacy client and its migration to scopes', () => {
  let adaLegacy: Awaited<ReturnType<typeof tokens>>;
  let bobLegacy: Awaited<ReturnType<typeof tokens>>;
  const adaBrowser = new Browser();

  it('authorizes without scope, says so plainly on the consent page, and issues an unscoped token that passes every rule', async () => {
    const consent = await reachConsent(adaBrowser, server.url, { client_id: client.client_id, redirect_uri: REDIRECT, state: 's' }, ada);
    expect(consent.$('.alert').text()).toContain('full access to your account');
    expect(consent.$('.scopes li')).toHaveLength(0);

    adaLegacy = await tokens(ada, undefined, adaBrowser);
    expect(adaLegacy.scope).toBe('');
    expect((await getMe(server.url, adaLegacy.access_token)).status).toBe(200);
    for (const [method, uri] of ANYWHERE) {
      const res = await check(method, uri, adaLegacy.access_token);
      expect(res.status, `${method} ${uri}`).toBe(200);
      expect(res.scopes).toBe(ALL_SCOPES.join(' '));
    }
    bobLegacy = await tokens(bob, undefined);

    // Refresh keeps it unscoped.
    const refreshed = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: bobLegacy.refresh_token, ...client });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.scope).toBe('');
    bobLegacy = refreshed.body as typeof bobLegacy;
    expect((await check('DELETE', '/v2/event-types/1', bobLegacy.access_token)).status).toBe(200);

    const shown = await clientsShow(operator(server), client.client_id);
    // Three requests without scope: Ada's (consent page, then again to finish) and Bob's.
    expect(shown.migration).toMatchObject({ state: 'legacy', unscoped_requests_last_7_days: 3, requested_scopes_recently: [] });
  });

  it('step (a): with scope in the URL and client scopes unset, any catalogue scope is accepted and limits the new tokens', async () => {
    const scoped = await tokens(cyd, 'PROFILE_READ,ORG_BOOKING_READ');
    expect(scoped.scope.split(' ').sort()).toEqual(['ORG_BOOKING_READ', 'PROFILE_READ']);
    expect((await getMe(server.url, scoped.access_token)).status).toBe(200);
    expect((await check('GET', '/v2/organizations/1/bookings', scoped.access_token)).status).toBe(200);
    expect((await check('DELETE', '/v2/event-types/1', scoped.access_token)).status).toBe(403);
    expect((await check('PATCH', '/v2/me', scoped.access_token)).status).toBe(403);
    expect((await errorFor({ scope: 'PROFILE_READ NOT_A_SCOPE' })).error).toBe('invalid_scope');

    const shown = await clientsShow(operator(server), client.client_id);
    expect(shown.migration).toMatchObject({ state: 'migrating', requested_scopes_recently: ['ORG_BOOKING_READ', 'PROFILE_READ'] });
  });

  it('the order guard refuses set-scopes after recent requests without scope, naming how many and when; --force applies it', async () => {
    await expect(clientsSetScopes(operator(server), client.client_id, ['PROFILE_READ BOOKING_READ'])).rejects.toThrow(
      /sent 3 authorization request\(s\) without scope in the last 7 days \(last at \d{4}-\d\d-\d\dT.*--force/,
    );
    expect((await clientsShow(operator(server), client.client_id)).scopes).toEqual([]);

    const migrated = await clientsSetScopes(operator(server), client.client_id, ['PROFILE_READ BOOKING_READ'], { force: true });
    expect(migrated.scopes).toEqual(['PROFILE_READ', 'BOOKING_READ']);
    expect((await clientsShow(operator(server), client.client_id)).migration?.state).toBe('migrated');
    const audit = await server.pg.db('audit_events').where({ client_id: client.client_id, action: 'client.scopes_set' }).first();
    expect(audit.details).toMatchObject({ forced: true, to: ['PROFILE_READ', 'BOOKING_READ'] });
  });

  it('step (b): a request without scope now fails clearly, an out-of-set scope fails, an in-set scope works', async () => {
    expect(await errorFor({})).toMatchObject({ status: 303, error: 'invalid_scope', description: 'the scope parameter is required' });
    expect((await errorFor({ scope: 'SCHEDULE_READ' })).error).toBe('invalid_scope');
    const scoped = await tokens(cyd, 'BOOKING_READ');
    expect(scoped.scope).toBe('BOOKING_READ');
  });

  it("keeps each user's pre-migration tokens until that user authorizes again, then revokes them", async () => {
    // Still valid after the client migrated.
    expect((await getMe(server.url, adaLegacy.access_token)).status).toBe(200);
    expect((await check('POST', '/v2/teams/5/memberships', adaLegacy.access_token)).status).toBe(200);

    // Ada authorizes again in the same browser: consent is asked (the legacy grant is not reused).
    const consent = await reachConsent(adaBrowser, server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, ada);
    expect(consent.$('.scopes li').text()).toContain('See your profile');
    const adaNew = await tokens(ada, 'PROFILE_READ', adaBrowser);
    expect((await getMe(server.url, adaNew.access_token)).status).toBe(200);
    expect((await check('POST', '/v2/teams/5/memberships', adaNew.access_token)).status).toBe(403);

    expect((await getMe(server.url, adaLegacy.access_token)).status).toBe(401);
    const oldRefresh = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: adaLegacy.refresh_token, ...client });
    expect(oldRefresh.status).toBe(400);
    expect(oldRefresh.body.error).toBe('invalid_grant');

    // Bob has not come back: his pre-migration token is untouched, and still refreshes.
    expect((await getMe(server.url, bobLegacy.access_token)).status).toBe(200);
    const bobRefresh = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: bobLegacy.refresh_token, ...client });
    expect(bobRefresh.status).toBe(200);
    expect((await check('DELETE', '/v2/event-types/1', bobRefresh.body.access_token as string)).status).toBe(200);
  });

  it('lets a legacy client that never sent an unscoped request set scopes without --force', async () => {
    const fresh = await clientsCreate(operator(server), { name: 'Careful Tool', redirectUri: [REDIRECT], legacy: true });
    await clientsSetStatus(operator(server), fresh.client_id, 'approved');
    const freshClient = { client_id: fresh.client_id, client_secret: fresh.client_secret! };
    await authorize(new Browser(), server.url, { client_id: freshClient.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }, cyd);
    expect((await clientsShow(operator(server), fresh.client_id)).migration?.state).toBe('migrating');
    expect((await clientsSetScopes(operator(server), fresh.client_id, ['PROFILE_READ'])).scopes).toEqual(['PROFILE_READ']);
  });
});
