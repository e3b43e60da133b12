// Issue 35 point 3: tokens bound to an organization and teams (src/orgs/bindings.ts). Their access
// tokens carry the binding (org_id, team_ids); the gateway check and our own routes refuse other
// teams and organizations with 403 access_denied and tell the gateway the binding; introspection
// shows it, the same on the fast path and the provider's; a refresh keeps it, either way; unbound
// tokens are judged exactly as before.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { approvedClient, newUser, type TestClient } from './support/fixtures.ts';
import { getMe } from './support/oauth.ts';
import { comparable, raw } from './support/raw-http.ts';
import { boundTokensFor, grantFor } from './support/bindings.ts';
import { feedCaughtUp } from './support/record-feed.ts';
import { createBoundGrant, grantBindings, isBoundGrantId } from '../src/orgs/bindings.ts';
import { ConflictError } from '../src/errors.ts';
import { createOrg, createTeam } from '../src/orgs/store.ts';
import { setAppPolicy } from '../src/orgs/installations.ts';

const SCOPE = 'PROFILE_READ TEAM_BOOKING_READ TEAM_PROFILE_READ ORG_EVENT_TYPE_READ';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const TOKEN = '/v2/auth/oauth2/token';
const INTROSPECT = '/v2/auth/oauth2/introspect';
const FAST_PATHS = process.env.FAST_PATHS !== 'off';

