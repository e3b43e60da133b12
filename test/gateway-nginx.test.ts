// The shipped nginx recipe (deploy/nginx/templates/gateway.conf.template), run by Debian's nginx in
// front of our server and of a stand-in scheduling API that echoes what reached it.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { startEchoApi, type EchoApi } from './support/echo-api.ts';
import { authorize, authorizeUrl, getMe, tokenRequest } from './support/oauth.ts';
import { approvedClient, codeFor, newUser, operator, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';
import { Browser } from './support/browser.ts';
import { clientsCreate, clientsSetStatus } from '../src/admin/commands.ts';
import { freePort, nginxTestsEnabled, selfSignedCertificate, startNginx, type RunningNginx, type TlsFiles } from './support/nginx.ts';
import { boundTokensFor } from './support/bindings.ts';
import { dpopKey, proof } from './support/dpop.ts';

interface Answer {
  status: number;
  /** Every value of a header, repeated ones separately. */
  all(name: string): string[];
  body: string;
}

/** An answer read whole, every value of a header kept (repeated ones separately). */
function readAnswer(res: http.IncomingMessage, resolve: (answer: Answer) => void): void {
  let text = '';
  res.setEncoding('utf8');
  res.on('data', (d) => (text += d));
  res.on('end', () => {
    const raw = res.rawHeaders;
    const all = (name: string) => raw.filter((_, i) => i % 2 === 1 && raw[i - 1]!.toLowerCase() === name.toLowerCase());
    resolve({ status: res.statusCode!, all, body: text });
  });
}

/** One request with exactly these headers, read with node:http so that repeated headers can be counted. */
function send(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    // The path as written: a URL string would be normalised first (WHATWG resolves %2e%2e).
    const { hostname, port } = new URL(base);
    const req = http.request({ hostname, port, path, method, headers, agent: false }, (res) => readAnswer(res, resolve));
    req.on('error', reject);
    req.end(body);
  });
}

const enabled = nginxTestsEnabled('test/gateway-nginx.test.ts');

