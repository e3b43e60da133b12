// Client secrets that expire on schedule (issue 37 part 3, docs/secret-rotation.md): a lifetime at
// generation, rotation with overlap, an expired secret refused like a revoked one on the fast path
// and through the provider, the app told ahead and at the expiry (signed webhooks, verified with
// the `standardwebhooks` package), and a recently used secret revoked only when confirmed. Real
// HTTP, PostgreSQL and Redis, on both token stores. The servers run on a test clock
// (test/support/clock.ts) moved past an expiry instead of waiting for it; lifetimes are an hour,
// so real time never ends one mid-test. The operator's listing and rotation read expiry with the
// database's own now(): there a secret's row is made expired (expiredInDatabase).
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERING, startTestServer, type Storage, type TestServer } from './support/server.ts';
import { approvedClient, newUser, operator, tokensFor, type TestClient } from './support/fixtures.ts';
import { expectRefusal, useAdminCli } from './support/admin-cli.ts';
import type { CliResult } from './support/processes.ts';
import { receiver, until } from './support/webhook-receiver.ts';
import { testClock } from './support/clock.ts';
import { WEBHOOK_QUEUE } from '../src/webhooks/queue.ts';
import { clientsSetWebhook, secretsGenerate, secretsList, secretsRevoke, secretsRotate, type AdminContext } from '../src/admin/commands.ts';

