// Identifiable, checksummed credentials and the leak-revocation endpoint (issue 37 part 1,
// docs/credentials.md): every credential issued is of its documented form; a malformed one of ours
// is refused everywhere a credential is accepted without any store read (watched on the real
// stores: every query the PostgreSQL driver sends, Redis's commands through MONITOR); credentials
// issued before the format keep working; POST /v2/auth/credentials/revoke revokes what it
// recognises, tells the app (signed webhooks, verified with `standardwebhooks`) and the user
// (Apps with access), and answers alike whatever it found. Real HTTP, PostgreSQL and Redis, on both
// token stores.
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { Redis } from 'ioredis';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERING, startTestServer, type Storage, type TestServer } from './support/server.ts';
import { approvedClient, codeFor, newUser, operator, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';
import { Browser } from './support/browser.ts';
import { receiver, until } from './support/webhook-receiver.ts';
import { eventually } from './support/eventually.ts';
import { clientsSetWebhook, secretsGenerate, type AdminContext } from '../src/admin/commands.ts';
import { CREDENTIAL_PATTERNS, credentialKind, generateCredential, type CredentialKind } from '../src/credentials/format.ts';
import { hashClientSecret } from '../src/clients/secrets.ts';

const ENV = { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', WEBHOOK_RETRY_BASE_SECONDS: '1', REFRESH_GRACE_SECONDS: '60', WEBHOOK_ALLOW_LOOPBACK: 'true', TRUST_PROXY: '1' };
const TOKEN = '/v2/auth/oauth2/token';
const INTROSPECT = '/v2/auth/oauth2/introspect';
const REVOKE = '/v2/auth/oauth2/revoke';
const REPORT = '/v2/auth/credentials/revoke';
const SCOPE = 'PROFILE_READ';

/** Each test reports from its own address (TRUST_PROXY=1: X-Forwarded-For decides), so the per-address limit is its own. */
let addresses = 0;
const newAddress = () => `203.0.113.${(addresses += 1)}`;

/** One character of the checksum changed. */
const flipped = (value: string) => value.slice(0, -1) + (value.endsWith('A') ? 'B' : 'A');

const MARKER = 'test-marker:';

/**
 * Redis's MONITOR on a socket of its own: each command's arguments to `onCommand`, in the order
 * Redis ran them. Not ioredis's monitor(): a command line that arrives with MONITOR's OK, likely
 * while other files use the same Redis, fails it ("Command queue state error").
 */
async function monitorCommands(url: string, onCommand: (args: string[]) => void): Promise<net.Socket> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port || 6379), hostname);
  await once(socket, 'connect');
  socket.setEncoding('utf8'); // MONITOR escapes what is not printable
  let pending = '';
  socket.on('data', (chunk: string) => {
    pending += chunk;
    for (let end = pending.indexOf('\r\n'); end >= 0; end = pending.indexOf('\r\n')) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 2);
      // +<time> [<db> <client>] "command" "argument" …
      if (line.startsWith('+') && line !== '+OK') onCommand([...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!));
    }
  });
  socket.write('MONITOR\r\n');
  return socket;
}

const isOfKind = (value: unknown, kind: CredentialKind) => typeof value === 'string' && CREDENTIAL_PATTERNS[kind].test(value) && credentialKind(value) === kind;

