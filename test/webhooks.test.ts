// Signed webhooks to apps over real HTTP, real PostgreSQL and real receivers on 127.0.0.1
// (WEBHOOK_ALLOW_LOOPBACK=true): every event type arrives signed with the client's own secret and
// verifies with the official `standardwebhooks` package as a receiver uses it; another app's
// delivery does not verify; retries keep the webhook-id, a restart loses nothing, the address rule
// holds in every mode (page, script, delivery time), and only a client's owner sets its webhook.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERING, startInstance, startTestServer, type AppInstance, type TestServer } from './support/server.ts';
import { createTestDatabase } from './support/services.ts';
import { copyMigratedDataDir } from './support/embedded-template.ts';
import { Browser, type Page } from './support/browser.ts';
import { tokenRequest, type TestUser } from './support/oauth.ts';
import { newUser, operator, REDIRECT, tokensFor } from './support/fixtures.ts';
import { admin as runAdmin } from './support/processes.ts';
import { clientsSetStatus, clientsSetWebhook as setWebhook, secretsGenerate, secretsRevoke, type AdminContext } from '../src/admin/commands.ts';
import { createClient } from '../src/clients/service.ts';
import { decideChange, editClient } from '../src/clients/changes.ts';
import { isPublicAddress, parseWebhookUrl } from '../src/webhooks/address-policy.ts';
import { receiver, until, type Received } from './support/webhook-receiver.ts';
import { postWebhook } from '../src/webhooks/delivery.ts';

const BASE = '/settings/developer/oauth-clients';
const ENV = { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', WEBHOOK_RETRY_BASE_SECONDS: '1', REFRESH_GRACE_SECONDS: '0', WEBHOOK_ALLOW_LOOPBACK: 'true' };
const PRODUCTION = { NODE_ENV: 'production', COOKIE_KEYS: 'a-production-cookie-key-of-32-chars!!', DATA_ENCRYPTION_KEYS: 'a-production-data-key-of-32-chars!!!' };
const LOOPBACK = { production: false, allowLoopback: true };

/** The operator scripts' commands as the server's configuration runs them: its cipher, loopback allowed. */
const ops = (server: { system: TestServer['system'] }, ctx: Partial<AdminContext> = {}): AdminContext =>
  ({ db: server.system.db, artifacts: server.system.artifacts, outbox: server.system.outbox, records: server.system.records, by: { actor: 'operator:test' }, cipher: server.system.cipher, allowLoopback: true, ...ctx });
/** clientsSetWebhook with the context above; returns the signing secret it made (or undefined). */
const clientsSetWebhook = async (ctx: AdminContext, clientId: string, url: string) => (await setWebhook(ctx, clientId, url)).signing_secret!;



/** Verifies a delivery the way an app would: the official `standardwebhooks` package, unmodified, with the app's secret. */
function verifySignature(secret: string, delivery: Received): boolean {
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>);
    return true;
  } catch (err) {
    if (err instanceof WebhookVerificationError) return false;
    throw err;
  }
}

async function signIn(base: string, user: TestUser): Promise<Browser> {
  const browser = new Browser();
  const login = await browser.get(`${base}/login`);
  expect((await browser.submit(login, 'form[action="/login"]', { email: user.email, password: user.password })).status).toBe(303);
  return browser;
}

async function post(browser: Browser, base: string, path: string, fields: Record<string, string>): Promise<Page> {
  const csrf = (await browser.get(`${base}${BASE}`)).$('input[name=csrf]').val() as string;
  return browser.request(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ csrf, ...fields }).toString() });
}

async function ownedClient(server: { system: Pick<TestServer['system'], 'db' | 'records'> }, ownerUserId: number, name = 'Hooked App') {
  const { client, secret } = await createClient(server.system, { name, kind: 'confidential', legacy: false, scopes: ['PROFILE_READ'], redirectUris: [REDIRECT], ownerUserId }, { actor: 'test' });
  return { client_id: client.clientId, client_secret: secret!.value };
}