const ENV = { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', WEBHOOK_RETRY_BASE_SECONDS: '1', REFRESH_GRACE_SECONDS: '0', WEBHOOK_ALLOW_LOOPBACK: 'true' };
const TOKEN = '/v2/auth/oauth2/token';
const INTROSPECT = '/v2/auth/oauth2/introspect';

const HOUR_MS = 3_600_000;

describe('secrets that expire (redis)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let ops: AdminContext;
  const clock = testClock();
  beforeAll(async () => {
    server = await startTestServer(storage, ENV, { clock, ...DELIVERING });
    ops = { ...operator(server), cipher: server.system.cipher, allowLoopback: true };
  });
  afterAll(() => server?.close());
  afterEach(() => clock.reset());

  /** The database's own time past the secret's expiry, as after waiting for it: its row's expires_at made past. */
  const expiredInDatabase = (id: number) => server.pg.db('oauth_client_secrets').where({ id }).update({ expires_at: server.pg.db.raw(`now() - interval '1 millisecond'`) });

  /** What the token endpoints answer this secret: introspection and a refresh, on the fast path, and through the provider (a query string hands a request over). */
  async function answers(client: TestClient, secret: string, refreshToken: string, accessToken: string) {
    const creds = { client_id: client.client_id, client_secret: secret };
    const post = (path: string, fields: Record<string, string>) =>
      fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ ...fields, ...creds }).toString() });
    const [fastIntrospect, providerIntrospect] = await Promise.all([post(INTROSPECT, { token: accessToken }), post(`${INTROSPECT}?via=provider`, { token: accessToken })]);
    // A wrong secret never spends the token; a right one rotates it: the caller passes a fresh one each time.
    const refresh = await post(TOKEN, { grant_type: 'refresh_token', refresh_token: refreshToken });
    return { fastIntrospect: fastIntrospect.status, providerIntrospect: providerIntrospect.status, refresh: refresh.status, refreshBody: (await refresh.json()) as Record<string, unknown> };
  }

  it('a secret given a lifetime works until it expires, then is refused like a revoked one, on the fast path and through the provider', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const user = await newUser(server);
    const made = await secretsGenerate(ops, client.client_id, { expiresIn: '1h' });
    expect(Date.parse(made.expires_at!) - Date.now()).toBeGreaterThan(HOUR_MS - 60_000);
    expect(Date.parse(made.expires_at!) - Date.now()).toBeLessThanOrEqual(HOUR_MS + 100);
    expect((await secretsList(ops, client.client_id)).secrets).toEqual([
      expect.objectContaining({ expires_at: null }),
      expect.objectContaining({ id: made.secret_id, expires_at: made.expires_at }),
    ]);

    let tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    const before = await answers(client, made.client_secret, tokens.refresh_token, tokens.access_token);
    expect(before).toMatchObject({ fastIntrospect: 200, providerIntrospect: 200, refresh: 200 });
    tokens = before.refreshBody as typeof tokens;

    clock.passed(made.expires_at!);
    const after = await answers(client, made.client_secret, tokens.refresh_token, tokens.access_token);
    expect(after).toMatchObject({ fastIntrospect: 401, providerIntrospect: 401, refresh: 401, refreshBody: { error: 'invalid_client' } });
    // The client's other secret is untouched, and the expired one is no longer listed.
    const other = await answers(client, client.client_secret, tokens.refresh_token, tokens.access_token);
    expect(other).toMatchObject({ fastIntrospect: 200, providerIntrospect: 200, refresh: 200 });
    await expiredInDatabase(made.secret_id);
    expect((await secretsList(ops, client.client_id)).secrets.map((s: { id: number }) => s.id)).not.toContain(made.secret_id);
  });

  it('rotates with overlap: both secrets work during the overlap, then the old one expires by itself', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const user = await newUser(server);
    const rotated = await secretsRotate(ops, client.client_id, { overlap: '1h' });
    expect(rotated.expires_at).toBeNull();
    const listed = (await secretsList(ops, client.client_id)).secrets;
    expect(listed).toEqual([
      expect.objectContaining({ id: rotated.previous_secret.secret_id, expires_at: rotated.previous_secret.expires_at }),
      expect.objectContaining({ id: rotated.secret_id, expires_at: null }),
    ]);

    let tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    for (const secret of [client.client_secret, rotated.client_secret]) {
      const during = await answers(client, secret, tokens.refresh_token, tokens.access_token);
      expect(during).toMatchObject({ fastIntrospect: 200, providerIntrospect: 200, refresh: 200 });
      tokens = during.refreshBody as typeof tokens;
    }
    // Two are active now: another rotation is refused until one is gone.
    await expect(secretsRotate(ops, client.client_id, { overlap: '1h' })).rejects.toThrow(/already has 2 active secrets/);

    clock.passed(rotated.previous_secret.expires_at);
    expect(await answers(client, client.client_secret, tokens.refresh_token, tokens.access_token)).toMatchObject({ fastIntrospect: 401, providerIntrospect: 401, refresh: 401 });
    expect(await answers(client, rotated.client_secret, tokens.refresh_token, tokens.access_token)).toMatchObject({ fastIntrospect: 200, refresh: 200 });
    // The expired one does not count against the two: rotating again works.
    await expiredInDatabase(rotated.previous_secret.secret_id);
    expect((await secretsRotate(ops, client.client_id, { overlap: '1h' })).previous_secret.secret_id).toBe(rotated.secret_id);
  });

  it('an overlap of 0 retires the old secret at once, on every path', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const user = await newUser(server);
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    const rotated = await secretsRotate(ops, client.client_id, { overlap: '0s' });
    expect(await answers(client, client.client_secret, tokens.refresh_token, tokens.access_token)).toMatchObject({ fastIntrospect: 401, providerIntrospect: 401, refresh: 401 });
    expect(await answers(client, rotated.client_secret, tokens.refresh_token, tokens.access_token)).toMatchObject({ fastIntrospect: 200, refresh: 200 });
  });

  it('revokes a secret used in the last 10 minutes only when confirmed, saying when it was used', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const second = await secretsGenerate(ops, client.client_id);
    const user = await newUser(server);
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    expect((await answers(client, client.client_secret, tokens.refresh_token, tokens.access_token)).fastIntrospect).toBe(200);
    await server.system.secretUses.flush();
    const [first] = (await secretsList(ops, client.client_id)).secrets as Array<{ id: number; last_used_at: string }>;
    expect(first!.last_used_at).not.toBeNull();
    await expect(secretsRevoke(ops, client.client_id, String(first!.id))).rejects.toThrow(new RegExp(`last used ${first!.last_used_at}.*--force`));
    expect((await secretsList(ops, client.client_id)).secrets).toHaveLength(2);
    // Never used: no confirmation needed.
    expect(await secretsRevoke(ops, client.client_id, String(second.secret_id))).toEqual({ secret_id: second.secret_id, revoked: true });
    await secretsGenerate(ops, client.client_id);
    expect(await secretsRevoke(ops, client.client_id, String(first!.id), { force: true })).toEqual({ secret_id: first!.id, revoked: true });
  });

  it('tells the app ahead of an expiry and when it happens, once each, signed', async () => {
    const app = await receiver();
    try {
      const client = await approvedClient(server, ['PROFILE_READ']);
      const signingSecret = (await clientsSetWebhook(ops, client.client_id, app.url)).signing_secret!;
      const made = await secretsGenerate(ops, client.client_id, { expiresIn: '1h' });
      const sweep = () => server.system.sweepSecretExpiry();
      expect((await sweep()).expiring).toBeGreaterThanOrEqual(1);
      clock.passed(made.expires_at!);
      expect((await sweep()).expired).toBeGreaterThanOrEqual(1);
      expect(await sweep()).toEqual({ expiring: 0, expired: 0 });

      const mine = () => app.received.map((r) => ({ ...r, event: JSON.parse(r.body) as { type: string; data: Record<string, unknown> } })).filter((r) => r.event.data.secret_id === made.secret_id);
      const got = await until('secret.expiring and secret.expired', mine, (list) => list.filter((r) => r.event.type !== 'secret.generated').length >= 2);
      // Every delivery job of the client done: nothing more can arrive, a duplicate would be here.
      const jobs = () => server.pg.db('pgboss.job').where('name', WEBHOOK_QUEUE).whereRaw(`data->>'clientId' = ?`, [client.client_id]).pluck('state');
      await until('every delivery job of the client completed', jobs, (states) => states.length > 0 && states.every((state) => state === 'completed'));
      expect(mine().map((r) => r.event.type)).toEqual(['secret.generated', 'secret.expiring', 'secret.expired']);
      expect(got.find((r) => r.event.type === 'secret.expiring')!.event.data).toEqual({ client_id: client.client_id, secret_id: made.secret_id, expires_at: made.expires_at });
      expect(got.find((r) => r.event.type === 'secret.expired')!.event.data).toEqual({ client_id: client.client_id, secret_id: made.secret_id, expired_at: made.expires_at });
      for (const delivery of got) expect(() => new Webhook(signingSecret).verify(delivery.body, delivery.headers as Record<string, string>)).not.toThrow();
    } finally {
      await app.close();
    }
  });
});