describe.runIf(enabled)('the nginx recipe in front of the API and this server', () => {
  let server: TestServer;
  let api: EchoApi;
  let nginx: RunningNginx;
  let client: TestClient;
  let user: Awaited<ReturnType<typeof newUser>>;
  let reader: { access_token: string; refresh_token: string };

  beforeAll(async () => {
    [server, api] = await Promise.all([startTestServer('redis'), startEchoApi()]);
    nginx = await startNginx({ oauthServer: new URL(server.url).host, schedulingApi: api.hostPort });
    client = await approvedClient(server, ['BOOKING_READ', 'PROFILE_READ']);
    user = await newUser(server);
    reader = await tokensFor(server, client, user, 'BOOKING_READ PROFILE_READ');
  });
  afterAll(async () => {
    await nginx?.stop();
    await Promise.all([server?.close(), api?.close()]);
  });
  beforeEach(() => {
    api.received.length = 0;
  });

  const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

  it('forwards an allowed call unchanged, with the identity the check found', async () => {
    const res = await send(nginx.url, 'GET', '/v2/bookings/uid-1?status=upcoming', bearer(reader.access_token));
    expect(res.status, nginx.errorLog()).toBe(200);
    expect(api.received).toEqual([
      {
        method: 'GET',
        url: '/v2/bookings/uid-1?status=upcoming',
        auth: [
          ['x-auth-user-id', String(user.id)],
          ['x-auth-client-id', client.client_id],
          ['x-auth-scopes', 'BOOKING_READ PROFILE_READ'],
        ],
      },
    ]);
  });

  it('never lets a client-sent X-Auth-* header reach the API, on a gated or a public call', async () => {
    const forged = { 'X-Auth-User-Id': '1', 'x-auth-client-id': 'forged', 'X-AUTH-SCOPES': 'ORG_BOOKING_WRITE', 'X-Auth-Org-Id': '1', 'x-auth-team-ids': '1,2' };
    expect((await send(nginx.url, 'GET', '/v2/bookings/uid-1', { ...bearer(reader.access_token), ...forged })).status).toBe(200);
    expect((await send(nginx.url, 'POST', '/v2/bookings', { ...forged, 'Content-Type': 'application/json' }, '{}')).status).toBe(200);
    const [gated, open] = api.received;
    expect(gated!.auth).toEqual([
      ['x-auth-user-id', String(user.id)],
      ['x-auth-client-id', client.client_id],
      ['x-auth-scopes', 'BOOKING_READ PROFILE_READ'],
    ]);
    expect(open).toEqual({ method: 'POST', url: '/v2/bookings', auth: [] });
  });

  it('forwards the binding of a token bound to an organization and teams, and refuses its other teams', async () => {
    const teamApp = await approvedClient(server, ['TEAM_BOOKING_READ'], 'Team App');
    const bound = await boundTokensFor(server, teamApp, String(user.id), 'TEAM_BOOKING_READ', { orgId: 4, teamIds: [2, 5] });
    const forged = { 'X-Auth-Org-Id': '9', 'X-Auth-Team-Ids': '7' };
    expect((await send(nginx.url, 'GET', '/v2/teams/5/bookings', { ...bearer(bound.access_token), ...forged })).status, nginx.errorLog()).toBe(200);
    expect(api.received).toEqual([
      {
        method: 'GET',
        url: '/v2/teams/5/bookings',
        auth: [
          ['x-auth-user-id', String(user.id)],
          ['x-auth-client-id', teamApp.client_id],
          ['x-auth-scopes', 'TEAM_BOOKING_READ'],
          ['x-auth-org-id', '4'],
          ['x-auth-team-ids', '2,5'],
        ],
      },
    ]);
    const other = await send(nginx.url, 'GET', '/v2/teams/7/bookings', bearer(bound.access_token));
    expect(other.status).toBe(403);
    expect(JSON.parse(other.body)).toMatchObject({ status: 'error', error: { code: 'access_denied' } });
    expect(api.received).toHaveLength(1);
  });

  it('passes the public booking operations without a token and without identity headers', async () => {
    for (const path of ['/v2/bookings', '/v2/bookings/uid-1/cancel', '/v2/bookings/uid-1/reschedule']) {
      const res = await send(nginx.url, 'POST', path, { 'Content-Type': 'application/json' }, '{"name":"Guest"}');
      expect(res.status, path).toBe(200);
    }
    expect(api.received.map((r) => [r.method, r.url, r.auth])).toEqual([
      ['POST', '/v2/bookings', []],
      ['POST', '/v2/bookings/uid-1/cancel', []],
      ['POST', '/v2/bookings/uid-1/reschedule', []],
    ]);
    // Reading a booking is not public.
    expect((await send(nginx.url, 'GET', '/v2/bookings/uid-1')).status).toBe(401);
  });

  it('answers a call without a token with 401 and exactly one challenge, naming the protected-resource metadata (RFC 9728)', async () => {
    const res = await send(nginx.url, 'GET', '/v2/bookings/uid-1');
    expect(res.status).toBe(401);
    expect(res.all('www-authenticate')).toEqual([`Bearer realm="api", resource_metadata="${server.url}/.well-known/oauth-protected-resource/v2"`]);
    expect(JSON.parse(res.body)).toEqual({ status: 'error', error: { code: 'unauthorized', message: expect.any(String) } });
    expect(api.received).toEqual([]);
  });

  it('answers a token without the needed scope with 403 and exactly one insufficient_scope challenge', async () => {
    const res = await send(nginx.url, 'DELETE', '/v2/bookings/uid-1', bearer(reader.access_token));
    expect(res.status).toBe(403);
    expect(res.all('www-authenticate')).toEqual(['Bearer realm="api", error="insufficient_scope", scope="BOOKING_WRITE"']);
    expect(JSON.parse(res.body)).toEqual({ status: 'error', error: { code: 'insufficient_scope', message: expect.any(String) } });
    expect(api.received).toEqual([]);
  });

  it('refuses paths the route policy refuses, with no challenge (no token would help)', async () => {
    for (const path of ['/v2/bookings/..;/organizations/1/bookings', '/v2/teams/1/%2e%2e/bookings', '/v2/admin', '/']) {
      const res = await send(nginx.url, 'GET', path, bearer(reader.access_token));
      expect(res.status, path).toBe(403);
      expect(res.all('www-authenticate'), path).toEqual([]);
      expect(JSON.parse(res.body).error.code, path).toBe('access_denied');
    }
    expect(api.received).toEqual([]);
  });

  it('ignores a client-sent X-Forwarded-Method/-Uri: the gateway names the call', async () => {
    const res = await send(nginx.url, 'GET', '/v2/bookings/uid-1', { 'X-Forwarded-Method': 'POST', 'X-Forwarded-Uri': '/v2/bookings' });
    expect(res.status).toBe(401);
    expect(api.received).toEqual([]);
  });

  it('answers a token sent two ways with 400 invalid_request, not a 500', async () => {
    const res = await send(nginx.url, 'GET', `/v2/bookings/uid-1?access_token=${reader.access_token}`, bearer(reader.access_token));
    expect(res.status).toBe(400);
    expect(res.all('www-authenticate')).toEqual([expect.stringMatching(/^Bearer realm="api", error="invalid_request"/)]);
    expect(JSON.parse(res.body).error.code).toBe('invalid_request');
    expect(api.received).toEqual([]);
  });

  it('serves this server\'s own endpoints without the check: token, /v2/me, revocation, metadata', async () => {
    const refreshed = await tokenRequest(nginx.url, { grant_type: 'refresh_token', refresh_token: reader.refresh_token, ...client });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    reader = refreshed.body as typeof reader;
    const me = await getMe(nginx.url, reader.access_token);
    expect(me.status).toBe(200);
    expect(me.body.data.email).toBe(user.email);
    expect((await getMe(nginx.url)).status).toBe(401);
    const metadata = await fetch(`${nginx.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`);
    expect(metadata.status).toBe(200);
    expect((await send(nginx.url, 'GET', '/login')).status).toBe(200);
    expect(api.received).toEqual([]);
  });

  it('serves the protected-resource metadata and passes on the challenge for a token meant for another resource (RFC 8707)', async () => {
    const metadata = await send(nginx.url, 'GET', '/.well-known/oauth-protected-resource/v2');
    expect(metadata.status).toBe(200);
    expect(JSON.parse(metadata.body)).toMatchObject({ resource: `${server.url}/v2`, authorization_servers: [`${server.url}/v2/auth/oauth2`], bearer_methods_supported: ['header'] });
    const mcp = 'https://mcp.example.com/mcp';
    const rs = await clientsCreate(operator(server), { name: 'MCP server', resourceServer: true, resourceUri: mcp, scope: ['BOOKING_READ'] });
    await clientsSetStatus(operator(server), rs.client_id, 'approved');
    const url = new URL(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'BOOKING_READ', state: 's' }));
    url.searchParams.set('resource', mcp);
    const code = (await authorize(new Browser(), server.url, url, user)).searchParams.get('code')!;
    const foreign = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...client });
    expect(foreign.status, JSON.stringify(foreign.body)).toBe(200);
    const res = await send(nginx.url, 'GET', '/v2/bookings/uid-3', bearer(foreign.body.access_token as string));
    expect(res.status).toBe(401);
    expect(res.all('www-authenticate')).toEqual([
      `Bearer realm="api", error="invalid_token", error_description="the access token is for another resource", resource_metadata="${server.url}/.well-known/oauth-protected-resource/v2"`,
    ]);
    expect(JSON.parse(res.body).error.code).toBe('invalid_token');
    expect(api.received).toEqual([]);
  });

  it('refuses a revoked token with 401 invalid_token', async () => {
    const token = (await tokensFor(server, client, user, 'BOOKING_READ')).access_token;
    expect((await send(nginx.url, 'GET', '/v2/bookings/uid-2', bearer(token))).status).toBe(200);
    const revoked = await fetch(`${nginx.url}/v2/auth/oauth2/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, ...client }),
    });
    expect(revoked.status).toBe(200);
    const res = await send(nginx.url, 'GET', '/v2/bookings/uid-2', bearer(token));
    expect(res.status).toBe(401);
    expect(res.all('www-authenticate')).toEqual([expect.stringMatching(/^Bearer realm="api", error="invalid_token"/)]);
    expect(JSON.parse(res.body).error.code).toBe('invalid_token');
    expect(api.received).toHaveLength(1);
  });

  it('DPoP (docs/dpop.md): a bound token passes with a proof of the call as the client made it; refusals keep their code, challenge and nonce', async () => {
    const key = dpopKey();
    const code = await codeFor(server, client, user, 'BOOKING_READ PROFILE_READ');
    // Through nginx, as a client would: the proof names nginx's address.
    const issued = await send(nginx.url, 'POST', '/v2/auth/oauth2/token', { 'Content-Type': 'application/x-www-form-urlencoded', DPoP: proof(key, 'POST', `${nginx.url}/v2/auth/oauth2/token`) }, new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...client }).toString());
    expect(issued.status, issued.body).toBe(200);
    const { access_token: token, token_type } = JSON.parse(issued.body) as { access_token: string; token_type: string };
    expect(token_type).toBe('DPoP');
    const call = (dpop: string | undefined, scheme = 'DPoP') => send(nginx.url, 'GET', '/v2/bookings/uid-1?status=upcoming', { Authorization: `${scheme} ${token}`, ...(dpop ? { DPoP: dpop } : {}) });
    const allowed = await call(proof(key, 'GET', `${nginx.url}/v2/bookings/uid-1`, token));
    expect(allowed.status, nginx.errorLog()).toBe(200);
    expect(api.received[0]!.auth).toContainEqual(['x-auth-client-id', client.client_id]);
    const refusals: Array<[string, Answer, string]> = [
      ['as Bearer', await call(undefined, 'Bearer'), 'invalid_token'],
      ['another path', await call(proof(key, 'GET', `${nginx.url}/v2/bookings/uid-2`, token)), 'invalid_dpop_proof'],
      ['another host', await call(proof(key, 'GET', `https://elsewhere.example/v2/bookings/uid-1`, token)), 'invalid_dpop_proof'],
      ['a nonce not ours', await call(proof(key, 'GET', `${nginx.url}/v2/bookings/uid-1`, token, { nonce: 'x' })), 'use_dpop_nonce'],
    ];
    for (const [what, res, error] of refusals) {
      expect(res.status, what).toBe(401);
      expect((JSON.parse(res.body) as { error: { code: string } }).error.code, what).toBe(error);
      expect(res.all('www-authenticate'), what).toEqual([expect.stringMatching(new RegExp(`^DPoP algs="[^"]+", error="${error}"`))]);
      expect(res.all('dpop-nonce').length, what).toBe(error === 'use_dpop_nonce' ? 1 : 0);
    }
    // /v2/me through nginx: its public URL too.
    const me = await send(nginx.url, 'GET', '/v2/me', { Authorization: `DPoP ${token}`, DPoP: proof(key, 'GET', `${nginx.url}/v2/me`, token) });
    expect(me.status, me.body).toBe(200);
  });

  it('exposes neither /metrics nor the check itself', async () => {
    const direct = await fetch(`${server.metricsUrl}/metrics`);
    expect(await direct.text()).toContain('http_requests_total'); // the metrics exist, on METRICS_PORT
    const res = await send(nginx.url, 'GET', '/metrics', bearer(reader.access_token));
    expect(res.status).toBe(404);
    expect(res.body).not.toContain('http_requests_total');
    for (const path of ['/v2/auth/check', '/v2/auth/check/v2/bookings/1']) {
      const check = await send(nginx.url, 'GET', path, { ...bearer(reader.access_token), 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': '/v2/bookings/1' });
      expect(check.status, path).toBe(404);
      expect(check.all('x-auth-user-id')).toEqual([]);
    }
    expect(api.received).toEqual([]);
  });

  it('refuses every gated call while the check cannot answer (fails closed)', async () => {
    const blind = await startNginx({ oauthServer: `127.0.0.1:${await freePort()}`, schedulingApi: api.hostPort });
    try {
      const res = await send(blind.url, 'POST', '/v2/bookings', { 'Content-Type': 'application/json' }, '{}');
      expect(res.status).toBe(503);
      expect(JSON.parse(res.body).error.code).toBe('temporarily_unavailable');
      expect((await send(blind.url, 'GET', '/v2/bookings/uid-1', bearer(reader.access_token))).status).toBe(503);
      expect(api.received).toEqual([]);
    } finally {
      await blind.stop();
    }
  });
});

