// GET /v2/auth/check as nginx auth_request or Traefik ForwardAuth use it, with real tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { getMe, tokenRequest } from './support/oauth.ts';
import { approvedClient, newUser, operator, tokensFor, type TestClient } from './support/fixtures.ts';
import { clientsSetStatus } from '../src/admin/commands.ts';

let server: TestServer;
let client: TestClient;
let user: Awaited<ReturnType<typeof newUser>>;
let teamReader: string;
let orgWriter: string;

beforeAll(async () => {
  server = await startTestServer('redis');
  client = await approvedClient(server, ['TEAM_BOOKING_READ', 'ORG_EVENT_TYPE_WRITE', 'ORG_BOOKING_READ', 'PROFILE_READ']);
  user = await newUser(server);
  teamReader = (await tokensFor(server, client, user, 'TEAM_BOOKING_READ')).access_token;
  orgWriter = (await tokensFor(server, client, user, 'ORG_EVENT_TYPE_WRITE ORG_BOOKING_READ')).access_token;
});
afterAll(() => server?.close());

async function check(method: string, uri: string, token?: string) {
  const headers: Record<string, string> = { 'X-Forwarded-Method': method, 'X-Forwarded-Uri': uri };
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(`${server.url}/v2/auth/check`, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, any> };
}

describe('gateway decision', () => {
  it('allows a team read with TEAM_BOOKING_READ and names user, client and scopes', async () => {
    const res = await check('GET', '/v2/teams/12/bookings?status=upcoming', teamReader);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-auth-user-id')).toBe(String(user.id));
    expect(res.headers.get('x-auth-client-id')).toBe(client.client_id);
    expect(res.headers.get('x-auth-scopes')).toBe('TEAM_BOOKING_READ');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('refuses a team write with a read scope: 403 insufficient_scope naming the scope', async () => {
    const res = await check('POST', '/v2/teams/12/bookings', teamReader);
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="api", error="insufficient_scope", scope="TEAM_BOOKING_WRITE"');
    expect(res.body).toEqual({ status: 'error', error: { code: 'insufficient_scope', message: expect.any(String) } });
    expect(res.headers.get('x-auth-user-id')).toBeNull();
  });

  it('lets ORG_ scopes act on org paths and on team paths, not TEAM_ scopes on org paths', async () => {
    expect((await check('DELETE', '/v2/organizations/3/event-types/44', orgWriter)).status).toBe(200);
    expect((await check('GET', '/v2/organizations/3/teams/12/bookings', orgWriter)).status).toBe(200);
    expect((await check('GET', '/v2/teams/12/bookings', orgWriter)).status).toBe(200);
    expect((await check('GET', '/v2/organizations/3/bookings', teamReader)).status).toBe(403);
  });

  it('passes the public booking operations without a token', async () => {
    for (const uri of ['/v2/bookings', '/v2/bookings/abc/cancel', '/v2/bookings/abc/reschedule']) {
      const res = await check('POST', uri);
      expect(res.status, uri).toBe(200);
      expect(res.headers.get('x-auth-user-id')).toBeNull();
    }
    expect((await check('GET', '/v2/bookings')).status).toBe(401);
  });

  it('answers 401 per RFC 6750 for no token and a bad token', async () => {
    const none = await check('GET', '/v2/teams/12/bookings');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="api"');
    const bad = await check('GET', '/v2/teams/12/bookings', 'not-a-token');
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(/^Bearer realm="api", error="invalid_token"/);
  });

  it('refuses paths no rule covers and path tricks, even with a valid token', async () => {
    for (const uri of ['/v2/admin', '/v2/teams/12/bookings/../../../me', '/v2/teams/12/%2e%2e/bookings', '//v2/teams/12/bookings']) {
      const res = await check('GET', uri, teamReader);
      expect(res.status, uri).toBe(403);
      expect(res.body.error.code).toBe('access_denied');
    }
  });

  it('needs X-Forwarded-Method and X-Forwarded-Uri', async () => {
    const res = await fetch(`${server.url}/v2/auth/check`, { headers: { authorization: `Bearer ${teamReader}` } });
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe('invalid_request');
  });

  it('stops accepting every token of a client the moment it is suspended; reinstating does not revive them', async () => {
    const other = await approvedClient(server, ['PROFILE_READ']);
    const tokens = await tokensFor(server, other, user, 'PROFILE_READ');
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);

    await clientsSetStatus(operator(server), other.client_id, 'suspended');
    expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
    expect((await check('GET', '/v2/me', tokens.access_token)).status).toBe(401);
    const refresh = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...other });
    expect(refresh.status).toBe(401);
    expect(refresh.body.error).toBe('invalid_client');

    await clientsSetStatus(operator(server), other.client_id, 'approved');
    expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
    const again = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...other });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
    // Other clients' tokens are untouched.
    expect((await check('GET', '/v2/teams/12/bookings', teamReader)).status).toBe(200);
  });
});
