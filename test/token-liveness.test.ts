// One rule for whether a token is live (src/oauth/token-liveness.ts): token present and unexpired,
// its grant present, its client usable — the same answer from /v2/me, the gateway check,
// introspection and refresh, on the hot paths (origin-form) and in the app and the provider
// (absolute-form); and revoking a grant destroys the grant before it sweeps its tokens, once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { approvedClient, newUser, operator, tokensFor, type TestClient } from './support/fixtures.ts';
import { comparable, raw } from './support/raw-http.ts';
import { clientsCreate, clientsSetStatus } from '../src/admin/commands.ts';
import { revokeAppAccess } from '../src/apps-with-access/user-grants.ts';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const basic = (c: TestClient) => ({ authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}` });

describe.each<Storage>(['redis', 'sql'])('whether a token is live (%s storage)', (storage) => {
  let server: TestServer;
  let app: TestClient;
  let api: TestClient;
  let user: Awaited<ReturnType<typeof newUser>>;
  beforeAll(async () => {
    server = await startTestServer(storage);
    app = await approvedClient(server, ['PROFILE_READ', 'BOOKING_READ']);
    const rs = await clientsCreate(operator(server), { name: 'Bookings API', resourceServer: true });
    await clientsSetStatus(operator(server), rs.client_id, 'approved');
    api = { client_id: rs.client_id, client_secret: rs.client_secret! };
    user = await newUser(server);
  });
  afterAll(() => server?.close());

  const grantOf = async (accessToken: string) => String((await server.system.artifacts.adapterFor('AccessToken').find(accessToken))!.grantId);
  /** Each path's answer for one token, both ways where there are two, compared where they must agree. */
  async function everyPath(tokens: { access_token: string; refresh_token: string }, introspector = app) {
    const bearer = { authorization: `Bearer ${tokens.access_token}` };
    const answers: Record<string, number | string> = {};
    for (const [name, path, headers] of [
      ['me', '/v2/me', bearer],
      ['check', '/v2/auth/check', { ...bearer, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/bookings/1' }],
    ] as const) {
      const [hot, viaApp] = [await raw(server.url, 'GET', path, headers), await raw(server.url, 'GET', `${server.url}${path}`, headers)];
      expect(comparable(hot), name).toEqual(comparable(viaApp));
      answers[name] = hot.status;
    }
    const introspect = `token=${tokens.access_token}`;
    const [hot, provider] = [
      await raw(server.url, 'POST', '/v2/auth/oauth2/introspect', { ...FORM, ...basic(introspector) }, introspect),
      await raw(server.url, 'POST', `${server.url}/v2/auth/oauth2/introspect`, { ...FORM, ...basic(introspector) }, introspect),
    ];
    expect(comparable(hot), 'introspection').toEqual(comparable(provider));
    answers.introspection = JSON.parse(hot.body).active;
    return answers;
  }
  /** A refresh on the hot path and by the provider: one answer (a failed refresh writes nothing). */
  async function refreshBothWays(refreshToken: string) {
    const body = `grant_type=refresh_token&refresh_token=${refreshToken}`;
    const hot = await raw(server.url, 'POST', '/v2/auth/oauth2/token', { ...FORM, ...basic(app) }, body);
    if (hot.status === 200) return 'refreshed';
    const provider = await raw(server.url, 'POST', `${server.url}/v2/auth/oauth2/token`, { ...FORM, ...basic(app) }, body);
    expect(comparable(hot)).toEqual(comparable(provider));
    return JSON.parse(hot.body).error as string;
  }

  it('refuses a token whose grant is gone on every path alike, also one already served from memory', async () => {
    const tokens = await tokensFor(server, app, user, 'PROFILE_READ BOOKING_READ');
    // Live: and on Redis, now in every path's memory.
    expect(await everyPath(tokens)).toEqual({ me: 200, check: 200, introspection: true });
    // The grant alone goes — its tokens left behind, as a rotation racing a revocation leaves them.
    await server.system.provider.Grant.adapter.destroy(await grantOf(tokens.access_token));
    expect(await server.system.artifacts.adapterFor('AccessToken').find(tokens.access_token)).toBeTruthy();
    expect(await everyPath(tokens)).toEqual({ me: 401, check: 401, introspection: false });
    expect(await refreshBothWays(tokens.refresh_token)).toBe('invalid_grant');
  });

  it("refuses a token whose client is not usable on every path alike (a resource server's introspection too)", async () => {
    const other = await approvedClient(server, ['PROFILE_READ'], 'Soon Suspended');
    const tokens = await tokensFor(server, other, user, 'PROFILE_READ');
    // The client's row changed by hand, without the sweep of suspension: its tokens stay stored.
    await server.pg.db('oauth_clients').where('id', other.client_id).update({ status: 'suspended' });
    await server.pg.db.raw(`select pg_notify('oauth_record_changes', ?)`, [`client:${other.client_id}`]);
    // Once the instance refuses the client (it heard the change), its tokens are refused too.
    for (let heard = false; !heard; ) heard = (await raw(server.url, 'POST', '/v2/auth/oauth2/token', { ...FORM, ...basic(other) }, 'grant_type=refresh_token&refresh_token=junk')).status === 401;
    expect(await everyPath(tokens, api)).toEqual({ me: 401, check: 401, introspection: false });
  });

  it('revokes a grant (apps with access; reuse detection) by destroying the grant before sweeping its tokens', async () => {
    const { provider } = server.system;
    const sweeps: Array<{ grantId: string; grantPresent: boolean }> = [];
    const original = provider.AccessToken.revokeByGrantId;
    // Watches the real sweep: whether the grant was still there when the sweep of its tokens began.
    provider.AccessToken.revokeByGrantId = async function watched(grantId: string) {
      sweeps.push({ grantId, grantPresent: Boolean(await provider.Grant.find(grantId)) });
      return original.call(this, grantId);
    };
    try {
      // The user revokes the app's access on the apps with access page.
      const tokens = await tokensFor(server, app, user, 'PROFILE_READ');
      const grantId = await grantOf(tokens.access_token);
      await revokeAppAccess(server.system, provider, String(user.id), app.client_id);
      // Reuse detection: a spent refresh token presented again once its successor was used.
      const t0 = await tokensFor(server, app, user, 'PROFILE_READ');
      const reusedGrant = await grantOf(t0.access_token);
      const t1 = JSON.parse((await raw(server.url, 'POST', `${server.url}/v2/auth/oauth2/token`, { ...FORM, ...basic(app) }, `grant_type=refresh_token&refresh_token=${t0.refresh_token}`)).body);
      expect(await refreshBothWays(t1.refresh_token)).toBe('refreshed');
      expect(await refreshBothWays(t0.refresh_token)).toBe('invalid_grant');
      for (const id of [grantId, reusedGrant]) {
        const of = sweeps.filter((s) => s.grantId === id);
        expect(of.length, id).toBeGreaterThanOrEqual(1);
        expect(of.every((s) => !s.grantPresent)).toBe(true);
      }
      expect(await everyPath(tokens)).toEqual({ me: 401, check: 401, introspection: false });
    } finally {
      provider.AccessToken.revokeByGrantId = original;
    }
  });
});
