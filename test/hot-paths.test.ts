// The API's hot paths (src/fast/dispatch.ts) are answered before the Koa app; the app answers
// whatever they pass on. One contract, two transports: the same request gets the same answer
// either way, and each request goes where it should.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrg } from '../src/orgs/store.ts';
import { startInstance, startTestServer, type TestServer } from './support/server.ts';
import { approvedClient, newUser, tokensFor } from './support/fixtures.ts';
import { hotPathListener } from '../src/fast/dispatch.ts';
import { dataAnswer } from '../src/api/responses.ts';
import { clientAddress } from '../src/http/untrusted-proxy.ts';
import { createLogger } from '../src/log.ts';
import { envelope, requestLineWriter } from '../src/http/envelope.ts';
import Koa from 'koa';
import { comparable, raw } from './support/raw-http.ts';
import { readBodyOnce } from '../src/oauth/request-shims.ts';
import { HAND_OVER } from '../src/fast/back-channel.ts';

describe('which listener answers', () => {
  let base: string;
  let close: () => Promise<void>;
  const answeredBy: string[] = [];

  beforeAll(async () => {
    const handler = (name: string) => async () => {
      answeredBy.push(name);
      return dataAnswer({ by: name });
    };
    const app: http.RequestListener = (_req, res) => {
      answeredBy.push('app');
      res.end('app');
    };
    const listener = hotPathListener(
      {
        answerCheck: handler('check'),
        answerMe: handler('me'),
        answerBackChannel: (req, res) => {
          answeredBy.push('back channel');
          // The body, whole, even when a plain case read it first.
          void readBodyOnce(req).then((body) => res.end(`back channel:${body}`));
        },
        // A plain case that answers only forms with answer=yes, and leaves the rest.
        backChannelHotPaths: new Map(
          ['/v2/auth/oauth2/token', '/v2/auth/oauth2/introspect'].map((path) => [
            path,
            async ({ form }) => {
              answeredBy.push(`plain ${path.slice(path.lastIndexOf('/') + 1)}`);
              return form.get('answer') === 'yes' ? dataAnswer({ by: 'plain' }) : HAND_OVER.not_plain;
            },
          ]),
        ),
        envelope: envelope({ log: createLogger('silent'), metrics: { record: () => {} }, https: false, proxyHops: 0, proxyWarning: () => {} }),
        log: createLogger('silent'),
        metrics: { fastPathOutcome: () => {} },
        proxyHops: 0,
      },
      app,
    );
    const server = http.createServer(listener);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  });
  afterAll(() => close?.());

  let lastBody = '';
  async function by(method: string, target: string, headers: Record<string, string> = {}, body?: string) {
    answeredBy.length = 0;
    lastBody = (await raw(base, method, target, headers, body)).body;
    return answeredBy.join();
  }

  it('takes the check (GET, HEAD; any method in the Envoy form) and body-less reads of /v2/me', async () => {
    expect(await by('GET', '/v2/auth/check')).toBe('check');
    expect(await by('HEAD', '/v2/auth/check?x=1')).toBe('check');
    expect(await by('DELETE', '/v2/auth/check/v2/bookings/1?x=1')).toBe('check');
    expect(await by('GET', '/v2/me')).toBe('me');
    expect(await by('HEAD', '/v2/me')).toBe('me');
  });

  it('takes every request to the token, revocation and introspection endpoints to the back channel, exactly as spelled (POSTs to a plain case first)', async () => {
    for (const endpoint of ['token', 'revoke', 'introspect']) {
      const plain = endpoint === 'revoke' ? '' : `plain ${endpoint},`;
      expect(await by('POST', `/v2/auth/oauth2/${endpoint}`, { 'content-type': 'application/x-www-form-urlencoded' }, 'a=b')).toBe(`${plain}back channel`);
      expect(lastBody).toBe('back channel:a=b');
      expect(await by('POST', `/v2/auth/oauth2/${endpoint}?x=1`)).toBe('back channel');
      for (const variant of [`/v2/auth/oauth2/${endpoint}/`, `/v2/auth/OAuth2/${endpoint}`, `/v2/auth/oauth2/${endpoint.toUpperCase()}`, `/v2/auth/oauth2/%74${endpoint.slice(1)}`]) {
        expect(await by('POST', variant), variant).toBe('app');
      }
      expect(await by('GET', `/v2/auth/oauth2/${endpoint}`)).toBe('back channel');
      expect(await by('PUT', `/v2/auth/oauth2/${endpoint}`, { 'content-type': 'application/x-www-form-urlencoded' }, 'answer=yes')).toBe('back channel');
      expect(await by('POST', `${base}/v2/auth/oauth2/${endpoint}`)).toBe('app');
    }
  });

  it("offers only a plain form of a stated length, without a query, on the exact path, to a plain case; what it leaves reaches the back channel, body and all", async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    expect(await by('POST', '/v2/auth/oauth2/token', form, 'answer=yes&x=1')).toBe('plain token');
    expect(JSON.parse(lastBody)).toEqual({ status: 'success', data: { by: 'plain' } });
    expect(await by('POST', '/v2/auth/oauth2/introspect', { 'content-type': 'Application/X-WWW-Form-Urlencoded; Charset=UTF-8' }, 'answer=yes')).toBe('plain introspect');
    expect(await by('POST', '/v2/auth/oauth2/introspect', form, 'answer=no&token=t')).toBe('plain introspect,back channel');
    expect(lastBody).toBe('back channel:answer=no&token=t');
    const leftUnread: Array<[string, Record<string, string>]> = [
      ['/v2/auth/oauth2/token?answer=yes', form],
      ['/v2/auth/oauth2/token', { 'content-type': 'application/json' }],
      ['/v2/auth/oauth2/token', { 'content-type': 'application/x-www-form-urlencoded; charset=latin1' }],
      ['/v2/auth/oauth2/token', { ...form, 'transfer-encoding': 'chunked' }],
      ['/v2/auth/oauth2/revoke', form],
    ];
    for (const [target, headers] of leftUnread) {
      const chunked = headers['transfer-encoding'] !== undefined;
      answeredBy.length = 0;
      const { hostname, port } = new URL(base);
      lastBody = await new Promise<string>((resolve, reject) => {
        const req = http.request({ hostname, port, method: 'POST', path: target, headers: chunked ? headers : { ...headers, 'content-length': '10' }, agent: false }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += String(c)));
          res.on('end', () => resolve(text));
        });
        req.on('error', reject);
        req.end('answer=yes');
      });
      expect(answeredBy.join(), `${target} ${JSON.stringify(headers)}`).toBe('back channel');
      expect(lastBody).toBe('back channel:answer=yes');
    }
    // Other spellings of the paths never reach a plain case.
    for (const variant of ['/v2/auth/oauth2/token/', '/v2/auth/oauth2/Token', '/v2/auth/oauth2/%74oken', '/v2/auth/oauth2//token']) {
      expect(await by('POST', variant, form, 'answer=yes'), variant).toBe('app');
    }
    expect(await by('POST', `${base}/v2/auth/oauth2/token`, form, 'answer=yes')).toBe('app');
  });

  it('passes everything else to the app: other spellings, methods, bodies, absolute-form, long or NUL URLs', async () => {
    for (const target of ['/v2/auth/check/', '/v2/auth/Check', '/v2/auth/checks', '/V2/me', '/v2/me/', '/v2/me?', '/v2//me', '/health']) {
      const expected = target === '/v2/auth/check/' ? 'check' : target === '/v2/me?' ? 'me' : 'app';
      expect(await by('GET', target), target).toBe(expected);
    }
    expect(await by('POST', '/v2/auth/check')).toBe('app');
    expect(await by('PATCH', '/v2/me', { 'content-type': 'application/json' }, '{}')).toBe('app');
    expect(await by('GET', '/v2/me', { 'content-type': 'application/x-www-form-urlencoded' }, 'access_token=x')).toBe('app');
    expect(await by('GET', `${base}/v2/auth/check`)).toBe('app');
    expect(await by('GET', `/v2/auth/check?${'a'.repeat(9000)}`)).toBe('app');
    expect(await by('GET', '/v2/auth/check/v2/bookings%00')).toBe('app');
  });

  it("computes the client address as Koa does, for every proxy setting", () => {
    const cases: Array<[string | undefined, number]> = [
      [undefined, 0],
      ['6.6.6.6', 0],
      ['6.6.6.6, 203.0.113.7', 1],
      [' 6.6.6.6 ,198.51.100.1 , 10.0.0.2', 2],
      ['203.0.113.8', 5],
      ['', 1],
    ];
    for (const [forwarded, hops] of cases) {
      const app = new Koa({ proxy: hops > 0, maxIpsCount: hops });
      const req = { headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded }, socket: { remoteAddress: '127.0.0.9' } } as unknown as http.IncomingMessage;
      const ctx = app.createContext(req, {} as http.ServerResponse);
      expect(clientAddress(req.headers, '127.0.0.9', hops), `${forwarded} ${hops}`).toBe(ctx.ip);
    }
  });
});