describe('webhooks', () => {
  let server: TestServer;
  let dev: TestUser & { id: number };
  let other: TestUser & { id: number };
  beforeAll(async () => {
    server = await startTestServer('redis', ENV, DELIVERING);
    [dev, other] = await Promise.all([newUser(server, 'Dev'), newUser(server, 'Other')]);
  });
  afterAll(() => server?.close());

  it('no longer publishes a server-wide public key: each app has its own secret', async () => {
    expect((await fetch(`${server.url}/v2/auth/webhooks/public-key`)).status).toBe(404);
    expect(await server.pg.db.schema.hasTable('webhook_signing_keys')).toBe(false);
  });

  it("shows the app's signing secret once when the URL is first set, stores it only encrypted, and regenerates it with an overlap", async () => {
    const app = await receiver();
    try {
      const client = await ownedClient(server, dev.id, 'Secret App');
      const browser = await signIn(server.url, dev);
      const shown = await post(browser, server.url, `${BASE}/${client.client_id}/webhook`, { webhook_url: app.url });
      expect(shown.status).toBe(200);
      const first = shown.$('#secret').val() as string;
      expect(first).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      // Saving the URL again keeps the secret (and does not show it).
      expect((await post(browser, server.url, `${BASE}/${client.client_id}/webhook`, { webhook_url: app.url })).status).toBe(303);
      const page = await browser.get(`${server.url}${BASE}/${client.client_id}`);
      expect(page.html).not.toContain(first);
      const rows = await server.pg.db('webhook_secrets').where('client_id', client.client_id);
      expect(rows).toHaveLength(1);
      expect(rows[0].secret).toMatch(/^enc1:/);
      expect(JSON.stringify(rows)).not.toContain(first.slice(6));
      const audit = await server.pg.db('audit_events').where('client_id', client.client_id);
      expect(JSON.stringify(audit)).not.toContain(first.slice(6));

      // Regenerated on the page: both secrets sign during the overlap (two v1 signatures), then the new one.
      const again = await post(browser, server.url, `${BASE}/${client.client_id}/webhook/secret`, {});
      expect(again.status).toBe(200);
      const second = again.$('#secret').val() as string;
      expect(second).toMatch(/^whsec_/);
      expect(second).not.toBe(first);
      expect(again.$('main').text()).toMatch(/previous secret keeps signing for 24 hours/);
      expect((await post(browser, server.url, `${BASE}/${client.client_id}/webhook/test`, {})).status).toBe(303);
      await until('the test event', () => app.received.length, (n) => n >= 1);
      const signatures = (app.received[0]!.headers['webhook-signature'] as string).split(' ');
      expect(signatures).toHaveLength(2);
      for (const signature of signatures) expect(signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      expect(verifySignature(second, app.received[0]!)).toBe(true);
      expect(verifySignature(first, app.received[0]!)).toBe(true);
      // After the overlap only the new secret signs.
      await server.pg.db('webhook_secrets').where('client_id', client.client_id).whereNotNull('expires_at').update({ expires_at: server.pg.db.raw("now() - interval '1 second'") });
      expect((await post(browser, server.url, `${BASE}/${client.client_id}/webhook/test`, {})).status).toBe(303);
      await until('the second test event', () => app.received.length, (n) => n >= 2);
      expect((app.received[1]!.headers['webhook-signature'] as string).split(' ')).toHaveLength(1);
      expect(verifySignature(second, app.received[1]!)).toBe(true);
      expect(verifySignature(first, app.received[1]!)).toBe(false);
    } finally {
      await app.close();
    }
  });

  it("refuses app A's delivery replayed to app B: each app verifies with its own secret", async () => {
    const [appA, appB] = [await receiver(), await receiver()];
    try {
      const a = await ownedClient(server, dev.id, 'App A');
      const b = await ownedClient(server, other.id, 'App B');
      const secretA = await clientsSetWebhook(ops(server), a.client_id, appA.url);
      const secretB = await clientsSetWebhook(ops(server), b.client_id, appB.url);
      expect(secretA).not.toBe(secretB);
      const leaver = await newUser(server, 'Leaver of A');
      await clientsSetStatus(operator(server), a.client_id, 'approved');
      await tokensFor(server, a, leaver, 'PROFILE_READ');
      await clientsSetStatus(operator(server), a.client_id, 'suspended'); // grant.revoked for the leaver
      const events = await until('grant.revoked at A', appA.events, (e) => e.some((x) => x.type === 'grant.revoked'));
      const delivery = appA.received[events.findIndex((e) => e.type === 'grant.revoked')]!;
      expect(verifySignature(secretA, delivery)).toBe(true);
      // The developer of A posts the very bytes and headers to B's endpoint: B's check fails.
      // (Its signature headers: the connection's own, such as content-length, are fetch's to set.)
      const signed = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, String(delivery.headers[name])]));
      const replayed = await fetch(appB.url, { method: 'POST', headers: { 'content-type': 'application/json', ...signed }, body: delivery.body });
      expect(replayed.status).toBe(204);
      const atB = appB.received.at(-1)!;
      expect(atB.body).toBe(delivery.body);
      expect(verifySignature(secretB, atB)).toBe(false);
      expect(() => new Webhook(secretB).verify(atB.body, atB.headers as Record<string, string>)).toThrow(/No matching signature/);
    } finally {
      await appA.close();
      await appB.close();
    }
  });

  it("delivers every event type, in order, signed with the app's own secret", async () => {
    const app = await receiver();
    try {
      const client = await ownedClient(server, dev.id);
      const browser = await signIn(server.url, dev);
      const saved = await post(browser, server.url, `${BASE}/${client.client_id}/webhook`, { webhook_url: app.url });
      expect(saved.status, saved.$('.field-error').text()).toBe(200);
      const webhookSecret = saved.$('#secret').val() as string;

      await clientsSetStatus(operator(server), client.client_id, 'approved'); // client.status_changed
      const secret = await secretsGenerate(operator(server), client.client_id); // secret.generated
      await secretsRevoke(operator(server), client.client_id, String(secret.secret_id)); // secret.revoked
      const edit = await editClient(server.system, client.client_id, { scopes: ['PROFILE_READ', 'BOOKING_READ'], redirectUris: [REDIRECT] }, { actor: `user:${dev.id}` });
      await decideChange(server.system, edit.pending!.id, true, { actor: 'admin:test', reason: 'looks fine' }); // client.change_decided

      // A refresh token used twice: the library revokes the grant (refresh_token_replayed).
      const replayer = await newUser(server, 'Replayer');
      const tokens = await tokensFor(server, client, replayer, 'PROFILE_READ');
      const refresh = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client };
      expect((await tokenRequest(server.url, refresh)).status).toBe(200);
      expect((await tokenRequest(server.url, refresh)).status).toBe(400);

      // A user disconnects the app on "apps with access" (user_disconnected).
      const leaver = await newUser(server, 'Leaver');
      await tokensFor(server, client, leaver, 'PROFILE_READ');
      const leaverBrowser = await signIn(server.url, leaver);
      const page = await leaverBrowser.get(`${server.url}/settings/connected-apps`);
      const csrf = page.$('input[name=csrf]').first().val() as string;
      const revoked = await leaverBrowser.request(`${server.url}/settings/connected-apps/${client.client_id}/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf, confirm: 'yes' }).toString(),
      });
      expect(revoked.status).toBe(303);

      // Suspension ends the grant of every user who still has one (client_suspended).
      const stayer = await newUser(server, 'Stayer');
      await tokensFor(server, client, stayer, 'PROFILE_READ');
      await clientsSetStatus(operator(server), client.client_id, 'suspended');

      // The page's "Send test event".
      const tested = await post(browser, server.url, `${BASE}/${client.client_id}/webhook/test`, {});
      expect(tested.status).toBe(303);

      const events = await until('all events', app.events, (e) => e.length >= 9);
      // One client's events arrive one at a time, in the order they happened.
      expect(events.map((e) => `${e.type}${e.type === 'grant.revoked' ? `:${e.data.reason}` : ''}`)).toEqual([
        'client.status_changed',
        'secret.generated',
        'secret.revoked',
        'client.change_decided',
        'grant.revoked:refresh_token_replayed',
        'grant.revoked:user_disconnected',
        'client.status_changed',
        'grant.revoked:client_suspended',
        'webhook.test',
      ]);
      const byType = (type: string) => events.filter((e) => e.type === type);
      expect(byType('client.status_changed').map((e) => e.data)).toEqual([
        { client_id: client.client_id, from: 'pending', to: 'approved' },
        { client_id: client.client_id, from: 'approved', to: 'suspended' },
      ]);
      expect(byType('secret.generated')[0]!.data).toEqual({ client_id: client.client_id, secret_id: secret.secret_id });
      expect(byType('secret.revoked')[0]!.data).toEqual({ client_id: client.client_id, secret_id: secret.secret_id });
      expect(byType('client.change_decided')[0]!.data).toEqual({ client_id: client.client_id, change_id: edit.pending!.id, decision: 'approved', add_scopes: ['BOOKING_READ'], add_redirect_uris: [], reason: 'looks fine' });
      expect(byType('grant.revoked').map((e) => e.data).sort((a, b) => String(a.reason).localeCompare(String(b.reason)))).toEqual([
        { client_id: client.client_id, user_id: String(stayer.id), reason: 'client_suspended' },
        { client_id: client.client_id, user_id: String(replayer.id), reason: 'refresh_token_replayed' },
        { client_id: client.client_id, user_id: String(leaver.id), reason: 'user_disconnected' },
      ]);
      expect(byType('webhook.test')).toHaveLength(1);
      for (const delivery of app.received) {
        expect(verifySignature(webhookSecret, delivery)).toBe(true);
        const event = JSON.parse(delivery.body);
        expect(delivery.headers['webhook-id']).toBe(event.id);
        expect(event.id).toMatch(/^msg_/);
        expect(Date.parse(event.timestamp)).toBeGreaterThan(Date.now() - 120_000);
        expect(delivery.body).not.toContain(secret.client_secret);
      }
      // A changed byte fails verification: the check above can fail.
      expect(verifySignature(webhookSecret, { ...app.received[0]!, body: app.received[0]!.body.replace('}', ' }') })).toBe(false);
    } finally {
      await app.close();
    }
  });

  it('retries a failing app with back-off, with the same webhook-id, and lists the attempts on the page', async () => {
    const app = await receiver([500, 503]);
    try {
      const client = await ownedClient(server, dev.id, 'Flaky App');
      const webhookSecret = await clientsSetWebhook(ops(server), client.client_id, app.url);
      const browser = await signIn(server.url, dev);
      expect((await post(browser, server.url, `${BASE}/${client.client_id}/webhook/test`, {})).status).toBe(303);
      await until('three attempts', () => app.received.length, (n) => n >= 3);
      expect(new Set(app.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
      expect(new Set(app.received.map((r) => r.body)).size).toBe(1);
      for (const delivery of app.received) expect(verifySignature(webhookSecret, delivery)).toBe(true);
      const rows = await until('three recorded attempts', () => server.pg.db('webhook_deliveries').where('client_id', client.client_id).orderBy('id'), (r) => r.length >= 3);
      expect(rows.map((r) => [r.attempt, r.status_code, r.succeeded])).toEqual([[1, 500, false], [2, 503, false], [3, 204, true]]);
      const page = await browser.get(`${server.url}${BASE}/${client.client_id}`);
      const cells = page.$('table.deliveries tbody tr').map((_, tr) => page.$(tr).find('td').map((__, td) => page.$(td).text().trim()).get().join(' | ')).get();
      expect(cells).toHaveLength(3);
      expect(cells[0]).toMatch(/webhook\.test .*\| HTTP 204 \| 3$/);
      expect(cells[2]).toMatch(/webhook\.test .*\| HTTP 500 \| 1$/);
      const metrics = await (await fetch(`${server.metricsUrl}/metrics`)).text();
      expect(metrics).toMatch(/webhook_deliveries_total\{outcome="failed"\} [1-9]/);
      expect(metrics).toMatch(/webhook_deliveries_total\{outcome="delivered"\} [1-9]/);
    } finally {
      await app.close();
    }
  });

  it('does not follow redirects: a 3xx is a failed attempt', async () => {
    const target = await receiver();
    const redirecting = http.createServer((_req, res) => res.writeHead(307, { location: target.url }).end());
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    try {
      const url = new URL(`http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/hooks`);
      expect(await postWebhook(url, {}, '{}', LOOPBACK)).toEqual({ statusCode: 307 });
      expect(target.received).toHaveLength(0);
    } finally {
      redirecting.closeAllConnections();
      redirecting.close();
      await target.close();
    }
  });

  it('lets only the owner set a client\'s webhook, and refuses bad URLs without changing anything', async () => {
    const client = await ownedClient(server, dev.id, 'Guarded App');
    await clientsSetWebhook(ops(server), client.client_id, 'http://127.0.0.1:9/kept');
    const stored = async () => (await server.pg.db('oauth_clients').where('id', client.client_id).first()).webhook_url;
    const intruder = await signIn(server.url, other);
    for (const path of ['webhook', 'webhook/clear', 'webhook/test']) {
      const res = await post(intruder, server.url, `${BASE}/${client.client_id}/${path}`, { webhook_url: 'http://127.0.0.1:9/evil' });
      expect(res.status).toBe(404);
    }
    expect(await stored()).toBe('http://127.0.0.1:9/kept');

    const owner = await signIn(server.url, dev);
    for (const [bad, reason] of [
      [`https://app.example.com/${'a'.repeat(2000)}`, /at most 2000 characters/],
      ['https://user:pass@app.example.com/hooks', /user name or password/],
      ['https://app.example.com/hooks#frag', /fragment/],
      ['https://app.exa\tmple.com/hooks', /spaces or control characters/],
      ['ftp://app.example.com/hooks', /https/],
      ['not a url', /spaces|absolute URL/],
      ['', /enter the webhook URL/i],
    ] as const) {
      const res = await post(owner, server.url, `${BASE}/${client.client_id}/webhook`, { webhook_url: bad });
      expect(res.status, bad).toBe(400);
      expect(res.$('#webhook_url-error').text()).toMatch(reason);
    }
    expect(await stored()).toBe('http://127.0.0.1:9/kept');
    expect((await post(owner, server.url, `${BASE}/${client.client_id}/webhook/clear`, {})).status).toBe(303);
    expect(await stored()).toBeNull();
    const test = await post(owner, server.url, `${BASE}/${client.client_id}/webhook/test`, {});
    expect(test.status).toBe(303);
    expect((await owner.get(test.location!)).$('.alert').text()).toMatch(/set a webhook URL first/i);
  });

  it('sets and clears the URL with the operator script', async () => {
    const client = await ownedClient(server, dev.id, 'Scripted App');
    const env = { DATABASE_URL: server.pg.url, WEBHOOK_ALLOW_LOOPBACK: 'true' };
    const set = await runAdmin(['--json', 'clients', 'set-webhook', client.client_id, 'http://127.0.0.1:9/hooks'], env);
    expect(set.code, set.stderr).toBe(0);
    const first = JSON.parse(set.stdout);
    // "signing_secret" as CONTRACT 9 names it; "webhook_secret", its old name, the same value for one more release.
    expect(first).toEqual({ client_id: client.client_id, webhook_url: 'http://127.0.0.1:9/hooks', signing_secret: expect.stringMatching(/^whsec_/), webhook_secret: first.signing_secret });
    // Setting the URL again prints no secret; --new-secret makes (and prints) a new one.
    expect(JSON.parse((await runAdmin(['--json', 'clients', 'set-webhook', client.client_id, 'http://127.0.0.1:9/other'], env)).stdout)).toEqual({ client_id: client.client_id, webhook_url: 'http://127.0.0.1:9/other' });
    const rotated = await runAdmin(['clients', 'set-webhook', client.client_id, '--new-secret'], env);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toMatch(/^signing_secret: whsec_\S+ {2}\(shown only once\)$/m);
    expect(rotated.stdout).not.toContain('webhook_secret');
    expect(rotated.stdout).not.toContain(first.signing_secret);
    const both = await runAdmin(['clients', 'set-webhook', client.client_id], env);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/webhook URL, --new-secret or --clear/);
    // Without WEBHOOK_ALLOW_LOOPBACK, loopback is refused in development too.
    const refused = await runAdmin(['clients', 'set-webhook', client.client_id, 'http://127.0.0.1:5432/'], { DATABASE_URL: server.pg.url });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/public address/);
    const cleared = await runAdmin(['--json', 'clients', 'set-webhook', client.client_id, '--clear'], env);
    expect(JSON.parse(cleared.stdout).webhook_url).toBeNull();
    const audit = await server.pg.db('audit_events').where('client_id', client.client_id).whereLike('action', 'client.webhook_%').orderBy('id').pluck('action');
    expect(audit).toEqual(['client.webhook_set', 'client.webhook_set', 'client.webhook_secret_generated', 'client.webhook_cleared']);
  });
});

