// Resource servers (RFC 7662 2.1): an API or gateway registered by the operator introspects the
// access tokens of other clients with credentials of its own, and obtains no tokens itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorizeUrl, tokenRequest } from './support/oauth.ts';
import { approvedClient, newUser, operator, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';
import { clientsCreate, clientsSetStatus, clientsShow, secretsGenerate } from '../src/admin/commands.ts';
import { raw } from './support/raw-http.ts';

const PATH = '/v2/auth/oauth2/introspect';

let server: TestServer;
let app: TestClient;
let user: Awaited<ReturnType<typeof newUser>>;

beforeAll(async () => {
  server = await startTestServer('redis');
  app = await approvedClient(server, ['PROFILE_READ', 'BOOKING_READ']);
  user = await newUser(server);
});
afterAll(() => server?.close());

async function resourceServer(scope?: string[]) {
  const created = await clientsCreate(operator(server), { name: 'Bookings API', resourceServer: true, ...(scope ? { scope } : {}) });
  expect(created).toMatchObject({ kind: 'resource_server', redirect_uris: [], status: 'pending' });
  await clientsSetStatus(operator(server), created.client_id, 'approved');
  return { client_id: created.client_id, client_secret: created.client_secret! };
}

async function introspect(by: TestClient, token: string) {
  const res = await fetch(`${server.url}/v2/auth/oauth2/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${by.client_id}:${by.client_secret}`).toString('base64')}` },
    body: new URLSearchParams({ token }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

describe('resource servers', () => {
  it("introspect another client's access token, and see it inactive once revoked", async () => {
    const rs = await resourceServer();
    const tokens = await tokensFor(server, app, user, 'PROFILE_READ BOOKING_READ');
    const seen = await introspect(rs, tokens.access_token);
    expect(seen).toMatchObject({ active: true, scope: 'PROFILE_READ BOOKING_READ', client_id: app.client_id, sub: String(user.id), token_type: 'bearer' });
    expect(seen.exp).toEqual(expect.any(Number));
    expect(seen.iat).toEqual(expect.any(Number));

    // Nothing about other clients' refresh tokens.
    expect(await introspect(rs, tokens.refresh_token)).toEqual({ active: false });

    const revoked = await fetch(`${server.url}/v2/auth/oauth2/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: tokens.access_token, ...app }) });
    expect(revoked.status).toBe(200);
    expect(await introspect(rs, tokens.access_token)).toEqual({ active: false });
  });

  it('introspect only tokens with one of their listed scopes, when they list any', async () => {
    const bookingsOnly = await resourceServer(['BOOKING_READ', 'BOOKING_WRITE']);
    const profile = await tokensFor(server, app, user, 'PROFILE_READ');
    const bookings = await tokensFor(server, app, user, 'BOOKING_READ');
    expect(await introspect(bookingsOnly, profile.access_token)).toEqual({ active: false });
    expect(await introspect(bookingsOnly, bookings.access_token)).toMatchObject({ active: true, scope: 'BOOKING_READ' });
  });

  it('leave ordinary clients with their own tokens only', async () => {
    const other = await approvedClient(server, ['PROFILE_READ'], 'Another App');
    const tokens = await tokensFor(server, app, user, 'PROFILE_READ');
    expect(await introspect(other, tokens.access_token)).toEqual({ active: false });
    expect(await introspect(app, tokens.access_token)).toMatchObject({ active: true });
  });

  it('obtain no tokens and cannot start an authorization', async () => {
    const rs = await resourceServer();
    const tokens = await tokensFor(server, app, user, 'PROFILE_READ');
    for (const fields of [
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token } as Record<string, string>,
      { grant_type: 'client_credentials' },
      { grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT },
    ]) {
      const res = await tokenRequest(server.url, { ...fields, ...rs });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.access_token).toBeUndefined();
      expect(['unauthorized_client', 'unsupported_grant_type', 'invalid_grant', 'invalid_request'], JSON.stringify(res.body)).toContain(res.body.error);
    }
    const page = await new Browser().follow(authorizeUrl(server.url, { client_id: rs.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }), server.url);
    expect(page.location).toBeUndefined();
    expect(page.status).toBeGreaterThanOrEqual(400);
  });

  it('are shown and managed like clients, with the same two-secret rotation, and refuse redirect URIs', async () => {
    const rs = await resourceServer(['BOOKING_READ']);
    expect(await clientsShow(operator(server), rs.client_id)).toMatchObject({ kind: 'resource_server', scopes: ['BOOKING_READ'], secrets: [expect.objectContaining({ id: expect.any(Number) })] });
    const second = await secretsGenerate(operator(server), rs.client_id);
    const tokens = await tokensFor(server, app, user, 'BOOKING_READ');
    expect(await introspect({ client_id: rs.client_id, client_secret: second.client_secret }, tokens.access_token)).toMatchObject({ active: true });
    await expect(clientsCreate(operator(server), { name: 'API', resourceServer: true, redirectUri: [REDIRECT] })).rejects.toThrow(/no redirect URIs/);
    await expect(clientsCreate(operator(server), { name: 'App' })).rejects.toThrow(/--redirect-uri is required/);
  });
});

// A token whose client record is gone (its row deleted, say, before the sweep of its tokens ran):
// the library read the client's subject type from nothing and answered 500. Both paths, both stores.
describe('introspection of a token whose client is gone (redis)', () => {
  const storage: Storage = 'redis';
  let own: TestServer;
  beforeAll(async () => {
    own = await startTestServer(storage);
  });
  afterAll(() => own?.close());

  it('is {"active": false} to a resource server, on the hot path and the provider path alike', async () => {
    const gone = await approvedClient(own, ['PROFILE_READ'], 'Gone App');
    const tokens = await tokensFor(own, gone, await newUser(own), 'PROFILE_READ');
    const created = await clientsCreate(operator(own), { name: 'Gateway', resourceServer: true });
    await clientsSetStatus(operator(own), created.client_id, 'approved');
    const rs = { client_id: created.client_id, client_secret: created.client_secret! };

    await own.pg.db('oauth_clients').where('id', gone.client_id).delete();
    // The instance's record cache hears of the deletion from the change feed.
    await expect.poll(async () => own.system.provider.Client.find(gone.client_id), { timeout: 5000 }).toBeUndefined();

    const headers = { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${rs.client_id}:${rs.client_secret}`).toString('base64')}` };
    const body = new URLSearchParams({ token: tokens.access_token }).toString();
    for (const target of [PATH, `${own.url}${PATH}`]) {
      const answer = await raw(own.url, 'POST', target, headers, body);
      expect(answer.status, `${target}: ${answer.body}`).toBe(200);
      expect(JSON.parse(answer.body)).toEqual({ active: false });
    }
  });
});