describe('the request line', () => {
  it('is the line pino writes for log.info(fields, "request"), bindings included, and none below info', () => {
    const written: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        written.push(String(chunk));
        done();
      },
    });
    const fields = { reqId: 'r-1', method: 'GET', path: '/v2/a"b\\c\u00e9', status: 403, ms: 0.4, ip: '::ffff:127.0.0.1' };
    for (const log of [pino({ level: 'info' }, sink), pino({ level: 'info', base: undefined }, sink).child({ instance: 'b' })]) {
      written.length = 0;
      log.info(fields, 'request');
      requestLineWriter(log)(fields);
      expect(written).toHaveLength(2);
      expect(written[1]!.endsWith('\n')).toBe(true);
      const [theirs, ours] = written.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(Object.keys(ours!)).toEqual(Object.keys(theirs!));
      expect({ ...ours, time: 0 }).toEqual({ ...theirs, time: 0 });
      log.level = 'warn';
      requestLineWriter(log)(fields);
      expect(written).toHaveLength(2);
    }
  });
});

describe('the same answer from the hot path and from the app', () => {
  let server: TestServer;
  let token: string;
  let narrow: string;
  let orgToken: string;
  let closedOrg: number;
  let client: Awaited<ReturnType<typeof approvedClient>>;

  beforeAll(async () => {
    server = await startTestServer('redis');
    client = await approvedClient(server, ['PROFILE_READ', 'BOOKING_READ', 'ORG_BOOKING_READ']);
    const user = await newUser(server);
    token = (await tokensFor(server, client, user, 'PROFILE_READ BOOKING_READ')).access_token;
    // A token bound to nothing, and an organization that admits apps only through installations (CONTRACT 7).
    orgToken = (await tokensFor(server, client, user, 'ORG_BOOKING_READ')).access_token;
    closedOrg = (await createOrg(server.system.db, { name: 'Closed Org', appPolicy: 'approval' })).id;
    narrow = (await tokensFor(server, client, user, 'BOOKING_READ')).access_token;
  });
  afterAll(() => server?.close());

  it('for allowed, refused and malformed checks and reads of /v2/me, as origin-form (hot path) and absolute-form (app)', async () => {
    const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
    const requests: Array<[string, string, Record<string, string>]> = [
      ['GET', '/v2/auth/check', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/bookings/1', ...bearer(token) }],
      ['HEAD', '/v2/auth/check', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/bookings/1', ...bearer(token) }],
      ['GET', '/v2/auth/check', { 'x-forwarded-method': 'DELETE', 'x-forwarded-uri': '/v2/bookings/1', ...bearer(token) }],
      ['GET', '/v2/auth/check', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/bookings/1', ...bearer('not-a-token') }],
      ['GET', '/v2/auth/check', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/bookings/1' }],
      ['GET', '/v2/auth/check', { 'x-forwarded-method': 'GET' }],
      ['GET', '/v2/auth/check?access_token=x', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/bookings/1', ...bearer(token) }],
      ['POST', '/v2/auth/check/v2/bookings', {}],
      ['GET', '/v2/auth/check/v2/admin/x', bearer(token)],
      ['GET', '/v2/auth/check', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': `/v2/organizations/${closedOrg}/bookings`, ...bearer(orgToken) }],
      ['GET', '/v2/auth/check', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': `/v2/organizations/${closedOrg + 1000}/bookings`, ...bearer(orgToken) }],
      ['GET', '/v2/me', bearer(token)],
      ['GET', '/v2/me', bearer(narrow)],
      ['GET', '/v2/me', { authorization: 'Basic abc' }],
    ];
    for (const [method, path, headers] of requests) {
      const hot = await raw(server.url, method, path, headers);
      const app = await raw(server.url, method, `${server.url}${path}`, headers);
      expect(comparable(hot), `${method} ${path}`).toEqual(comparable(app));
    }
    const closed = await raw(server.url, 'GET', '/v2/auth/check', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': `/v2/organizations/${closedOrg}/bookings`, ...bearer(orgToken) });
    expect(closed.status).toBe(403);
  });

  it('for the back channel: token, revocation and introspection POSTs, as origin-form (back channel) and absolute-form (app)', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const basic = { authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` };
    const requests: Array<[string, Record<string, string>, string]> = [
      ['/v2/auth/oauth2/token', form, `grant_type=refresh_token&refresh_token=junk&client_id=${client.client_id}&client_secret=${client.client_secret}`],
      ['/v2/auth/oauth2/token', { ...form, ...basic }, 'grant_type=refresh_token&refresh_token=junk'],
      ['/v2/auth/oauth2/token', { 'content-type': 'application/json', ...basic }, JSON.stringify({ grant_type: 'refresh_token', refresh_token: 'junk' })],
      ['/v2/auth/oauth2/token', { 'content-type': 'application/json', ...basic }, '{"grant_type": 1}'],
      ['/v2/auth/oauth2/token', { 'content-type': 'text/plain', ...basic }, 'grant_type=refresh_token'],
      ['/v2/auth/oauth2/token', form, `grant_type=refresh_token&refresh_token=junk&client_id=${client.client_id}&client_secret=wrong`],
      ['/v2/auth/oauth2/token', form, 'grant_type=password'],
      ['/v2/auth/oauth2/introspect', { ...form, ...basic }, `token=${token}`],
      ['/v2/auth/oauth2/introspect', { ...form, ...basic }, 'token=junk'],
      ['/v2/auth/oauth2/revoke', { ...form, ...basic }, 'token=junk'],
    ];
    for (const [path, headers, body] of requests) {
      const channel = await raw(server.url, 'POST', path, headers, body);
      const app = await raw(server.url, 'POST', `${server.url}${path}`, headers, body);
      expect(comparable(channel), `${path} ${body}`).toEqual(comparable(app));
    }
  });

  it('logs one line per request with the same fields either way', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const { redis } = server;
    const instance = await startInstance(
      { DATABASE_URL: server.pg.url, REDIS_URL: redis!.url, TRUST_PROXY: '1' },
      { db: server.system.db, redis: redis!.redis, redisPrefix: redis!.prefix, log: pino({ level: 'info' }, sink) },
    );
    try {
      const headers = { 'x-forwarded-for': '6.6.6.6, 203.0.113.7', 'x-request-id': 'req-1', authorization: `Bearer ${narrow}` };
      await raw(instance.url, 'GET', '/v2/me', headers);
      await raw(instance.url, 'GET', `${instance.url}/v2/me`, { ...headers, 'x-request-id': 'req-2' });
      const logged = lines.filter((l) => l.msg === 'request').map(({ time: _t, pid: _p, hostname: _h, ms, ...rest }) => ({ ...rest, ms: typeof ms }));
      const expected = { level: 30, msg: 'request', method: 'GET', path: '/v2/me', status: 403, ms: 'number', ip: '203.0.113.7' };
      expect(logged).toEqual([
        { ...expected, reqId: 'req-1' },
        { ...expected, reqId: 'req-2' },
      ]);
    } finally {
      await instance.close();
    }
  });
});