const basic = (c: TestClient) => ({ authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}` });

describe('tokens bound to an organization and teams (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let app: TestClient;
  let accountId: string;
  let bound: { grantId: string; access_token: string; refresh_token: string };
  let unbound: { grantId: string; access_token: string; refresh_token: string };

  beforeAll(async () => {
    server = await startTestServer(storage);
    app = await approvedClient(server, SCOPE.split(' '));
    accountId = String((await newUser(server)).id);
    bound = await boundTokensFor(server, app, accountId, SCOPE, { orgId: 10, teamIds: [3, 1], installationId: 5 });
    unbound = await boundTokensFor(server, app, accountId, SCOPE);
  });
  afterAll(() => server?.close());

  async function check(method: string, uri: string, token: string) {
    const res = await raw(server.url, 'GET', '/v2/auth/check', { authorization: `Bearer ${token}`, 'x-forwarded-method': method, 'x-forwarded-uri': uri });
    return { status: res.status, headers: res.headers, body: JSON.parse(res.body) as Record<string, any> };
  }

  const introspect = async (token: string, how: 'fast' | 'provider') =>
    raw(server.url, 'POST', how === 'fast' ? INTROSPECT : `${server.url}${INTROSPECT}`, { ...FORM, ...basic(app) }, `token=${token}`);

  const served = async (route: string) =>
    (await server.system.metrics.registry.getSingleMetric('oauth_fast_path_requests_total')!.get()).values.filter((v) => v.labels.route === route && v.labels.outcome === 'served').reduce((n, v) => n + v.value, 0);

  it('marks bound grants, and only them', () => {
    expect(isBoundGrantId(bound.grantId)).toBe(true);
    expect(isBoundGrantId(unbound.grantId)).toBe(false);
    expect(isBoundGrantId(undefined)).toBe(false);
  });

  it('the check allows its own teams and organization, with the binding in X-Auth-Org-Id and X-Auth-Team-Ids', async () => {
    for (const uri of ['/v2/teams/1/bookings', '/v2/teams/3', '/v2/organizations/10/teams/1/bookings?x=1', '/v2/organizations/10/event-types', '/v2/me']) {
      const res = await check('GET', uri, bound.access_token);
      expect(res.status, uri).toBe(200);
      expect(res.headers['x-auth-user-id']).toBe(accountId);
      expect(res.headers['x-auth-org-id']).toBe('10');
      expect(res.headers['x-auth-team-ids']).toBe('1,3');
      expect(res.headers['x-auth-scopes']).toBe(SCOPE);
    }
  });

  it('the check refuses other teams and organizations: 403 access_denied, no binding headers', async () => {
    for (const uri of ['/v2/teams/2/bookings', '/v2/teams/2', '/v2/organizations/11/teams/1/bookings', '/v2/organizations/10/teams/2/bookings', '/v2/organizations/11/event-types', '/v2/teams/%32/bookings']) {
      const res = await check('GET', uri, bound.access_token);
      expect(res.status, uri).toBe(403);
      expect(res.body).toEqual({ status: 'error', error: { code: 'access_denied', message: 'this token is bound to another organization or other teams' } });
      // CONTRACT 7: 403 with error="access_denied" in the challenge (the scope is right, the reach is not).
      expect(res.headers['www-authenticate']).toBe('Bearer realm="api", error="access_denied", error_description="this token is bound to another organization or other teams"');
      expect(res.headers['x-auth-team-ids']).toBeUndefined();
      expect(res.headers['x-auth-user-id']).toBeUndefined();
      expect(res.headers['cache-control']).toBe('no-store');
    }
    // The scope first: without it, insufficient_scope as for any token.
    const write = await check('POST', '/v2/teams/2/bookings', bound.access_token);
    expect(write.status).toBe(403);
    expect(write.headers['www-authenticate']).toBe('Bearer realm="api", error="insufficient_scope", scope="TEAM_BOOKING_WRITE"');
    // The Envoy form of the check, and the app's route (absolute-form) answer the same.
    const envoy = await raw(server.url, 'GET', '/v2/auth/check/v2/teams/2/bookings', { authorization: `Bearer ${bound.access_token}` });
    expect(envoy.status).toBe(403);
    const viaApp = await raw(server.url, 'GET', `${server.url}/v2/auth/check/v2/teams/2/bookings`, { authorization: `Bearer ${bound.access_token}` });
    expect(comparable(viaApp)).toEqual(comparable(envoy));
    const ownViaApp = await raw(server.url, 'GET', `${server.url}/v2/auth/check/v2/teams/1/bookings`, { authorization: `Bearer ${bound.access_token}` });
    expect(ownViaApp.headers['x-auth-team-ids']).toBe('1,3');
  });

  it('judging a bound token costs no read beyond any token’s: the binding comes from the token (on Redis, from memory)', async () => {
    const { provider, bindings } = server.system;
    const calls: string[] = [];
    const spies = [
      vi.spyOn(bindings, 'forGrant').mockImplementation(async () => void calls.push('forGrant') as undefined),
      vi.spyOn(provider.AccessToken, 'find').mockImplementation(async () => void calls.push('AccessToken.find') as undefined),
      vi.spyOn(provider.Grant, 'find').mockImplementation(async () => void calls.push('Grant.find') as undefined),
    ];
    try {
      if (storage === 'redis') {
        // The token cache holds its verified facts, binding included, since the checks above.
        expect((await check('GET', '/v2/teams/1/bookings', bound.access_token)).headers['x-auth-team-ids']).toBe('1,3');
        expect((await check('GET', '/v2/teams/2/bookings', bound.access_token)).status).toBe(403);
        expect(calls).toEqual([]);
      }
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    // On either store, the binding is never read to judge a token: only the token and its grant are.
    const fresh = await boundTokensFor(server, app, accountId, SCOPE, { orgId: 10, teamIds: [1] });
    const reads: string[] = [];
    const forGrant = vi.spyOn(bindings, 'forGrant').mockImplementation(async () => void reads.push('forGrant') as undefined);
    try {
      expect((await check('GET', '/v2/teams/1/bookings', fresh.access_token)).headers['x-auth-team-ids']).toBe('1');
      expect(reads).toEqual([]);
    } finally {
      forGrant.mockRestore();
    }
  });

  it('judging a token bound to nothing on organization and team paths reads nothing: the closed organizations are in memory (issue 45 item 5)', async () => {
    const { db, outbox, artifacts, bindings, records } = server.system;
    const org = await createOrg(db, { name: 'Closed Co' });
    const team = await createTeam(db, { name: 'Closed Team', orgId: org.id });
    await setAppPolicy({ db, outbox, artifacts, bindings, records }, org.id, 'approval', null);
    // The change's echo from PostgreSQL drops the set once more: it must have arrived before counting.
    await feedCaughtUp(db, records);
    const closed = [`/v2/organizations/${org.id}/event-types`, `/v2/teams/${team.id}/bookings`, `/v2/organizations/11/teams/${team.id}/bookings`];
    const open = ['/v2/organizations/11/event-types', '/v2/teams/2/bookings', '/v2/me'];
    // The first check after the change reads the closed organizations once.
    expect((await check('GET', closed[0]!, unbound.access_token)).status).toBe(403);
    const queries: string[] = [];
    const count = (q: { sql: string }) => void queries.push(q.sql);
    db.on('query', count);
    try {
      for (let round = 0; round < 3; round++) {
        for (const uri of closed) expect((await check('GET', uri, unbound.access_token)).status, uri).toBe(403);
        for (const uri of open) expect((await check('GET', uri, unbound.access_token)).status, uri).toBe(200);
      }
    } finally {
      db.off('query', count);
    }
    expect(queries.filter((q) => /organizations|teams/.test(q))).toEqual([]);
    // On Redis the token's facts are in memory too: no SQL of the check's own (the webhook queue's
    // polling and the batched "last used" writes run on their own clocks).
    if (storage === 'redis') expect(queries.filter((q) => !q.includes('pgboss.') && !q.includes('last_used_at'))).toEqual([]);
    await setAppPolicy({ db, outbox, artifacts, bindings, records }, org.id, 'allow', null);
    for (const uri of closed) expect((await check('GET', uri, unbound.access_token)).status, uri).toBe(200);
  });

  it('/v2/me, a user-level route, serves a bound token as any other', async () => {
    const me = await getMe(server.url, bound.access_token);
    expect(me.status).toBe(200);
    expect(me.body.data.id).toBe(Number(accountId));
  });

  it('unbound tokens are judged by their scopes alone, as before', async () => {
    for (const uri of ['/v2/teams/2/bookings', '/v2/organizations/11/event-types']) {
      const res = await check('GET', uri, unbound.access_token);
      expect(res.status, uri).toBe(200);
      expect(res.headers['x-auth-org-id']).toBeUndefined();
      expect(res.headers['x-auth-team-ids']).toBeUndefined();
    }
    const body = JSON.parse((await introspect(unbound.access_token, 'fast')).body);
    expect(body).not.toHaveProperty('org_id');
    expect(body).not.toHaveProperty('team_ids');
  });

  it('introspection shows org_id and team_ids, the same bytes on the fast path and the provider', async () => {
    const before = await served('introspection');
    const fast = await introspect(bound.access_token, 'fast');
    const provider = await introspect(bound.access_token, 'provider');
    expect(comparable(fast)).toEqual(comparable(provider));
    const body = JSON.parse(fast.body);
    expect(body).toMatchObject({ active: true, sub: accountId, org_id: '10', team_ids: ['1', '3'], client_id: app.client_id, scope: SCOPE, token_type: 'bearer' });
    // The provider's order: active, sub, then the token's extra claims, then the rest.
    expect(Object.keys(body).slice(0, 5)).toEqual(['active', 'sub', 'org_id', 'team_ids', 'client_id']);
    if (FAST_PATHS) expect(await served('introspection')).toBe(before + 1);
    // The unbound token too, both ways.
    expect(comparable(await introspect(unbound.access_token, 'fast'))).toEqual(comparable(await introspect(unbound.access_token, 'provider')));
  });

  it('a refresh keeps the binding, on the fast path and through the provider alike', async () => {
    const binding = { orgId: 10, teamIds: [1, 3] };
    const [one, two] = await Promise.all([boundTokensFor(server, app, accountId, SCOPE, binding), boundTokensFor(server, app, accountId, SCOPE, binding)]);
    const before = await served('token');
    const body = (refresh: string) => `grant_type=refresh_token&refresh_token=${refresh}`;
    const fast = await raw(server.url, 'POST', TOKEN, { ...FORM, ...basic(app) }, body(one.refresh_token));
    const provider = await raw(server.url, 'POST', `${server.url}${TOKEN}`, { ...FORM, ...basic(app) }, body(two.refresh_token));
    expect([fast.status, provider.status]).toEqual([200, 200]);
    // The fast refresh is Redis's (one atomic rotation); on SQL the provider rotates both.
    if (FAST_PATHS && storage === 'redis') expect(await served('token')).toBe(before + 1);
    const issued = [JSON.parse(fast.body), JSON.parse(provider.body)] as Array<{ access_token: string; refresh_token: string }>;
    const stored = await Promise.all(issued.map((t) => server.system.provider.AccessToken.find(t.access_token)));
    expect(stored.map((t) => t?.extra)).toEqual([{ org_id: '10', team_ids: ['1', '3'] }, { org_id: '10', team_ids: ['1', '3'] }]);
    // Answered alike by the check and introspection.
    for (const t of issued) {
      expect((await check('GET', '/v2/teams/3/bookings', t.access_token)).headers['x-auth-team-ids']).toBe('1,3');
      expect((await check('GET', '/v2/teams/2/bookings', t.access_token)).status).toBe(403);
      expect(JSON.parse((await introspect(t.access_token, 'fast')).body)).toMatchObject({ org_id: '10', team_ids: ['1', '3'] });
    }
    // And again: a refreshed token's refresh keeps it too.
    const again = await raw(server.url, 'POST', TOKEN, { ...FORM, ...basic(app) }, body(issued[0]!.refresh_token));
    expect((await server.system.provider.AccessToken.find(JSON.parse(again.body).access_token))?.extra).toEqual({ org_id: '10', team_ids: ['1', '3'] });
  });

  it('a binding without an organization: team_ids only, no organization path', async () => {
    const teams = await boundTokensFor(server, app, accountId, SCOPE, { orgId: null, teamIds: [7] });
    expect((await server.system.provider.AccessToken.find(teams.access_token))?.extra).toEqual({ team_ids: ['7'] });
    const own = await check('GET', '/v2/teams/7/bookings', teams.access_token);
    expect(own.status).toBe(200);
    expect(own.headers['x-auth-team-ids']).toBe('7');
    expect(own.headers['x-auth-org-id']).toBeUndefined();
    expect((await check('GET', '/v2/organizations/10/event-types', teams.access_token)).status).toBe(403);
    const fast = await introspect(teams.access_token, 'fast');
    expect(comparable(fast)).toEqual(comparable(await introspect(teams.access_token, 'provider')));
    expect(JSON.parse(fast.body)).not.toHaveProperty('org_id');
  });

  it('a marked grant that was never bound fails closed: its tokens reach no team or organization', async () => {
    const lost = await boundTokensFor(server, app, accountId, SCOPE, { orgId: 10, teamIds: [1] }, { bind: false });
    expect((await server.system.provider.AccessToken.find(lost.access_token))?.extra).toEqual({ team_ids: [] });
    expect((await check('GET', '/v2/teams/1/bookings', lost.access_token)).status).toBe(403);
    expect((await check('GET', '/v2/me', lost.access_token)).status).toBe(200);
  });

  describe('grantBindings (src/orgs/bindings.ts)', () => {
    it('binds once: the same binding again is a no-op, another a conflict; only marked grants', async () => {
      const { bindings, db, provider } = server.system;
      const grant = createBoundGrant(provider, { accountId, clientId: app.client_id });
      const binding = { accountId, clientId: app.client_id, orgId: 10, teamIds: [3, 1, 3], installationId: null };
      await bindings.bind(db, grant.jti!, binding);
      await bindings.bind(db, grant.jti!, { ...binding, teamIds: [1, 3] });
      await expect(bindings.bind(db, grant.jti!, { ...binding, teamIds: [1] })).rejects.toBeInstanceOf(ConflictError);
      expect(await bindings.forGrant(grant.jti!)).toEqual({ ...binding, teamIds: [1, 3] });
      await expect(bindings.bind(db, 'unmarked', binding)).rejects.toThrow(/createBoundGrant/);
      await expect(bindings.bind(db, createBoundGrant(provider, { accountId, clientId: app.client_id }).jti!, { ...binding, teamIds: [0] })).rejects.toThrow(/team ids/);
    });

    it('binds inside the caller’s transaction: nothing kept when it rolls back', async () => {
      const { bindings, db, provider } = server.system;
      const grant = createBoundGrant(provider, { accountId, clientId: app.client_id });
      await db
        .transaction(async (trx) => {
          await bindings.bind(trx, grant.jti!, { accountId, clientId: app.client_id, orgId: 10, teamIds: [1], installationId: null });
          expect(await bindings.forGrant(grant.jti!)).toBeUndefined(); // not committed: not read, not kept
          throw new Error('rolled back');
        })
        .catch(() => {});
      expect(await bindings.forGrant(grant.jti!)).toBeUndefined();
    });

    it('reads a binding once and keeps it (bindings never change); never reads for an unmarked grant', async () => {
      let queries = 0;
      const counted = grantBindings(Object.assign((table: string) => ((queries += 1), server.system.db(table)), server.system.db) as typeof server.system.db);
      expect(await counted.forGrant(unbound.grantId)).toBeUndefined();
      expect(queries).toBe(0);
      const [a, b] = await Promise.all([counted.forGrant(bound.grantId), counted.forGrant(bound.grantId)]);
      expect(a).toEqual({ accountId, clientId: app.client_id, orgId: 10, teamIds: [1, 3], installationId: 5 });
      expect(b).toEqual(a);
      expect(await counted.forGrant(bound.grantId)).toEqual(a);
      expect(queries).toBe(1);
      // Bounded: the oldest goes first.
      const small = grantBindings(server.system.db, 1);
      const other = await grantFor(server, app, accountId, SCOPE, { orgId: 11, teamIds: [2] });
      await small.forGrant(bound.grantId);
      await small.forGrant(other);
      expect(await small.forGrant(bound.grantId)).toEqual(a);
    });

    it('finds the grants bound to an organization, installation, client, account or team', async () => {
      const { bindings } = server.system;
      const org = 900 + (storage === 'redis' ? 1 : 2);
      const g1 = await grantFor(server, app, accountId, SCOPE, { orgId: org, teamIds: [41, 42], installationId: 77 });
      const g2 = await grantFor(server, app, accountId, SCOPE, { orgId: org, teamIds: [42] });
      const ids = async (filter: Parameters<typeof bindings.grantsBoundTo>[0]) => (await bindings.grantsBoundTo(filter)).map((g) => g.grantId).sort();
      expect(await ids({ orgId: org })).toEqual([g1, g2].sort());
      expect(await ids({ installationId: 77 })).toEqual([g1]);
      expect(await ids({ orgId: org, teamId: 41 })).toEqual([g1]);
      expect(await ids({ teamId: 42, clientId: app.client_id, accountId })).toEqual([g1, g2].sort());
      expect(await ids({ orgId: org, accountId: 'someone else' })).toEqual([]);
      expect(await bindings.grantsBoundTo({ installationId: 77 })).toEqual([{ grantId: g1, accountId, clientId: app.client_id }]);
      await expect(bindings.grantsBoundTo({})).rejects.toThrow(/at least one filter/);
    });
  });
});
