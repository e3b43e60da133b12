// Introspection on the hot path (src/fast/introspection.ts): the plain case — a live access token
// asked about by a client with its secret — is answered without the provider's pipeline, and
// must be the provider's answer byte for byte; everything else is left to the provider.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { approvedClient, newUser, operator, tokensFor, type TestClient } from './support/fixtures.ts';
import { comparable, raw } from './support/raw-http.ts';
import { clientsCreate, clientsSetRateLimit, clientsSetStatus } from '../src/admin/commands.ts';
import { introspection } from '../src/fast/introspection.ts';
import type { TokenEndpointLimits } from '../src/oauth/rate-limits.ts';
import { boundTokensFor } from './support/bindings.ts';

const PATH = '/v2/auth/oauth2/introspect';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const basic = (c: TestClient, id = c.client_id) => ({ authorization: `Basic ${Buffer.from(`${id}:${c.client_secret}`).toString('base64')}` });
const post = (c: TestClient) => `client_id=${c.client_id}&client_secret=${c.client_secret}`;

let server: TestServer;
let app: TestClient;
let other: TestClient;
let rs: TestClient;
let bookingsRs: TestClient;
let tokens: { access_token: string; refresh_token: string };
let otherTokens: { access_token: string; refresh_token: string };
let revoked: string;
let grantless: string;
/** Of a grant bound to an organization and teams: its extra holds org_id and team_ids (src/orgs/bindings.ts). */
let bound: string;

async function resourceServer(scope?: string[]): Promise<TestClient> {
  const created = await clientsCreate(operator(server), { name: 'Bookings API', resourceServer: true, ...(scope ? { scope } : {}) });
  await clientsSetStatus(operator(server), created.client_id, 'approved');
  return { client_id: created.client_id, client_secret: created.client_secret! };
}

beforeAll(async () => {
  server = await startTestServer('redis');
  [app, other] = await Promise.all([approvedClient(server, ['PROFILE_READ', 'BOOKING_READ']), approvedClient(server, ['PROFILE_READ'], 'Other App')]);
  [rs, bookingsRs] = await Promise.all([resourceServer(), resourceServer(['BOOKING_WRITE'])]);
  const user = await newUser(server);
  tokens = await tokensFor(server, app, user, 'PROFILE_READ BOOKING_READ');
  otherTokens = await tokensFor(server, other, user, 'PROFILE_READ');
  bound = (await boundTokensFor(server, app, String(user.id), 'PROFILE_READ BOOKING_READ', { orgId: 4, teamIds: [9, 2] })).access_token;
  revoked = (await tokensFor(server, app, user, 'PROFILE_READ')).access_token;
  const revocation = await raw(server.url, 'POST', '/v2/auth/oauth2/revoke', FORM, `token=${revoked}&${post(app)}`);
  expect(revocation.status).toBe(200);
  // A token whose grant is gone while the token stays (the provider then calls it inactive).
  grantless = (await tokensFor(server, app, user, 'BOOKING_READ')).access_token;
  const found = await server.system.provider.AccessToken.find(grantless);
  await server.system.artifacts.adapterFor('Grant').destroy(found!.grantId!);
});
afterAll(() => server?.close());