describe('durations and refusals of the secret scripts', () => {
  const cli = useAdminCli();
  const ok = (res: CliResult) => {
    expect(res.code, res.stderr).toBe(0);
    return JSON.parse(res.stdout);
  };

  it('refuses durations that are malformed, zero where not allowed, or too long, changing nothing', async () => {
    const client = ok(await cli.json('clients', 'create', '--name', 'App', '--redirect-uri', 'https://app.example/cb', '--scope', 'PROFILE_READ'));
    const secrets = async () => ok(await cli.json('secrets', 'list', client.client_id)).secrets;
    const before = await secrets();
    for (const bad of ['-1h', '0s', '731d', '1w', 'abc', '', '1.5h', '10 d', '99999999d']) {
      expectRefusal(await cli.json('secrets', 'generate', client.client_id, '--expires-in', bad), /--expires-in must be/);
    }
    for (const bad of ['8d', '-1s', '1y', '']) expectRefusal(await cli.json('secrets', 'rotate', client.client_id, '--overlap', bad), /--overlap must be/);
    expectRefusal(await cli.json('secrets', 'rotate', client.client_id), /--overlap/);
    expect(await secrets()).toEqual(before);

    const made = ok(await cli.json('secrets', 'generate', client.client_id, '--expires-in', '90d'));
    expect(Math.round((Date.parse(made.expires_at) - Date.now()) / 86_400_000)).toBe(90);
    // Two active: rotation is refused, nothing changes.
    expectRefusal(await cli.json('secrets', 'rotate', client.client_id, '--overlap', '1h'), /already has 2 active secrets/);
    expect((await secrets()).map((s: { expires_at: string | null }) => s.expires_at)).toEqual([null, made.expires_at]);

    const pub = ok(await cli.json('clients', 'create', '--name', 'Public', '--redirect-uri', 'https://app.example/cb', '--scope', 'PROFILE_READ', '--public'));
    expectRefusal(await cli.json('secrets', 'rotate', pub.client_id, '--overlap', '1h'), /public client has no secrets/);
    expectRefusal(await cli.json('secrets', 'rotate', 'no-such-client', '--overlap', '1h'), /no client/);
  });

  it('rotates from the script: the new secret once, the old one expiring after the overlap', async () => {
    const client = ok(await cli.json('clients', 'create', '--name', 'App', '--redirect-uri', 'https://app.example/cb', '--scope', 'PROFILE_READ'));
    const rotated = ok(await cli.json('secrets', 'rotate', client.client_id, '--overlap', '7d'));
    expect(rotated).toEqual({ secret_id: expect.any(Number), client_secret: expect.any(String), expires_at: null, previous_secret: { secret_id: client.secret_id, expires_at: expect.any(String) } });
    expect(Math.round((Date.parse(rotated.previous_secret.expires_at) - Date.now()) / 3_600_000)).toBe(7 * 24);
  });
});
