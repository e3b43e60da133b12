// Operations and secrets at rest: after real flows, no token, code, secret or password appears in
// the logs, in Redis or in the database; logs carry request ids; metrics and the audit trail
// record what happened.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorizeUrl, getMe, tokenRequest } from './support/oauth.ts';
import { codeFor, newUser, operator, REDIRECT, tokensFor, approvedClient } from './support/fixtures.ts';
import { clientsShow, secretsGenerate } from '../src/admin/commands.ts';
import { eventually } from './support/eventually.ts';

describe.each<Storage>(['redis', 'sql'])('secrets at rest and in logs (%s storage)', (storage) => {
  let server: TestServer;
  const logLines: string[] = [];
  const secrets: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        logLines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    server = await startTestServer(storage, {}, { log: pino({ level: 'debug' }, sink) });

    // Everything secret that a full life of a client produces.
    const client = await approvedClient(server, ['PROFILE_READ', 'PROFILE_WRITE']);
    const user = await newUser(server);
    const second = await secretsGenerate(operator(server), client.client_id);
    const code = await codeFor(server, client, user, 'PROFILE_READ');
    const tokens = (await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...client })).body as Record<string, string>;
    const refreshed = (await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, ...client })).body as Record<string, string>;
    await getMe(server.url, refreshed.access_token);
    await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, ...client }); // reuse: logged as an error
    const failedLogin = await new Browser().follow(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }), server.url);
    await new Browser().submit(failedLogin, 'form:has(input[name=password])', { email: user.email, password: 'a-wrong-password-123' });
    const fresh = await tokensFor(server, client, user, 'PROFILE_WRITE');
    secrets.push(client.client_secret, second.client_secret, user.password, 'a-wrong-password-123', code, tokens.access_token!, tokens.refresh_token!, refreshed.access_token!, refreshed.refresh_token!, fresh.access_token, fresh.refresh_token);
  });
  afterAll(() => server?.close());

  function expectNoSecretIn(haystack: string, where: string) {
    for (const secret of secrets) expect(haystack.includes(secret), `${where} contains a secret`).toBe(false);
  }

  it('keeps no usable token, code, secret or password in the database', async () => {
    const tables: string[] = await server.pg.db('pg_tables').where('schemaname', 'public').pluck('tablename');
    expect(tables).toEqual(expect.arrayContaining(['users', 'oauth_client_secrets', 'oidc_models', 'audit_events']));
    for (const table of tables) {
      const rows = await server.pg.db(table).select('*');
      expectNoSecretIn(JSON.stringify(rows), `table ${table}`);
    }
    if (storage === 'sql') expect(await server.pg.db('oidc_models').count('* as n').first()).not.toEqual({ n: '0' });
  });

  // Only where the artifacts live in Redis (defined, not skipped, for the SQL run).
  if (storage === 'redis') it('keeps no usable token or code in Redis, in key names or values', async () => {
    const { redis, prefix } = server.redis!;
    const keys = await redis.keys(`${prefix}*`);
    expect(keys.length).toBeGreaterThan(5);
    for (const key of keys) {
      const type = await redis.type(key);
      const value =
        type === 'hash' ? await redis.hgetall(key) : type === 'set' ? await redis.smembers(key) : type === 'string' ? await redis.get(key) : type;
      expectNoSecretIn(`${key} ${JSON.stringify(value)}`, `Redis key ${key}`);
    }
  });

  it('writes structured logs with request ids and never a secret', () => {
    expect(logLines.length).toBeGreaterThan(10);
    const requests = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request');
    expect(requests.length).toBeGreaterThan(10);
    for (const line of requests) expect(line).toMatchObject({ reqId: expect.any(String), method: expect.any(String), path: expect.any(String), status: expect.any(Number) });
    expectNoSecretIn(logLines.join('\n'), 'the log');
  });
});

describe('metrics and audit trail', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('redis');
  });
  afterAll(() => server?.close());

  it('echoes or assigns a request id', async () => {
    expect((await fetch(`${server.url}/health`, { headers: { 'x-request-id': 'abc-123' } })).headers.get('x-request-id')).toBe('abc-123');
    expect((await fetch(`${server.url}/health`, { headers: { 'x-request-id': 'bad id\twith spaces' } })).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('serves metrics only on the metrics listener, never on the public port', async () => {
    for (const path of ['/metrics', '/metrics/', '/metrics?x=1']) expect((await fetch(`${server.url}${path}`)).status, path).toBe(404);
    expect((await fetch(`${server.metricsUrl}/metrics`)).status).toBe(200);
    expect((await fetch(`${server.metricsUrl}/`)).status).toBe(404);
    expect((await fetch(`${server.metricsUrl}/health`)).status).toBe(404);
    expect((await fetch(`${server.metricsUrl}/metrics`, { method: 'POST' })).status).toBe(404);
  });

  it('exposes Prometheus metrics and records security events in the audit trail', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const user = await newUser(server);
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    const refreshed = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client });
    expect(refreshed.status).toBe(200);
    // A retry within the grace window is answered again, not counted; reuse after the successor was used is.
    expect((await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client })).status).toBe(200);
    expect((await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token as string, ...client })).status).toBe(200);
    expect((await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client })).status).toBe(400);
    expect((await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: 'x', client_id: client.client_id, client_secret: 'wrong' })).status).toBe(401);

    const res = await fetch(`${server.metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(text).toMatch(/http_requests_total\{route="token",method="POST",status="200"\} [1-9]/);
    expect(text).toMatch(/http_request_duration_seconds_count\{route="token"\} [1-9]/);
    expect(text).toMatch(/oauth_tokens_issued_total\{grant_type="authorization_code"\} 1/);
    expect(text).toMatch(/oauth_tokens_issued_total\{grant_type="refresh_token"\} 2/);
    expect(text).toMatch(/oauth_auth_failures_total\{kind="client"\} 1/);
    expect(text).toMatch(/oauth_security_events_total\{event="refresh_token.reuse_detected"\} 1/);
    expect(text).toContain('process_resident_memory_bytes');
    expect(text).not.toContain(client.client_id); // no high-cardinality labels

    // Audit writes from provider events are asynchronous.
    await eventually(async () => {
      const actions = await server.pg.db('audit_events').where('client_id', client.client_id).orderBy('id').pluck('action');
      expect(actions.slice(0, 3)).toEqual(['client.created', 'client.approved', 'consent.given']);
      expect(actions.slice(3).sort()).toEqual(['grant.revoked', 'refresh_token.reuse_detected']);
    });
    expect((await clientsShow(operator(server), client.client_id)).status).toBe('approved');
  });
});
