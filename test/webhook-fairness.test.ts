// Fair delivery: one developer's slow endpoints (tarpits that accept and never answer) must not
// hold up other apps' events, such as a grant.revoked ("delete this user's data"). Deliveries are
// grouped by owner and pg-boss runs at most OWNER_CONCURRENCY of a group at a time; test events
// and clients per owner are limited, each with a clear refusal. Real server, queue and receivers.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERING, startTestServer, type TestServer } from './support/server.ts';
import { Browser, type Page } from './support/browser.ts';
import { newUser, operator } from './support/fixtures.ts';
import type { TestUser } from './support/oauth.ts';
import { clientsSetWebhook } from '../src/admin/commands.ts';
import { createClient } from '../src/clients/service.ts';
import { sendTestEvent, TEST_EVENTS_PER_HOUR } from '../src/clients/webhook-settings.ts';
import { ATTEMPT_TIMEOUT_MS } from '../src/webhooks/delivery.ts';
import { MAX_CLIENTS_PER_OWNER } from '../src/clients/service.ts';
import { admin as runAdmin } from './support/processes.ts';
import { expectRefusal } from './support/admin-cli.ts';
import { LimitError } from '../src/errors.ts';
import { eventually } from './support/eventually.ts';

const BASE = '/settings/developer/oauth-clients';
const ENV = { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', WEBHOOK_RETRY_BASE_SECONDS: '1', WEBHOOK_ALLOW_LOOPBACK: 'true' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

describe('fair delivery', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sql', ENV, DELIVERING);
  });
  afterAll(() => server?.close());

  const ops = () => ({ ...operator(server), cipher: server.system.cipher, allowLoopback: true });
  const newClient = async (ownerUserId: number, name: string) =>
    (await createClient(server.system, { name, kind: 'confidential', legacy: false, scopes: ['PROFILE_READ'], redirectUris: ['https://app.example.com/cb'], ownerUserId }, { actor: 'test' })).client.clientId;

  it("a developer's tarpits do not delay another app's event beyond its own attempt time", async () => {
    // A tarpit: accepts, reads, never answers (each attempt lasts the whole 5 s timeout).
    let open = 0;
    let mostOpen = 0;
    const sockets = new Set<net.Socket>();
    const tarpit = net.createServer((socket) => {
      sockets.add(socket);
      mostOpen = Math.max(mostOpen, ++open);
      socket.on('close', () => (open--, sockets.delete(socket)));
      socket.on('error', () => {});
    });
    const arrivals: number[] = [];
    const app = http.createServer((req, res) => req.resume().on('end', () => (arrivals.push(Date.now()), res.writeHead(204).end())));
    await Promise.all([new Promise<void>((r) => tarpit.listen(0, '127.0.0.1', r)), new Promise<void>((r) => app.listen(0, '127.0.0.1', r))]);
    try {
      const slow = await newUser(server, 'Tarpit Owner');
      const tarpitUrl = `http://127.0.0.1:${(tarpit.address() as AddressInfo).port}/hooks`;
      for (let i = 0; i < 6; i++) {
        const clientId = await newClient(slow.id, `Tarpit ${i}`);
        await clientsSetWebhook(ops(), clientId, tarpitUrl);
        await sendTestEvent(server.system, clientId, { actor: 'test' });
      }
      const victimOwner = await newUser(server, 'Victim Owner');
      const victim = await newClient(victimOwner.id, 'Victim App');
      await clientsSetWebhook(ops(), victim, `http://127.0.0.1:${(app.address() as AddressInfo).port}/hooks`);
      // A tarpit holds an attempt open; then every worker slot polls a few times (each polls twice a
      // second in tests): a broken per-owner limit would have given the tarpits more slots by then.
      await eventually(() => expect(open).toBeGreaterThan(0), { timeout: 5000 });
      await sleep(1500);

      const sent = Date.now();
      await sendTestEvent(server.system, victim, { actor: 'test' });
      await eventually(() => expect(arrivals.length).toBeGreaterThan(0), { timeout: 2 * ATTEMPT_TIMEOUT_MS }).catch(() => {}); // judged below
      const waited = arrivals.length ? arrivals[0]! - sent : Infinity;
      // Its own attempt (answered at once) plus a worker's poll, not a tarpit's 5 s.
      expect(waited).toBeLessThan(2500);
      // The tarpit owner never had more than one attempt open at a time.
      expect(mostOpen).toBe(1);
    } finally {
      for (const socket of sockets) socket.destroy();
      tarpit.close();
      app.closeAllConnections();
      app.close();
    }
  });

  it(`refuses more than ${TEST_EVENTS_PER_HOUR} test events per client per hour, clearly`, async () => {
    const owner = await newUser(server, 'Tester');
    const clientId = await newClient(owner.id, 'Chatty App');
    await clientsSetWebhook(ops(), clientId, 'http://127.0.0.1:9/hooks');
    for (let i = 0; i < TEST_EVENTS_PER_HOUR - 1; i++) await sendTestEvent(server.system, clientId, { actor: 'test' });
    const browser = await signIn(server.url, owner);
    const last = await post(browser, server.url, `${BASE}/${clientId}/webhook/test`, {});
    expect((await browser.get(last.location!)).$('p.notice').text()).toMatch(/Test event queued/);
    const refused = await post(browser, server.url, `${BASE}/${clientId}/webhook/test`, {});
    expect(refused.status).toBe(303);
    expect((await browser.get(refused.location!)).$('.alert').text()).toMatch(new RegExp(`at most ${TEST_EVENTS_PER_HOUR} test events per hour: try again later`, 'i'));
    const error = await sendTestEvent(server.system, clientId, { actor: 'test' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(LimitError);
    expect((error as LimitError).status).toBe(429);
    const sent = await server.pg.db('audit_events').where({ client_id: clientId, action: 'client.webhook_test_sent' }).count({ n: '*' });
    expect(Number(sent[0]!.n)).toBe(TEST_EVENTS_PER_HOUR);
    // Another client of the same owner has its own allowance.
    const other = await newClient(owner.id, 'Quiet App');
    await clientsSetWebhook(ops(), other, 'http://127.0.0.1:9/hooks');
    await expect(sendTestEvent(server.system, other, { actor: 'test' })).resolves.toMatch(/^msg_/);
  });

  it(`refuses a ${MAX_CLIENTS_PER_OWNER + 1}th client on the developer page, clearly`, async () => {
    const owner = await newUser(server, 'Collector');
    for (let i = 0; i < MAX_CLIENTS_PER_OWNER - 1; i++) await newClient(owner.id, `App ${i}`);
    const browser = await signIn(server.url, owner);
    const form = { name: 'One More', kind: 'confidential', redirect_uris: 'https://app.example.com/cb', scope: 'PROFILE_READ' };
    expect((await post(browser, server.url, BASE, form)).status).toBe(200); // the secret page of the 25th
    const refused = await post(browser, server.url, BASE, { ...form, name: 'Too Many' });
    expect(refused.status).toBe(429);
    expect(refused.$('main').text()).toMatch(new RegExp(`You have ${MAX_CLIENTS_PER_OWNER} clients, the most one account may register`));
    expect(await server.pg.db('oauth_clients').where('owner_user_id', owner.id).count({ n: '*' }).then((r) => Number(r[0]!.n))).toBe(MAX_CLIENTS_PER_OWNER);
  });

  it(`refuses a ${MAX_CLIENTS_PER_OWNER + 1}th client of an owner in the operator script too, with the same words (the client service counts)`, async () => {
    const owner = await newUser(server, 'Scripted');
    for (let i = 0; i < MAX_CLIENTS_PER_OWNER - 1; i++) await newClient(owner.id, `App ${i}`);
    const create = (name: string) => runAdmin(['--json', 'clients', 'create', '--name', name, '--redirect-uri', 'https://app.example.com/cb', '--scope', 'PROFILE_READ', '--owner', owner.email], { DATABASE_URL: server.pg.url });
    expect((await create('One More')).code).toBe(0);
    const refused = await create('Too Many');
    expectRefusal(refused, new RegExp(`^error: you have ${MAX_CLIENTS_PER_OWNER} clients, the most one account may register: delete one you no longer use first$`));
    expect(await server.pg.db('oauth_clients').where('owner_user_id', owner.id).count({ n: '*' }).then((r) => Number(r[0]!.n))).toBe(MAX_CLIENTS_PER_OWNER);
    // A client without an owner is not counted against anyone.
    expect((await runAdmin(['--json', 'clients', 'create', '--name', 'Operators App', '--redirect-uri', 'https://app.example.com/cb', '--scope', 'PROFILE_READ'], { DATABASE_URL: server.pg.url })).code).toBe(0);
  });
});