describe('the address rule in production', () => {
  let instance: AppInstance;
  let pg: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    pg = await createTestDatabase({ migrate: 'bare' });
    const { WEBHOOK_ALLOW_LOOPBACK: _refusedInProduction, ...env } = ENV;
    instance = await startInstance({ ...env, ...PRODUCTION, DATABASE_URL: pg.url }, { db: pg.db, ...DELIVERING });
  });
  afterAll(async () => {
    await instance?.close();
    await pg?.drop();
  });

  const internal = ['http://app.example.com/hooks', 'https://127.0.0.1/hooks', 'https://localhost/hooks', 'https://10.1.2.3/', 'https://192.168.0.10/', 'https://169.254.169.254/latest', 'https://100.64.0.1/', 'https://[::1]/', 'https://[::ffff:127.0.0.1]/', 'https://[fd00::1]/', 'https://0.0.0.0/', 'https://2130706433/', 'https://224.0.0.1/'];

  it('refuses internal addresses on the page', async () => {
    const user = await newUser({ system: instance.system } as TestServer);
    const client = await ownedClient(instance, user.id, 'Prod App');
    const browser = await signIn(instance.url, user);
    for (const url of internal) {
      const res = await post(browser, instance.url, `${BASE}/${client.client_id}/webhook`, { webhook_url: url });
      expect(res.status, url).toBe(400);
      expect(res.$('#webhook_url-error').text(), url).toMatch(/https|public address/);
    }
    // A public address literal is accepted (nothing is sent until an event happens): the secret is shown.
    expect((await post(browser, instance.url, `${BASE}/${client.client_id}/webhook`, { webhook_url: 'https://93.184.215.14/hooks' })).status).toBe(200);
  });

  it('refuses internal addresses in the operator script', async () => {
    const user = await newUser({ system: instance.system } as TestServer);
    const client = await ownedClient(instance, user.id, 'Prod Script App');
    const env = { ...PRODUCTION, DATABASE_URL: pg.url };
    for (const url of ['https://127.0.0.1/hooks', 'https://[::ffff:10.0.0.1]/']) {
      const res = await runAdmin(['clients', 'set-webhook', client.client_id, url], env);
      expect(res.code, url).toBe(1);
      expect(res.stderr).toMatch(/public address/);
    }
    expect((await pg.db('oauth_clients').where('id', client.client_id).first()).webhook_url).toBeNull();
  });

  it('refuses at delivery time a name that resolves to an internal address, and connects to the checked address', async () => {
    const app = await receiver();
    try {
      const port = new URL(app.url).port;
      const url = new URL(`http://hooks.example.test:${port}/hooks`);
      const toLoopback = async () => [{ address: '127.0.0.1', family: 4 }];
      const refused = await postWebhook(url, {}, '{}', { production: true, resolve: toLoopback });
      expect(refused.error).toMatch(/local or private address/);
      expect(app.received).toHaveLength(0);
      // Outside production too, unless loopback is allowed for development.
      expect((await postWebhook(url, {}, '{}', { production: false, resolve: toLoopback })).error).toMatch(/local or private address/);
      expect(app.received).toHaveLength(0);
      // Allowed: the connection goes to the address the lookup gave.
      expect(await postWebhook(url, {}, '{}', { ...LOOPBACK, resolve: toLoopback })).toEqual({ statusCode: 204 });
      expect(app.received).toHaveLength(1);
      // One internal address among public ones is enough to refuse.
      const mixed = async () => [{ address: '93.184.215.14', family: 4 }, { address: '10.0.0.1', family: 4 }];
      expect((await postWebhook(url, {}, '{}', { production: true, resolve: mixed })).error).toMatch(/local or private/);
    } finally {
      await app.close();
    }
  });

  it('classifies addresses', () => {
    for (const a of ['93.184.215.14', '8.8.8.8', '2606:4700::1111']) expect(isPublicAddress(a), a).toBe(true);
    for (const a of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.1.1', '100.64.1.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::', '::1', '::ffff:8.8.8.8', '::ffff:127.0.0.1', 'fe80::1', 'fc00::1', 'ff02::1', '64:ff9b::a00:1', '2002:a00:1::', '2001:db8::1', 'not-an-ip']) {
      expect(isPublicAddress(a), a).toBe(false);
    }
    expect(() => parseWebhookUrl('http://127.0.0.1:3000/hooks', LOOPBACK)).not.toThrow();
    expect(() => parseWebhookUrl('http://127.0.0.1:3000/hooks', { production: false })).toThrow(/public address/);
    expect(() => parseWebhookUrl('https://0x7f.1/hooks', { production: true })).toThrow(/public address/);
  });
});