/** One request over TLS to the gateway, trusting only `ca` (the test's self-signed certificate), for the name localhost. */
function sendTls(base: string, ca: string | undefined, method: string, target: string, headers: Record<string, string> = {}, body?: string): Promise<Answer & { setCookies: string[] }> {
  return new Promise((resolve, reject) => {
    const { port } = new URL(base);
    const req = https.request({ host: '127.0.0.1', servername: 'localhost', port, path: target, method, headers: { Host: `localhost:${port}`, ...headers }, agent: false, ...(ca ? { ca } : {}) }, (res) =>
      readAnswer(res, (answer) => resolve({ ...answer, setCookies: answer.all('set-cookie') })),
    );
    req.on('error', reject);
    req.end(body);
  });
}

// Issue 50 item 2: the recipe's TLS lines, uncommented as docs/production.md says, with a
// self-signed certificate: this server behind it on an https APP_URL with TRUST_PROXY=true.
describe.runIf(enabled)('the nginx recipe terminating TLS', () => {
  let server: TestServer;
  let api: EchoApi;
  let nginx: RunningNginx;
  let tls: TlsFiles;
  let ca: string;
  let publicUrl: string;

  beforeAll(async () => {
    const port = await freePort();
    publicUrl = `https://localhost:${port}`;
    tls = selfSignedCertificate(fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-tls-')));
    ca = fs.readFileSync(tls.certificate, 'utf8');
    [server, api] = await Promise.all([startTestServer('redis', { APP_URL: publicUrl, TRUST_PROXY: 'true' }), startEchoApi()]);
    nginx = await startNginx({ oauthServer: new URL(server.url).host, schedulingApi: api.hostPort }, { tls, port });
  });
  afterAll(async () => {
    await nginx?.stop();
    await Promise.all([server?.close(), api?.close()]);
    if (tls) fs.rmSync(path.dirname(tls.certificate), { recursive: true, force: true });
  });

  it('serves the metadata, the pages (their cookies Secure), /v2/me, a refresh and a gated call over TLS', async () => {
    const metadata = await sendTls(nginx.url, ca, 'GET', '/.well-known/oauth-authorization-server/v2/auth/oauth2');
    expect(metadata.status, nginx.errorLog()).toBe(200);
    expect(JSON.parse(metadata.body)).toMatchObject({ issuer: `${publicUrl}/v2/auth/oauth2`, token_endpoint: `${publicUrl}/v2/auth/oauth2/token` });

    // The pages' cookies are Secure on an https APP_URL.
    const login = await sendTls(nginx.url, ca, 'GET', '/login');
    expect(login.status).toBe(200);
    expect(login.setCookies.length).toBeGreaterThan(0);
    for (const cookie of login.setCookies) expect(cookie.toLowerCase()).toContain('; secure');

    const client = await approvedClient(server, ['BOOKING_READ', 'PROFILE_READ']);
    const user = await newUser(server);
    const tokens = await boundTokensFor(server, client, String(user.id), 'BOOKING_READ PROFILE_READ');
    const me = await sendTls(nginx.url, ca, 'GET', '/v2/me', { Authorization: `Bearer ${tokens.access_token}` });
    expect(me.status).toBe(200);
    expect(JSON.parse(me.body).data.email).toBe(user.email);

    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id, client_secret: client.client_secret }).toString();
    const refreshed = await sendTls(nginx.url, ca, 'POST', '/v2/auth/oauth2/token', { 'Content-Type': 'application/x-www-form-urlencoded' }, form);
    expect(refreshed.status, refreshed.body).toBe(200);
    expect(JSON.parse(refreshed.body)).toMatchObject({ token_type: 'bearer', refresh_token: expect.any(String) });

    const gated = await sendTls(nginx.url, ca, 'GET', '/v2/bookings/uid-9', { Authorization: `Bearer ${JSON.parse(refreshed.body).access_token}` });
    expect(gated.status).toBe(200);
    expect(api.received.at(-1)).toMatchObject({ url: '/v2/bookings/uid-9', auth: expect.arrayContaining([['x-auth-user-id', String(user.id)]]) });
  });

  it('is TLS indeed: a client that does not trust the certificate is refused, and plain http on the port is an error', async () => {
    await expect(sendTls(nginx.url, undefined, 'GET', '/v2/me')).rejects.toThrow(/self[- ]signed|unable to verify/i);
    const plain = await send(nginx.url.replace('https:', 'http:'), 'GET', '/v2/me');
    expect(plain.status).toBe(400);
  });
});