describe('introspection on the hot path', () => {
  const limitsOff = { heldBack: () => 0, spend: async () => undefined, refreshHeldBack: () => 0, spendRefresh: async () => {} } as unknown as TokenEndpointLimits;
  const answered = async (headers: Record<string, string>, body: string) =>
    'status' in (await introspection(server.system.provider, server.system.secrets, limitsOff, `${server.url}/v2`, server.system.artifacts.together)({ headers, form: new URLSearchParams(body), ip: '127.0.0.1', message: {} }));

  it('answers the plain case itself: a live access token, the secret in Basic or in the form, own client or a resource server', async () => {
    expect(await answered(basic(app), `token=${tokens.access_token}`)).toBe(true);
    expect(await answered({}, `token=${tokens.access_token}&${post(app)}`)).toBe(true);
    expect(await answered(basic(app), `token=${tokens.access_token}&token_type_hint=refresh_token&client_id=${app.client_id}`)).toBe(true);
    expect(await answered(basic(rs), `token=${tokens.access_token}`)).toBe(true);
    expect(await answered(basic(app), `token=${bound}`)).toBe(true);
    expect(await answered(basic(rs), `token=${bound}`)).toBe(true);
  });

  it('leaves everything else to the provider', async () => {
    const left: Array<[Record<string, string>, string]> = [
      [basic(app), `token=${tokens.refresh_token}`], // a refresh token
      [basic(app), 'token=junk'],
      [basic(app), `token=${revoked}`],
      [basic(app), `token=${grantless}`],
      [basic(app), `token=${otherTokens.access_token}`], // another client's, not a resource server
      [basic(bookingsRs), `token=${tokens.access_token}`], // a resource server for other scopes
      [basic(app), `token=${tokens.access_token}&token=${tokens.access_token}`],
      [basic(app), `token=${tokens.access_token}&client_id=${app.client_id}&client_id=${app.client_id}`],
      [basic(app), ''],
      [basic(app), `token=${tokens.access_token}&client_secret=${app.client_secret}`], // two mechanisms
      [basic(app), `token=${tokens.access_token}&client_id=${other.client_id}`],
      [{ authorization: 'Basic !!!' }, `token=${tokens.access_token}`],
      [{ authorization: `Bearer ${tokens.access_token}` }, `token=${tokens.access_token}`],
      [basic({ ...app, client_secret: 'wrong' }), `token=${tokens.access_token}`],
      [{}, `token=${tokens.access_token}&client_id=${app.client_id}`], // no secret
      [{ ...basic(app), 'oauth-client-attestation': 'x' }, `token=${tokens.access_token}`],
      [{ ...basic(app), origin: 'https://app.example.com' }, `token=${tokens.access_token}`], // CORS: per client
    ];
    for (const [headers, body] of left) expect(await answered(headers, body), `${JSON.stringify(headers)} ${body}`).toBe(false);
  });

  it("gives the provider's answer, headers and body, to every request (hot path: origin-form; the provider: absolute-form)", async () => {
    const cases: Array<[string, Record<string, string>, string]> = [
      [PATH, { ...FORM, ...basic(app) }, `token=${tokens.access_token}`],
      [PATH, FORM, `token=${tokens.access_token}&${post(app)}`],
      [PATH, { 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8', ...basic(app) }, `token=${tokens.access_token}&token_type_hint=access_token`],
      [PATH, { ...FORM, ...basic(rs) }, `token=${tokens.access_token}`],
      [PATH, { ...FORM, ...basic(bookingsRs) }, `token=${tokens.access_token}`],
      [PATH, { ...FORM, ...basic(app) }, `token=${tokens.refresh_token}`],
      [PATH, { ...FORM, ...basic(rs) }, `token=${tokens.refresh_token}`],
      [PATH, { ...FORM, ...basic(app) }, `token=${bound}`],
      [PATH, FORM, `token=${bound}&${post(app)}`],
      [PATH, { ...FORM, ...basic(rs) }, `token=${bound}`],
      [PATH, { ...FORM, ...basic(bookingsRs) }, `token=${bound}`],
      [PATH, { ...FORM, ...basic(other) }, `token=${bound}`],
      [PATH, { ...FORM, ...basic(app) }, `token=${otherTokens.access_token}`],
      [PATH, { ...FORM, ...basic(app) }, `token=${revoked}`],
      [PATH, { ...FORM, ...basic(app) }, `token=${grantless}`],
      [PATH, { ...FORM, ...basic(app) }, 'token=junk'],
      [PATH, { ...FORM, ...basic(app) }, ''],
      [PATH, { ...FORM, ...basic(app) }, `token=${tokens.access_token}&token=x`],
      [PATH, { ...FORM, ...basic(app) }, `token=${tokens.access_token}&client_secret=${app.client_secret}`],
      [PATH, { ...FORM, ...basic(app) }, `token=${tokens.access_token}&client_id=${other.client_id}`],
      [PATH, { ...FORM, ...basic({ ...app, client_secret: 'wrong' }) }, `token=${tokens.access_token}`],
      [PATH, FORM, `token=${tokens.access_token}&client_id=${app.client_id}`],
      [PATH, { ...FORM, authorization: 'Basic !!!' }, `token=${tokens.access_token}`],
      [PATH, { ...FORM, ...basic(app), origin: 'https://app.example.com' }, `token=${tokens.access_token}`],
      [PATH, { 'content-type': 'application/json', ...basic(app) }, JSON.stringify({ token: tokens.access_token })],
      [PATH, { 'content-type': 'text/plain', ...basic(app) }, `token=${tokens.access_token}`],
      [PATH, { ...FORM, ...basic(app) }, `token=${tokens.access_token}&${'x'.repeat(17 * 1024)}=1`],
      [`${PATH}?token=${tokens.access_token}`, { ...FORM, ...basic(app) }, ''],
    ];
    for (const [path, headers, body] of cases) {
      const hot = await raw(server.url, 'POST', path, headers, body);
      const provider = await raw(server.url, 'POST', `${server.url}${path}`, headers, body);
      expect(comparable(hot), `${JSON.stringify(headers)} ${body.slice(0, 200)}`).toEqual(comparable(provider));
    }
    // The plain case is what it should be, not merely alike.
    const plain = await raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, `token=${tokens.access_token}`);
    expect(JSON.parse(plain.body)).toMatchObject({ active: true, client_id: app.client_id, scope: 'PROFILE_READ BOOKING_READ', token_type: 'bearer' });
    expect(plain.headers['cache-control']).toBe('no-store');
    const ofBound = await raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, `token=${bound}`);
    expect(JSON.parse(ofBound.body)).toMatchObject({ active: true, org_id: '4', team_ids: ['2', '9'], client_id: app.client_id });
  });

  it("spends the client's own budget, and a client over it waits (429) whichever path answers", async () => {
    const limited = await approvedClient(server, ['PROFILE_READ'], 'Limited App');
    const own = (await tokensFor(server, limited, await newUser(server), 'PROFILE_READ')).access_token;
    await clientsSetRateLimit(operator(server), limited.client_id, '3');
    expect(await answered(basic(limited), `token=${own}`)).toBe(true);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i += 1) statuses.push((await raw(server.url, 'POST', PATH, { ...FORM, ...basic(limited) }, `token=${own}`)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    // Other clients are not held back by it.
    expect((await raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, `token=${tokens.access_token}`)).status).toBe(200);
  });
});