describe('the address rule outside production', () => {
  let instance: AppInstance;
  let pg: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    pg = await createTestDatabase();
    const { WEBHOOK_ALLOW_LOOPBACK: _notSet, ...env } = ENV;
    instance = await startInstance({ ...env, DATABASE_URL: pg.url }, { db: pg.db, ...DELIVERING });
  });
  afterAll(async () => {
    await instance?.close();
    await pg?.drop();
  });

  it('refuses loopback, private and link-local addresses unless WEBHOOK_ALLOW_LOOPBACK, which allows loopback only', async () => {
    const user = await newUser({ system: instance.system } as TestServer);
    const client = await ownedClient(instance, user.id, 'Dev App');
    const browser = await signIn(instance.url, user);
    for (const url of ['http://127.0.0.1:5432/', 'http://169.254.169.254/latest/meta-data/', 'http://localhost:6379/', 'http://10.0.0.5/', 'http://[::1]:5432/']) {
      const res = await post(browser, instance.url, `${BASE}/${client.client_id}/webhook`, { webhook_url: url });
      expect(res.status, url).toBe(400);
      expect(res.$('#webhook_url-error').text(), url).toMatch(/public address/);
    }
    expect((await pg.db('oauth_clients').where('id', client.client_id).first()).webhook_url).toBeNull();
    // The operator script follows the same rule; with the development setting, loopback only.
    const ctx = ops(instance, { allowLoopback: false });
    await expect(setWebhook(ctx, client.client_id, 'http://127.0.0.1:5432/')).rejects.toThrow(/public address/);
    await expect(setWebhook({ ...ctx, allowLoopback: true }, client.client_id, 'http://169.254.169.254/')).rejects.toThrow(/public address/);
    await expect(setWebhook({ ...ctx, allowLoopback: true }, client.client_id, 'http://192.168.1.1/')).rejects.toThrow(/public address/);
    expect((await setWebhook({ ...ctx, allowLoopback: true }, client.client_id, 'http://127.0.0.1:5432/')).webhook_url).toBe('http://127.0.0.1:5432/');
    // A URL stored while allowed is refused again at delivery time by a server that does not allow it.
    await secretsGenerate(ctx, client.client_id);
    const [row] = await until('the refused attempt', () => pg.db('webhook_deliveries').where('client_id', client.client_id), (rows) => rows.length >= 1);
    expect(row.status_code).toBeNull();
    expect(row.error).toMatch(/public address/);
  });
});