describe.each<Storage>(['redis', 'sql'])('leaked credentials (%s)', (storage) => {
  let server: TestServer;
  let ops: AdminContext;
  let monitor: net.Socket | undefined;
  /** Sends the markers (see reported()). */
  let markerClient: Redis | undefined;
  let restoreDriver = () => {};
  /** Token-store and secret-status reads seen (SQL queries, Redis commands), by what they touched. */
  const reads: string[] = [];
  /** Markers MONITOR has reported (see reported()). */
  const markers = new Set<string>();

  beforeAll(async () => {
    server = await startTestServer(storage, ENV, DELIVERING);
    ops = { ...operator(server), cipher: server.system.cipher, allowLoopback: true };
    // Every query of the driver (knex's and the prepared reads'), passed on unchanged.
    const query = pg.Client.prototype.query;
    restoreDriver = () => void (pg.Client.prototype.query = query);
    pg.Client.prototype.query = function watched(this: pg.Client, ...args: unknown[]) {
      const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string } | undefined)?.text ?? '');
      // Token artifacts and flights; a secret's status (not the client's record, which lists its hashes).
      if (/oidc_models|from "oauth_client_secrets"/.test(text)) reads.push(`sql: ${text.slice(0, 120)}`);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    if (server.redis) {
      const prefix = server.redis.prefix;
      const watched = new RegExp(`^${prefix}(AccessToken|RefreshToken|AuthorizationCode|Grant|flight|secret-revoked)`);
      markerClient = new Redis(server.redis.url);
      monitor = await monitorCommands(server.redis.url, (args) => {
        if (args[0]?.toLowerCase() === 'echo' && args[1]?.startsWith(MARKER)) markers.add(args[1]);
        else if (args.some((arg) => watched.test(arg))) reads.push(`redis: ${args.slice(0, 3).join(' ')}`);
      });
    }
  });
  afterAll(async () => {
    monitor?.destroy();
    markerClient?.disconnect();
    restoreDriver();
    await server?.close();
  });

  /**
   * Until MONITOR has reported every Redis command run so far: it reports them in the order Redis
   * ran them, a moment later, so a marker sent now arrives after them. (SQL queries are seen as sent.)
   */
  async function reported(): Promise<void> {
    if (!markerClient) return;
    const marker = `${MARKER}${randomUUID()}`;
    await markerClient.echo(marker);
    await eventually(() => expect(markers.has(marker), 'MONITOR reports the marker').toBe(true), { interval: 5 });
  }

  /** The store reads a step makes. */
  async function readsOf(step: () => Promise<unknown>): Promise<string[]> {
    await reported();
    reads.length = 0;
    await step();
    await reported();
    return [...reads];
  }

  const post = async (path: string, fields: Record<string, string>, client?: TestClient) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...fields, ...(client ? { client_id: client.client_id, client_secret: client.client_secret } : {}) }).toString(),
    });
    const text = await res.text(); // revocation answers 200 with no body
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  };
  const me = async (token: string) => (await fetch(`${server.url}/v2/me`, { headers: { authorization: `Bearer ${token}` } })).status;
  const check = async (token: string) => (await fetch(`${server.url}/v2/auth/check`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/me' } })).status;
  const report = async (body: unknown, address = newAddress(), type = 'application/json') => {
    const res = await fetch(`${server.url}${REPORT}`, { method: 'POST', headers: { 'content-type': type, 'x-forwarded-for': address }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    return { status: res.status, body: await res.text(), type: res.headers.get('content-type'), retryAfter: res.headers.get('retry-after'), cache: res.headers.get('cache-control') };
  };

  it('every credential issued is of its documented form, from the provider and the fast refresh', async () => {
    const client = await approvedClient(server, [SCOPE]);
    expect(isOfKind(client.client_secret, 'client_secret')).toBe(true);
    expect(isOfKind((await secretsGenerate(ops, client.client_id)).client_secret, 'client_secret')).toBe(true);
    const user = await newUser(server);
    const code = await codeFor(server, client, user, SCOPE);
    expect(isOfKind(code, 'authorization_code')).toBe(true);
    const issued = await post(TOKEN, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT }, client);
    expect(isOfKind(issued.body.access_token, 'access_token')).toBe(true);
    expect(isOfKind(issued.body.refresh_token, 'refresh_token')).toBe(true);
    // A refresh on the fast path (Redis) and through the provider (a query string hands it over).
    const fast = await post(TOKEN, { grant_type: 'refresh_token', refresh_token: String(issued.body.refresh_token) }, client);
    const slow = await post(`${TOKEN}?via=provider`, { grant_type: 'refresh_token', refresh_token: String(fast.body.refresh_token) }, client);
    for (const answer of [fast, slow]) {
      expect(answer.status).toBe(200);
      expect(isOfKind(answer.body.access_token, 'access_token')).toBe(true);
      expect(isOfKind(answer.body.refresh_token, 'refresh_token')).toBe(true);
    }
    expect(await me(String(slow.body.access_token))).toBe(200);
  });

  it('a malformed credential of ours is refused without a store read wherever a credential is accepted', async () => {
    const client = await approvedClient(server, [SCOPE]);
    const user = await newUser(server);
    const tokens = await tokensFor(server, client, user, SCOPE);
    const code = await codeFor(server, client, user, SCOPE);
    const overLong = (prefix: string) => `${prefix}${'A'.repeat(4000)}`;
    const badAccess = [flipped(tokens.access_token), tokens.access_token.slice(0, -1), `${tokens.access_token}0`, overLong('spat_'), tokens.refresh_token];
    const badRefresh = [flipped(tokens.refresh_token), tokens.refresh_token.slice(0, 30), overLong('sprt_'), tokens.access_token, code];
    const badCode = [flipped(code), `${code}A`, overLong('spac_'), tokens.refresh_token];

    // The watch sees reads: a well-formed unknown token is looked up (the control).
    expect(await readsOf(async () => expect(await me(generateCredential('access_token'))).toBe(401))).not.toEqual([]);
    for (const value of badAccess) {
      expect(await readsOf(async () => expect(await me(value)).toBe(401)), value).toEqual([]);
      expect(await readsOf(async () => expect(await check(value)).toBe(401)), value).toEqual([]);
    }
    for (const value of [...badAccess.slice(0, 4), ...badRefresh.slice(0, 3)]) {
      // The client's secret is checked (its status read), the token is not looked up.
      const seen = await readsOf(async () => {
        expect(await post(INTROSPECT, { token: value }, client)).toEqual({ status: 200, body: { active: false } });
        expect((await post(REVOKE, { token: value }, client)).status).toBe(200);
      });
      expect(seen.filter((r) => !/oauth_client_secrets|secret-revoked/.test(r)), value).toEqual([]);
    }
    for (const value of badRefresh) {
      const seen = await readsOf(async () => expect(await post(TOKEN, { grant_type: 'refresh_token', refresh_token: value }, client)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } }));
      expect(seen.filter((r) => !/oauth_client_secrets|secret-revoked/.test(r)), value).toEqual([]);
    }
    for (const value of badCode) {
      const seen = await readsOf(async () => expect(await post(TOKEN, { grant_type: 'authorization_code', code: value, redirect_uri: REDIRECT }, client)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } }));
      expect(seen.filter((r) => !/oauth_client_secrets|secret-revoked/.test(r)), value).toEqual([]);
    }
    // A malformed secret: refused, and no secret's status read (the right one is: the control).
    expect(await readsOf(() => post(INTROSPECT, { token: tokens.access_token }, client))).not.toEqual([]);
    for (const secret of [flipped(client.client_secret), client.client_secret.slice(0, 40), `${client.client_secret}x`, overLong('spcs_'), tokens.access_token]) {
      const seen = await readsOf(async () => {
        expect(await post(INTROSPECT, { token: tokens.access_token }, { ...client, client_secret: secret })).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
        expect(await post(TOKEN, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, { ...client, client_secret: secret })).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
      });
      expect(seen.filter((r) => /oauth_client_secrets|secret-revoked/.test(r)), secret).toEqual([]);
    }
    // Nothing was spent or changed: the real ones still work.
    expect(await me(tokens.access_token)).toBe(200);
    expect((await post(TOKEN, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT }, client)).status).toBe(200);
    expect((await post(TOKEN, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client)).status).toBe(200);
  });

  it('credentials issued before the format keep working: access and refresh tokens, codes, client secrets', async () => {
    const client = await approvedClient(server, [SCOPE]);
    const user = await newUser(server);
    const tokens = await tokensFor(server, client, user, SCOPE);
    const code = await codeFor(server, client, user, SCOPE);
    // The same artifacts under ids of the library's own form (43 characters of nanoid's alphabet, no prefix).
    const older = (model: string, id: string) => {
      const adapter = server.system.artifacts.adapterFor(model);
      return adapter.find(id).then(async (payload) => {
        const oldId = randomBytes(32).toString('base64url');
        await adapter.upsert(oldId, { ...payload!, jti: oldId }, 600);
        return oldId;
      });
    };
    const [oldAccess, oldRefresh, oldCode] = await Promise.all([older('AccessToken', tokens.access_token), older('RefreshToken', tokens.refresh_token), older('AuthorizationCode', code)]);
    expect(await me(oldAccess)).toBe(200);
    expect(await check(oldAccess)).toBe(200);
    expect(await post(INTROSPECT, { token: oldAccess }, client)).toMatchObject({ status: 200, body: { active: true } });
    const refreshed = await post(TOKEN, { grant_type: 'refresh_token', refresh_token: oldRefresh }, client);
    expect(refreshed.status).toBe(200);
    expect(isOfKind(refreshed.body.refresh_token, 'refresh_token')).toBe(true);
    expect((await post(TOKEN, { grant_type: 'authorization_code', code: oldCode, redirect_uri: REDIRECT }, client)).status).toBe(200);
    // A secret of the old form (base64url), stored as its hash, as before.
    const oldSecret = randomBytes(32).toString('base64url');
    await server.system.db('oauth_client_secrets').insert({ client_id: client.client_id, secret_hash: hashClientSecret(oldSecret) });
    await until('the old secret accepted', () => post(INTROSPECT, { token: String(refreshed.body.access_token) }, { ...client, client_secret: oldSecret }), (r) => r.status === 200);
  });

  it('revokes what it recognises at once, tells the app and the user, and answers alike whatever it found', async () => {
    const app = await receiver();
    try {
      const client = await approvedClient(server, [SCOPE], 'Leaky App');
      const signingSecret = (await clientsSetWebhook(ops, client.client_id, app.url)).signing_secret!;
      const user = await newUser(server);
      const [a, b] = [await tokensFor(server, client, user, SCOPE), await tokensFor(server, client, user, SCOPE)];
      const code = await codeFor(server, client, user, SCOPE);
      const second = (await secretsGenerate(ops, client.client_id)).client_secret;
      const leaked = [a.access_token, b.refresh_token, code, second];

      const answers = [
        await report({ credentials: [...leaked, 'garbage', generateCredential('access_token'), flipped(a.refresh_token), leaked[0]] }),
        await report({ credentials: [generateCredential('refresh_token')] }),
        await report({ credentials: ['not a credential at all'] }),
        await report({ credentials: leaked }), // found before, gone now
      ];
      for (const answer of answers) expect(answer).toEqual({ status: 202, body: '{"status":"accepted"}', type: 'application/json; charset=utf-8', retryAfter: null, cache: 'no-store' });

      // The access token is dead everywhere; its grant lives on (only that token was leaked).
      expect(await me(a.access_token)).toBe(401);
      expect(await check(a.access_token)).toBe(401);
      expect(await post(INTROSPECT, { token: a.access_token }, client)).toEqual({ status: 200, body: { active: false } });
      expect((await post(TOKEN, { grant_type: 'refresh_token', refresh_token: a.refresh_token }, client)).status).toBe(200);
      // The refresh token's grant is gone, with all its tokens.
      expect(await me(b.access_token)).toBe(401);
      expect(await post(TOKEN, { grant_type: 'refresh_token', refresh_token: b.refresh_token }, client)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      // The code is spent and its grant gone.
      expect(await post(TOKEN, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT }, client)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      // The leaked secret is refused; the client's other secret works.
      expect(await post(INTROSPECT, { token: 'x' }, { ...client, client_secret: second })).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
      expect(await post(INTROSPECT, { token: 'x' }, client)).toEqual({ status: 200, body: { active: false } });

      // The app is told, in signed webhooks that carry no credential.
      const events = await until('the credential.leaked events', () => app.events(), (e) => e.filter((x) => x.type === 'credential.leaked').length >= 4);
      for (const delivery of app.received) expect(() => new Webhook(signingSecret).verify(delivery.body, delivery.headers as Record<string, string>)).not.toThrow();
      for (const delivery of app.received) for (const value of leaked) expect(delivery.body).not.toContain(value);
      const leakedEvents = events.filter((e) => e.type === 'credential.leaked').map((e) => e.data);
      expect(leakedEvents).toHaveLength(4);
      const hint = (v: string) => `${v.slice(0, 5)}…${v.slice(-4)}`;
      expect(leakedEvents).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ client_id: client.client_id, kind: 'access_token', user_id: String(user.id), hint: hint(a.access_token), reported_at: expect.any(String) }),
          expect.objectContaining({ kind: 'refresh_token', user_id: String(user.id), hint: hint(b.refresh_token) }),
          expect.objectContaining({ kind: 'authorization_code', user_id: String(user.id), hint: hint(code) }),
          expect.objectContaining({ kind: 'client_secret', hint: hint(second), secret_id: expect.any(Number) }),
        ]),
      );
      expect(leakedEvents.find((e) => e.kind === 'client_secret')).not.toHaveProperty('user_id');
      await until('grant.revoked and secret.revoked', () => app.events(), (e) => e.filter((x) => x.type === 'grant.revoked' && x.data.reason === 'credential_leaked').length === 2 && e.some((x) => x.type === 'secret.revoked'));

      // The user sees it on Apps with access.
      const browser = new Browser();
      const login = await browser.get(`${server.url}/login?next=${encodeURIComponent('/settings/connected-apps')}`);
      await browser.submit(login, 'form[action="/login"]', { email: user.email, password: user.password });
      const page = await browser.get(`${server.url}/settings/connected-apps`);
      const notices = page.$('.leak-notice').map((_, el) => page.$(el).text().replace(/\s+/g, ' ').trim()).get();
      expect(notices).toHaveLength(3);
      for (const notice of notices) expect(notice).toMatch(/^A credential for Leaky App was reported as leaked and revoked on \S/);
      // Another user sees none.
      const other = await newUser(server);
      const otherBrowser = new Browser();
      await otherBrowser.submit(await otherBrowser.get(`${server.url}/login?next=${encodeURIComponent('/settings/connected-apps')}`), 'form[action="/login"]', { email: other.email, password: other.password });
      expect((await otherBrowser.get(`${server.url}/settings/connected-apps`)).$('.leak-notice')).toHaveLength(0);
    } finally {
      await app.close();
    }
  });

  it('bad reports are refused clearly, change nothing, and never answer 500', async () => {
    const client = await approvedClient(server, [SCOPE]);
    const user = await newUser(server);
    const tokens = await tokensFor(server, client, user, SCOPE);
    const live = tokens.access_token;
    const refusals: Array<[unknown, string?]> = [
      ['not json'],
      ['{"credentials": ['],
      [[live]],
      [{}],
      [{ credentials: live }],
      [{ credentials: [] }],
      [{ credentials: Array.from({ length: 101 }, (_, i) => (i === 0 ? live : generateCredential('access_token'))) }],
      [{ credentials: [live, 42] }],
      [{ credentials: [live, ''] }],
      [{ credentials: [live, 'x'.repeat(513)] }],
      [{ credentials: [live] }, 'text/plain'],
      [{ credentials: [live] }, 'application/x-www-form-urlencoded'],
    ];
    for (const [body, type] of refusals) {
      const answer = await report(body, newAddress(), type);
      expect(answer.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(JSON.parse(answer.body)).toMatchObject({ status: 'error', error: { code: 'invalid_request', message: expect.any(String) } });
    }
    const huge = await report({ credentials: [live, 'y'.repeat(70_000)] });
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.body)).toMatchObject({ status: 'error', error: { code: 'invalid_request' } });
    expect(await me(live)).toBe(200);
    // Other methods on the path: no 500.
    expect((await fetch(`${server.url}${REPORT}`)).status).toBe(405);
  });

  it('is limited per address: 429 with Retry-After past 30 a minute, other addresses unaffected', async () => {
    const address = newAddress();
    for (let i = 0; i < 30; i += 1) expect((await report({ credentials: ['x'] }, address)).status).toBe(202);
    const held = await report({ credentials: ['x'] }, address);
    expect(held.status).toBe(429);
    expect(Number(held.retryAfter)).toBeGreaterThan(0);
    expect(JSON.parse(held.body)).toMatchObject({ status: 'error', error: { code: 'rate_limited' } });
    expect((await report({ credentials: ['x'] })).status).toBe(202);
  });

  it('has one spelling: other spellings are 404 and revoke nothing, so none escapes the per-address limit', async () => {
    const client = await approvedClient(server, [SCOPE]);
    const user = await newUser(server);
    const issued = await post(TOKEN, { grant_type: 'authorization_code', code: await codeFor(server, client, user, SCOPE), redirect_uri: REDIRECT }, client);
    const token = String(issued.body.access_token);
    const live = async () => (await fetch(`${server.url}/v2/me`, { headers: { authorization: `Bearer ${token}` } })).status;
    for (const path of [`${REPORT}/`, REPORT.toUpperCase(), REPORT.replace('/revoke', '/Revoke'), `/${REPORT}`, REPORT.replace('/credentials/', '/credentials//'), `${REPORT}%2F`]) {
      const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': newAddress() }, body: JSON.stringify({ credentials: [token] }) });
      expect(res.status, path).toBe(404);
    }
    expect(await live()).toBe(200);
    expect((await report({ credentials: [token] })).status).toBe(202);
    expect(await live()).toBe(401);
  });
});
