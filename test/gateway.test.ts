// GET /v2/auth/check as nginx auth_request or Traefik ForwardAuth use it, with real tokens.
import http from 'node:http';
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
let userReader: string;

beforeAll(async () => {
  server = await startTestServer('redis');
  client = await approvedClient(server, ['TEAM_BOOKING_READ', 'ORG_EVENT_TYPE_WRITE', 'ORG_BOOKING_READ', 'PROFILE_READ', 'BOOKING_READ']);
  user = await newUser(server);
  teamReader = (await tokensFor(server, client, user, 'TEAM_BOOKING_READ')).access_token;
  orgWriter = (await tokensFor(server, client, user, 'ORG_EVENT_TYPE_WRITE ORG_BOOKING_READ')).access_token;
  userReader = (await tokensFor(server, client, user, 'BOOKING_READ PROFILE_READ')).access_token;
});
afterAll(() => server?.close());

async function check(method: string, uri: string, token?: string, extra: Record<string, string> = {}) {
  const headers: Record<string, string> = { 'X-Forwarded-Method': method, 'X-Forwarded-Uri': uri, ...extra };
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
    expect(none.headers.get('www-authenticate')).toBe(`Bearer realm="api", resource_metadata="${server.url}/.well-known/oauth-protected-resource/v2"`);
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

describe('gateway decision: paths a backend may resolve differently', () => {
  it('refuses matrix parameters that servlet containers read as dot segments (the reported bypasses)', async () => {
    // Tomcat, Jetty and Spring drop ";…" from each segment: "..;" is ".." to them.
    const team = await check('GET', '/v2/organizations/o1/teams/t1/bookings/..;/..;/..;/bookings/123', teamReader);
    expect(team.status).toBe(403);
    expect(team.body.error.code).toBe('access_denied');
    expect(team.headers.get('x-auth-user-id')).toBeNull();
    expect((await check('GET', '/v2/bookings/..;/organizations/o1/bookings', userReader)).status).toBe(403);
    // The same calls without the trick are judged normally.
    expect((await check('GET', '/v2/organizations/o1/bookings', userReader)).status).toBe(403);
    expect((await check('GET', '/v2/bookings/1', userReader)).status).toBe(200);
  });

  it('refuses semicolons, encoded or not, and look-alikes of "." and "/" (encoded, or raw UTF-8 bytes)', async () => {
    const rawUtf8 = (text: string) => Buffer.from(text, 'utf8').toString('latin1'); // the bytes as a header carries them
    for (const uri of [
      '/v2/bookings/1;x=1',
      '/v2/bookings/..%3b/organizations/o1/bookings',
      '/v2/bookings/..%3B/organizations/o1/bookings',
      '/v2/bookings/%EF%BC%8E%EF%BC%8E/organizations/o1/bookings', // ．．
      '/v2/bookings/%E2%80%A5/organizations/o1/bookings', // ‥
      '/v2/bookings/x%EF%BC%8F..%EF%BC%8Forganizations%EF%BC%8Fo1%EF%BC%8Fbookings', // ／
      '/v2/bookings/x%E2%88%95..%E2%88%95organizations', // ∕
      '/v2/bookings/%252e%252e/organizations/o1/bookings',
      '/v2/bookings/%c0%ae%c0%ae/organizations/o1/bookings',
      rawUtf8('/v2/bookings/．．/organizations/o1/bookings'),
      rawUtf8('/v2/bookings/x／..／organizations'),
    ]) {
      const res = await check('GET', uri, userReader);
      expect(res.status, uri).toBe(403);
      expect(res.body.error.code, uri).toBe('access_denied');
    }
  });
});

describe('gateway decision: method overrides', () => {
  it('judges a call with a method override as the overriding method too', async () => {
    const overrides: Array<Record<string, string>> = [{ 'X-HTTP-Method-Override': 'DELETE' }, { 'X-HTTP-Method': 'DELETE' }, { 'X-Method-Override': 'delete' }];
    for (const extra of overrides) {
      const res = await check('GET', '/v2/bookings/1', userReader, extra);
      expect(res.status, JSON.stringify(extra)).toBe(403);
      expect(res.headers.get('www-authenticate')).toContain('scope="BOOKING_WRITE"');
    }
    for (const uri of ['/v2/bookings/1?_method=DELETE', '/v2/bookings/1?a=1&_method=delete']) {
      expect((await check('GET', uri, userReader)).status, uri).toBe(403);
    }
    // Without the override the read is allowed; a write token may override to a write.
    expect((await check('GET', '/v2/bookings/1', userReader)).status).toBe(200);
    expect((await check('POST', '/v2/organizations/3/event-types/44', orgWriter, { 'X-HTTP-Method-Override': 'DELETE' })).status).toBe(200);
  });

  it('takes a public operation out of the public set when overridden, and refuses unknown override methods', async () => {
    expect((await check('POST', '/v2/bookings/abc/cancel')).status).toBe(200);
    expect((await check('POST', '/v2/bookings/abc/cancel', undefined, { 'X-HTTP-Method-Override': 'DELETE' })).status).toBe(401);
    expect((await check('POST', '/v2/bookings?_method=PUT')).status).toBe(401);
    const odd = await check('GET', '/v2/bookings/1', userReader, { 'X-HTTP-Method-Override': 'PROPFIND' });
    expect(odd.status).toBe(403);
    expect(odd.body.error.code).toBe('access_denied');
  });
});

/** A request with exactly these raw headers (repeated ones included) and body, through node:http. */
function rawRequest(path: string, method: string, headers: Array<[string, string]>, body?: string) {
  return new Promise<{ status: number; body: Record<string, any>; challenge?: string }>((resolve, reject) => {
    const framing = body === undefined ? [] : [['Content-Length', String(Buffer.byteLength(body))]];
    const all = [['Host', new URL(server.url).host], ...framing, ...headers].flat();
    // A connection of its own: a request that declares a body it never sends must not stall the next one.
    const req = http.request(`${server.url}${path}`, { method, agent: false, headers: all as unknown as http.OutgoingHttpHeaders }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text), challenge: res.headers['www-authenticate'] }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('one token, one way (RFC 6750 3.1)', () => {
  const forwarded = (uri: string): Array<[string, string]> => [['X-Forwarded-Method', 'GET'], ['X-Forwarded-Uri', uri]];

  it('refuses a token in the header and also as access_token, on /v2/auth/check', async () => {
    const inForwardedQuery = await check('GET', `/v2/bookings/1?access_token=${orgWriter}`, userReader);
    expect(inForwardedQuery.status).toBe(400);
    expect(inForwardedQuery.body.error.code).toBe('invalid_request');
    expect(inForwardedQuery.headers.get('www-authenticate')).toMatch(/^Bearer realm="api", error="invalid_request"/);
    expect(inForwardedQuery.headers.get('x-auth-user-id')).toBeNull();

    const inOwnQuery = await rawRequest(`/v2/auth/check?access_token=${orgWriter}`, 'GET', [...forwarded('/v2/bookings/1'), ['Authorization', `Bearer ${userReader}`]]);
    expect(inOwnQuery.status).toBe(400);
    expect(inOwnQuery.body.error.code).toBe('invalid_request');
    // The check never reads a body: gateways do not forward it, and one that forwards Content-Length
    // without it must not leave the check waiting.
    const declaredBody = await rawRequest('/v2/auth/check', 'GET', [...forwarded('/v2/bookings/1'), ['Authorization', `Bearer ${userReader}`], ['Content-Type', 'application/x-www-form-urlencoded'], ['Content-Length', '50']]);
    expect(declaredBody.status).toBe(200);
    const twoHeaders = await rawRequest('/v2/auth/check', 'GET', [...forwarded('/v2/bookings/1'), ['Authorization', `Bearer ${userReader}`], ['Authorization', `Bearer ${orgWriter}`]]);
    expect(twoHeaders.status).toBe(400);
    expect(twoHeaders.body.error.message).toMatch(/one Authorization header/);
    // One way only is fine, through the same helper.
    expect((await rawRequest('/v2/auth/check', 'GET', [...forwarded('/v2/bookings/1'), ['Authorization', `Bearer ${userReader}`]])).status).toBe(200);
    expect((await check('GET', '/v2/bookings/1?status=upcoming', userReader)).status).toBe(200);
  });

  it('refuses a token in the header and also as access_token, on /v2/me', async () => {
    const auth: [string, string] = ['Authorization', `Bearer ${userReader}`];
    const inQuery = await rawRequest(`/v2/me?access_token=${orgWriter}`, 'GET', [auth]);
    expect(inQuery.status).toBe(400);
    expect(inQuery.body).toEqual({ status: 'error', error: { code: 'invalid_request', message: expect.any(String) } });
    expect(inQuery.challenge).toMatch(/error="invalid_request"/);
    const inBody = await rawRequest('/v2/me', 'GET', [auth, ['Content-Type', 'application/x-www-form-urlencoded']], `access_token=${orgWriter}`);
    expect(inBody.status).toBe(400);
    const patch = await rawRequest('/v2/me', 'PATCH', [auth, ['Content-Type', 'application/x-www-form-urlencoded']], `access_token=${orgWriter}&name=x`);
    expect(patch.status).toBe(400);
    expect(patch.body.error.code).toBe('invalid_request');
    expect((await rawRequest('/v2/me', 'GET', [auth, ['Authorization', `Bearer ${orgWriter}`]])).status).toBe(400);
    expect((await rawRequest('/v2/me', 'GET', [auth])).status).toBe(200);
  });
});

describe('gateway decision: the other ways gateways name the call', () => {
  /** Envoy ext_authz (HTTP service): the call's own method, its path and query appended to the check path. */
  function envoyCheck(method: string, original: string, token?: string, extra: Record<string, string> = {}) {
    return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Record<string, any> }>((resolve, reject) => {
      const { hostname, port } = new URL(server.url);
      const headers: Record<string, string> = { ...extra, ...(token ? { Authorization: `Bearer ${token}` } : {}) };
      // node:http sends the path as written (fetch would normalise it first).
      const req = http.request({ hostname, port, method, path: `/v2/auth/check${original}`, headers, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : {} }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  const original = (method: string, uri: string) => ({ 'X-Original-Method': method, 'X-Original-URI': uri });

  it('takes X-Original-Method and X-Original-URI (nginx guides, ingress-nginx) like X-Forwarded-*', async () => {
    const allowed = await fetch(`${server.url}/v2/auth/check`, { headers: { ...original('GET', '/v2/teams/12/bookings?status=upcoming'), authorization: `Bearer ${teamReader}` } });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('x-auth-user-id')).toBe(String(user.id));
    expect(allowed.headers.get('x-auth-scopes')).toBe('TEAM_BOOKING_READ');
    const write = await fetch(`${server.url}/v2/auth/check`, { headers: { ...original('POST', '/v2/teams/12/bookings'), authorization: `Bearer ${teamReader}` } });
    expect(write.status).toBe(403);
    expect(write.headers.get('www-authenticate')).toContain('scope="TEAM_BOOKING_WRITE"');
    expect((await fetch(`${server.url}/v2/auth/check`, { headers: original('POST', '/v2/bookings') })).status).toBe(200);
    // Both spellings naming the same call are one call.
    const both = await check('GET', '/v2/bookings/1', userReader, original('GET', '/v2/bookings/1'));
    expect(both.status).toBe(200);
  });

  it('refuses a request whose spellings name different calls: 400 invalid_request', async () => {
    const disagreeing: Array<Record<string, string>> = [original('POST', '/v2/bookings/1'), { 'X-Original-URI': '/v2/bookings' }, { 'X-Original-Method': 'POST' }];
    for (const extra of disagreeing) {
      const res = await check('GET', '/v2/bookings/1', userReader, extra);
      expect(res.status, JSON.stringify(extra)).toBe(400);
      expect(res.body).toEqual({ status: 'error', error: { code: 'invalid_request', message: expect.stringMatching(/name different calls/) } });
      expect(res.headers.get('x-auth-user-id')).toBeNull();
    }
    // The Envoy form against a header that names another call.
    const againstPath: Array<Record<string, string>> = [{ 'X-Forwarded-Uri': '/v2/bookings' }, { 'X-Original-Method': 'POST' }, { 'X-Forwarded-Method': 'GET' }];
    for (const extra of againstPath) {
      const res = await envoyCheck('DELETE', '/v2/bookings/1', userReader, extra);
      expect(res.status, JSON.stringify(extra)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    expect((await envoyCheck('GET', '/v2/bookings/1', userReader, { 'X-Forwarded-Uri': '/v2/bookings/1' })).status).toBe(200);
  });

  it('judges Envoy ext_authz requests: method on the request, path and query after /v2/auth/check', async () => {
    const allowed = await envoyCheck('GET', '/v2/teams/12/bookings?status=upcoming', teamReader);
    expect(allowed.status).toBe(200);
    expect(allowed.headers['x-auth-user-id']).toBe(String(user.id));
    expect(allowed.headers['x-auth-client-id']).toBe(client.client_id);
    expect(allowed.headers['x-auth-scopes']).toBe('TEAM_BOOKING_READ');
    expect((await envoyCheck('HEAD', '/v2/teams/12/bookings', teamReader)).status).toBe(200);

    const write = await envoyCheck('POST', '/v2/teams/12/bookings', teamReader);
    expect(write.status).toBe(403);
    expect(write.headers['www-authenticate']).toBe('Bearer realm="api", error="insufficient_scope", scope="TEAM_BOOKING_WRITE"');
    const none = await envoyCheck('GET', '/v2/teams/12/bookings');
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe(`Bearer realm="api", resource_metadata="${server.url}/.well-known/oauth-protected-resource/v2"`);
    for (const path of ['/v2/bookings', '/v2/bookings/abc/cancel', '/v2/bookings/abc/reschedule']) {
      const open = await envoyCheck('POST', path);
      expect(open.status, path).toBe(200);
      expect(open.headers['x-auth-user-id']).toBeUndefined();
    }
    // Method overrides and the one-token rule apply as in the header form.
    expect((await envoyCheck('GET', '/v2/bookings/1?_method=DELETE', userReader)).status).toBe(403);
    expect((await envoyCheck('POST', '/v2/bookings/abc/cancel', undefined, { 'X-HTTP-Method-Override': 'DELETE' })).status).toBe(401);
    expect((await envoyCheck('GET', `/v2/bookings/1?access_token=${orgWriter}`, userReader)).status).toBe(400);
    expect((await envoyCheck('PROPFIND', '/v2/bookings/1', userReader)).status).toBe(403);
  });

  it('applies the same path rules to every spelling: one path, one decision', async () => {
    const rawUtf8 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
    const paths = [
      '/v2/bookings/1',
      '/v2/bookings/1/',
      '/v2/bookings/1?x=%2e%2e',
      '/v2/organizations/o1/bookings',
      '/v2/bookings/..;/organizations/o1/bookings',
      '/v2/bookings/1;x=1',
      '/v2/bookings/%2e%2e/organizations/o1/bookings',
      '/v2/bookings/..%2forganizations%2fo1%2fbookings',
      '/v2/bookings/%5c..%5corganizations',
      '/v2/bookings/%252e%252e/organizations/o1/bookings',
      '/v2/bookings/%c0%ae%c0%ae/organizations/o1/bookings',
      '/v2/bookings/%EF%BC%8E%EF%BC%8E/organizations/o1/bookings',
      '/v2/bookings/../organizations/o1/bookings',
      '/v2/bookings//1',
      '//v2/bookings/1',
      '/v2//bookings/1',
      '/v2/Bookings/1',
      '/v2/bookings/%31',
      '/v2/admin',
      '/v2/auth/oauth2/token',
      '/v2',
      '/',
    ];
    for (const path of paths) {
      const forwarded = await check('GET', path, userReader);
      const nginxStyle = await fetch(`${server.url}/v2/auth/check`, { headers: { ...original('GET', path), authorization: `Bearer ${userReader}` } });
      const envoy = await envoyCheck('GET', path, userReader);
      expect([nginxStyle.status, envoy.status], path).toEqual([forwarded.status, forwarded.status]);
      expect(envoy.headers['x-auth-user-id'], path).toBe(forwarded.headers.get('x-auth-user-id') ?? undefined);
    }
    // Raw non-ASCII bytes in the request line: Node's HTTP parser already refuses the Envoy form.
    const looksLikeDots = rawUtf8('/v2/bookings/．．/organizations/o1/bookings');
    expect((await check('GET', looksLikeDots, userReader)).status).toBe(403);
    expect([400, 403]).toContain((await envoyCheck('GET', looksLikeDots, userReader)).status);
    // The corpus is not all refusals.
    expect((await envoyCheck('GET', '/v2/bookings/1', userReader)).status).toBe(200);
    expect((await envoyCheck('GET', '/v2/bookings/..;/organizations/o1/bookings', userReader)).status).toBe(403);
    expect((await envoyCheck('GET', '//v2/bookings/1', userReader)).status).toBe(403);
  });
});