describe('what a failed delivery records', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sql', ENV, DELIVERING);
  });
  afterAll(() => server?.close());

  it('records what went wrong in our words, never what answered', async () => {
    // Something that is not a web server, answering with its banner (as a database or cache would).
    const banner = 'internal-service-banner-7f3a version 9.9';
    const service = net.createServer((socket) => socket.once('data', () => socket.end(`-ERR ${banner}\r\n`)));
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    try {
      const user = await newUser(server, 'Prober');
      const client = await ownedClient(server, user.id, 'Probe App');
      await clientsSetWebhook(ops(server), client.client_id, `http://127.0.0.1:${(service.address() as AddressInfo).port}/`);
      const browser = await signIn(server.url, user);
      expect((await post(browser, server.url, `${BASE}/${client.client_id}/webhook/test`, {})).status).toBe(303);
      const [row] = await until('the failed attempt', () => server.pg.db('webhook_deliveries').where('client_id', client.client_id), (rows) => rows.length >= 1);
      expect(row.error).toBe('the answer was not a valid HTTP response');
      const page = await browser.get(`${server.url}${BASE}/${client.client_id}`);
      expect(page.$('table.deliveries').text()).toMatch(/the answer was not a valid HTTP response/);
      expect(page.html).not.toMatch(/internal-service-banner|Parse Error|ERR /);
    } finally {
      service.close();
    }
  });
});

