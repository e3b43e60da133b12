// Legacy clients and their migration to scopes (spec 3 rule 4 and 5.6), the whole story over HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorize, authorizeUrl, getMe, reachConsent, tokenRequest, type TestUser } from './support/oauth.ts';
import { newUser, operator, REDIRECT, type TestClient } from './support/fixtures.ts';
import { clientsCreate, clientsSetScopes, clientsSetStatus, clientsShow } from '../src/admin/commands.ts';
import { migrateLatest } from '../src/storage/db.ts';
import { migrationSource } from '../migrations/index.ts';
import { createTestDatabase } from './support/services.ts';
import { ALL_SCOPES } from '../src/scopes.ts';

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

  it('the order guard judges the switch: it refuses while requests without scope keep coming after the first scoped one; --force applies it', async () => {
    // Right after step (a) nothing stands in the way: the unscoped requests came before the switch.
    let shown = await clientsShow(operator(server), client.client_id);
    expect(shown.migration).toMatchObject({ unscoped_requests_since_first_scoped: 0, set_scopes_refused_because: null, first_scoped_request_at: expect.stringMatching(/^\d{4}-/) });

    // Two users still reach the old URL.
    await errorFor({});
    await errorFor({});
    const refusal = /the app began sending scope at \d{4}-\d\d-\d\dT.*, but 2 authorization request\(s\) without scope came since \(the last at (\d{4}-\d\d-\d\dT[^)]*)\).*--force/;
    const error: Error = await clientsSetScopes(operator(server), client.client_id, ['PROFILE_READ BOOKING_READ']).then(
      () => { throw new Error('set-scopes was not refused'); },
      (err: Error) => err,
    );
    expect(error.message).toMatch(refusal);
    shown = await clientsShow(operator(server), client.client_id);
    expect(shown.scopes).toEqual([]);
    // `clients show` says the same: how many since the first scoped request, and when the last came.
    expect(shown.migration).toMatchObject({ state: 'migrating', unscoped_requests_since_first_scoped: 2, last_unscoped_request_at: refusal.exec(error.message)![1] });
    expect(error.message).toContain(shown.migration!.set_scopes_refused_because!);

    const migrated = await clientsSetScopes(operator(server), client.client_id, ['PROFILE_READ BOOKING_READ'], { force: true });
    expect(migrated.scopes).toEqual(['PROFILE_READ', 'BOOKING_READ']);
    expect((await clientsShow(operator(server), client.client_id)).migration).toMatchObject({ state: 'migrated', set_scopes_refused_because: null });
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

describe('the order guard over days (spec 5.6 point 3): it judges the switch, not the calendar', () => {
  const DAY = 86_400_000;

  async function legacyClient(name: string): Promise<string> {
    const created = await clientsCreate(operator(server), { name, redirectUri: [REDIRECT], legacy: true });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    return created.client_id;
  }

  /** One authorization request of the app (it reaches the sign-in page and is counted). */
  async function authorizationRequest(clientId: string, scope?: string) {
    const page = await new Browser().follow(authorizeUrl(server.url, { client_id: clientId, redirect_uri: REDIRECT, state: 's', ...(scope ? { scope } : {}) }), server.url);
    expect(page.status).toBe(200);
  }

  /** Moves everything recorded for the client `days` into the past, as if that time had passed. */
  async function daysPass(clientId: string, days: number) {
    const db = server.pg.db;
    const back = (column: string) => db.raw(`${column} - ? * interval '1 day'`, [days]);
    await db('client_scope_requests').where('client_id', clientId).update({ day: db.raw('day - ?::int', [days]), last_at: back('last_at') });
    await db('legacy_scope_switch').where('client_id', clientId).update({ first_scoped_at: back('first_scoped_at'), last_unscoped_at: back('last_unscoped_at') });
  }

  const trySetScopes = (clientId: string) => clientsSetScopes(operator(server), clientId, ['PROFILE_READ']).then(() => 'set', (err: Error) => err.message);

  it('lets the operator who follows the spec order set scopes as soon as the app sends scope', async () => {
    const id = await legacyClient('Spec Order');
    // A week of users on the old URL, the last of them two days ago…
    for (let i = 0; i < 3; i++) {
      await authorizationRequest(id);
      await daysPass(id, 2); // the requests end up 6, 4 and 2 days ago
    }
    // …then the app adds scope to its URL (step a) and scoped requests arrive.
    await authorizationRequest(id, 'PROFILE_READ');
    await authorizationRequest(id, 'PROFILE_READ');
    const shown = await clientsShow(operator(server), id);
    expect(await trySetScopes(id)).toBe('set'); // step (b), without --force
    expect(shown.migration).toMatchObject({ state: 'migrating', unscoped_requests_last_7_days: 3, unscoped_requests_since_first_scoped: 0, set_scopes_refused_because: null });
  });

  it('refuses while requests without scope keep arriving after the switch, until none has come for 7 days', async () => {
    const id = await legacyClient('Half Switched');
    await authorizationRequest(id);
    await daysPass(id, 10);
    await authorizationRequest(id, 'PROFILE_READ'); // the switch
    await authorizationRequest(id); // an old link the app forgot
    await daysPass(id, 3);
    expect(await trySetScopes(id)).toMatch(/but 1 authorization request\(s\) without scope came since/);
    await authorizationRequest(id); // still coming
    await daysPass(id, 5);
    const refusal = await trySetScopes(id);
    expect(refusal).toMatch(/but 2 authorization request\(s\) without scope came since/);
    const shown = await clientsShow(operator(server), id);
    expect(shown.migration).toMatchObject({ unscoped_requests_since_first_scoped: 2, set_scopes_refused_because: expect.any(String) });
    expect(refusal).toContain(shown.migration!.set_scopes_refused_because!);
    expect(refusal).toContain(`the last at ${shown.migration!.last_unscoped_request_at}`);
    await daysPass(id, 3); // 8 days since the last request without scope
    expect((await clientsShow(operator(server), id)).migration?.set_scopes_refused_because).toBeNull();
    expect(await trySetScopes(id)).toBe('set');
  });

  it('for an app that never sent scope, refuses while requests without scope came in the last 7 days', async () => {
    const id = await legacyClient('Never Switched');
    await authorizationRequest(id);
    await daysPass(id, 6);
    expect(await trySetScopes(id)).toMatch(/sent 1 authorization request\(s\) without scope in the last 7 days \(the last at \d{4}-.*\) and none with scope yet/);
    await daysPass(id, 2);
    expect(await trySetScopes(id)).toBe('set');
  });

  it('dates the switch of apps already migrating when the table is added, erring towards refusing', async () => {
    const pg = await createTestDatabase({ migrate: false });
    try {
      const before007 = { ...migrationSource, getMigrations: async () => (await migrationSource.getMigrations([])).filter((name) => name < '007') };
      await pg.db.migrate.latest({ migrationSource: before007 });
      const now = Date.now();
      const at = (daysAgo: number) => new Date(now - daysAgo * DAY);
      const day = (daysAgo: number) => at(daysAgo).toISOString().slice(0, 10);
      await pg.db('client_scope_requests').insert([
        { client_id: 'a', day: day(5), scope_set: '', count: 4, last_at: at(5) },
        { client_id: 'a', day: day(3), scope_set: 'PROFILE_READ', count: 2, last_at: at(3) },
        { client_id: 'a', day: day(3), scope_set: '', count: 1, last_at: at(3) },
        { client_id: 'a', day: day(1), scope_set: '', count: 2, last_at: at(1) },
        { client_id: 'b', day: day(2), scope_set: '', count: 7, last_at: at(2) },
        { client_id: 'c', day: day(2), scope_set: 'PROFILE_READ', count: 1, last_at: at(2) },
      ]);
      await migrateLatest(pg.db);
      const rows = await pg.db('legacy_scope_switch').orderBy('client_id');
      expect(rows.map((r) => [r.client_id, r.unscoped_since, r.last_unscoped_at?.getTime() ?? null])).toEqual([
        ['a', 3, at(1).getTime()],
        ['c', 0, null],
      ]);
    } finally {
      await pg.drop();
    }
  });
});