describe('a restart between the change and the delivery', () => {
  it('loses nothing: the next instance delivers the queued event', async () => {
    const pg = await createTestDatabase();
    // A port with nobody listening yet: the app is down when the event happens.
    const probe = await receiver();
    const port = Number(new URL(probe.url).port);
    await probe.close();
    let first: AppInstance | undefined = await startInstance({ ...ENV, DATABASE_URL: pg.url }, { db: pg.db, ...DELIVERING });
    let second: AppInstance | undefined;
    let app: Awaited<ReturnType<typeof receiver>> | undefined;
    try {
      const user = await newUser({ system: first.system } as TestServer);
      const client = await ownedClient(first, user.id, 'Restarted App');
      const webhookSecret = await clientsSetWebhook(ops(first), client.client_id, `http://127.0.0.1:${port}/hooks`);
      await secretsGenerate({ db: pg.db, artifacts: first.system.artifacts, outbox: first.system.outbox, records: first.system.records, by: { actor: 'test' } }, client.client_id);
      await until('a failed attempt', () => pg.db('webhook_deliveries').where('client_id', client.client_id), (rows) => rows.length >= 1);
      await first.close();
      first = undefined;
      app = await receiver([], port);
      second = await startInstance({ ...ENV, DATABASE_URL: pg.url }, { db: pg.db, ...DELIVERING });
      const [event] = await until('the event after the restart', app.events, (e) => e.length >= 1);
      expect(event!.type).toBe('secret.generated');
      expect(verifySignature(webhookSecret, app.received[0]!)).toBe(true);
    } finally {
      await first?.close();
      await second?.close();
      await app?.close();
      await pg.drop();
    }
  });
});

describe('an instance without the delivery worker (SystemOverrides.run)', () => {
  it('queues the events of its changes and delivers none; an instance with the worker delivers them', async () => {
    const pg = await createTestDatabase();
    const app = await receiver();
    // Its own connections, so its queries are its own: a worker would poll for jobs twice a second.
    let quiet: AppInstance | undefined = await startInstance({ ...ENV, DATABASE_URL: pg.url }, { run: { webhookDelivery: false } });
    const polls: string[] = [];
    quiet.system.db.on('query', (q: { sql: string }) => /strict_fifo_heads/.test(q.sql) && polls.push(q.sql));
    let worker: AppInstance | undefined;
    try {
      expect(quiet.system.running()).not.toContain('webhook delivery');
      const user = await newUser({ system: quiet.system } as TestServer);
      const client = await ownedClient(quiet, user.id, 'Queued App');
      const ctx = ops(quiet);
      const webhookSecret = await clientsSetWebhook(ctx, client.client_id, app.url);
      await clientsSetStatus(ctx, client.client_id, 'approved');
      // Queued in the change's transaction, by the outbox's own queue (started on this need).
      const jobs = () => pg.db('pgboss.job').where({ name: 'webhook-deliveries' }).select('state', 'data');
      expect((await jobs()).map((j: { data: { type: string } }) => j.data.type)).toEqual(['client.status_changed']);
      worker = await startInstance({ ...ENV, DATABASE_URL: pg.url }, { db: pg.db, run: { webhookDelivery: true } });
      expect(worker.system.running()).toContain('webhook delivery');
      const [event] = await until('the event, delivered by the instance with the worker', app.events, (e) => e.length >= 1);
      expect(event!.data).toEqual({ client_id: client.client_id, from: 'pending', to: 'approved' });
      expect(verifySignature(webhookSecret, app.received[0]!)).toBe(true);
      // The first instance, up all along, never asked for a job and attempted nothing.
      expect(polls).toEqual([]);
      const attempts = async (instance: AppInstance) => (await instance.system.metrics.webhookDeliveries.get()).values.reduce((sum, v) => sum + v.value, 0);
      await until('the attempt counted', () => attempts(worker!), (n) => n === 1);
      expect(await attempts(quiet)).toBe(0);
    } finally {
      await quiet?.close();
      await worker?.close();
      quiet = worker = undefined;
      await app.close();
      await pg.drop();
    }
  });
});

describe('on the embedded PGlite', () => {
  // Starting the embedded database (WASM) is CPU work: it starts from a migrated copy (the first
  // start from an empty DATA_DIR is test/embedded.test.ts's subject).
  it('queues and delivers in the one process', { timeout: 90_000 }, async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'webhooks-pglite-'));
    await copyMigratedDataDir(dataDir);
    const app = await receiver();
    const instance = await startInstance({ ...ENV, DATA_DIR: dataDir }, DELIVERING);
    try {
      const user = await newUser({ system: instance.system } as TestServer);
      const client = await ownedClient(instance, user.id, 'Embedded App');
      const ctx = ops(instance);
      const webhookSecret = await clientsSetWebhook(ctx, client.client_id, app.url);
      await clientsSetStatus(ctx, client.client_id, 'approved');
      const [event] = await until('the event', app.events, (e) => e.length >= 1);
      expect(event!.data).toEqual({ client_id: client.client_id, from: 'pending', to: 'approved' });
      expect(verifySignature(webhookSecret, app.received[0]!)).toBe(true);
    } finally {
      await instance.close();
      await app.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('several instances', () => {
  it('deliver each event once, by one of them', async () => {
    const pg = await createTestDatabase();
    const app = await receiver();
    const instances = [await startInstance({ ...ENV, DATABASE_URL: pg.url }, { db: pg.db, ...DELIVERING }), await startInstance({ ...ENV, DATABASE_URL: pg.url }, { db: pg.db, ...DELIVERING })];
    try {
      const user = await newUser({ system: instances[0]!.system } as TestServer);
      const clients = [await ownedClient(instances[0]!, user.id, 'Multi A'), await ownedClient(instances[1]!, user.id, 'Multi B')];
      const ctx = ops(instances[0]!);
      for (const client of clients) await clientsSetWebhook(ctx, client.client_id, app.url);
      for (let i = 0; i < 4; i++) for (const client of clients) await secretsGenerate(ctx, client.client_id).then((s) => secretsRevoke(ctx, client.client_id, String(s.secret_id)));
      await until('16 events', app.events, (e) => e.length >= 16);
      // A duplicate would be a job delivered again: one client's jobs go strictly in order, so a
      // marker event queued after them arrives after any such duplicate of theirs.
      for (const client of clients) await clientsSetStatus(ctx, client.client_id, 'approved');
      const events = await until('the two markers', app.events, (e) => e.filter((x) => x.type === 'client.status_changed').length >= 2);
      expect(app.received).toHaveLength(18);
      expect(new Set(events.map((e) => e.id)).size).toBe(18);
      for (const client of clients) {
        const mine = events.filter((e) => e.data.client_id === client.client_id).map((e) => e.type);
        expect(mine).toEqual([...Array.from({ length: 4 }, () => ['secret.generated', 'secret.revoked']).flat(), 'client.status_changed']);
      }
    } finally {
      for (const instance of instances) await instance.close();
      await app.close();
      await pg.drop();
    }
  });
});
