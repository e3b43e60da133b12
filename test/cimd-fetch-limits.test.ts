// Fetching on request (issue 45 item 7; docs/agents.md): a request naming an unknown document URL
// as client_id makes this server fetch it, so fetches of documents never seen are limited per
// requesting address and per site, decided before fetching, and every failed fetch — not found,
// nobody listening, not JSON, too large, over a limit — is answered alike (the reason goes to the
// log). Documents are served by real HTTP servers on 127.0.0.1 (CIMD_ALLOW_LOOPBACK=true); the
// requesting address comes through X-Forwarded-For from a trusted proxy (TRUST_PROXY=1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { AGENT_REDIRECT, logSink, pkcePair, startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { Browser } from './support/browser.ts';
import { authorizeUrl } from './support/oauth.ts';
import { FAILED_FETCH_ANSWER_MS, UNUSABLE_DOCUMENT } from '../src/cimd/clients.ts';

const BASE_ENV = { CIMD_ALLOW_LOOPBACK: 'true', TRUST_PROXY: '1', RATE_LIMIT_AUTH_FAILURES: '1000', RATE_LIMIT_AUTH_FAILURES_PER_IP: '1000' };

/** The token endpoint's answer for a client_id, from `address` (the client is judged before the code). */
async function tokenAnswer(server: TestServer, clientId: string, address: string) {
  const started = Date.now();
  const res = await fetch(`${server.url}/v2/auth/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': address },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: 'nothing', redirect_uri: AGENT_REDIRECT, client_id: clientId, code_verifier: 'x'.repeat(43) }),
  });
  return { status: res.status, body: await res.text(), ms: Date.now() - started };
}

const isUnusable = (answer: { status: number; body: string }) => answer.status === 400 && JSON.parse(answer.body).error_description === UNUSABLE_DOCUMENT;
/** The client was found (its document fetched and used): the code is what is refused. */
const isFound = (answer: { status: number; body: string }) => JSON.parse(answer.body).error === 'invalid_grant';

describe('document fetches per requesting address (redis)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let docs: DocumentServer;
  const logged = logSink();
  beforeAll(async () => {
    [server, docs] = await Promise.all([
      startTestServer(storage, { ...BASE_ENV, CIMD_FETCHES_PER_ADDRESS_PER_MINUTE: '3', CIMD_FETCHES_PER_SITE_PER_MINUTE: '1000' }, { log: logged.log, cimdFailedAnswerMs: FAILED_FETCH_ANSWER_MS }),
      startDocumentServer(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), docs?.close()]);
  });

  // The tests of a server run at once: each has its own addresses and documents, and a refused
  // fetch is answered 3 s after it began (FAILED_FETCH_ANSWER_MS), a wait they need not take in turn.
  it.concurrent('one address gets at most its budget of fetches of unknown documents; another address is still served; known documents are not limited', async ({ expect }) => {
    const paths = ['/a1.json', '/a2.json', '/a3.json', '/a4.json', '/a5.json'];
    const answers = [];
    for (const path of paths.slice(0, 3)) answers.push(await tokenAnswer(server, docs.agent(path), '203.0.113.1'));
    // The budget spent: the two over it, at once.
    answers.push(...(await Promise.all(paths.slice(3).map((path) => tokenAnswer(server, docs.agent(path), '203.0.113.1')))));
    expect(answers.map(isFound)).toEqual([true, true, true, false, false]);
    expect(answers.slice(3).every(isUnusable)).toBe(true);
    // The document server received exactly the budget's fetches: nothing was sent for the rest.
    expect(paths.map((p) => docs.hits.get(p) ?? 0)).toEqual([1, 1, 1, 0, 0]);
    // Another address has its own budget.
    expect(isFound(await tokenAnswer(server, docs.url + '/a4.json', '203.0.113.2'))).toBe(true);
    expect(docs.hits.get('/a4.json')).toBe(1);
    // A document already fetched and used is no new fetch: the spent address is served.
    expect(isFound(await tokenAnswer(server, docs.url + '/a1.json', '203.0.113.1'))).toBe(true);
    server.system.cimd.forget();
    expect(isFound(await tokenAnswer(server, docs.url + '/a2.json', '203.0.113.1'))).toBe(true);
    expect(docs.hits.get('/a2.json')).toBe(2);
    // The reason of the refusal is in the log, with the address, and the requester heard none of it.
    expect(logged.lines).toContainEqual(expect.objectContaining({ msg: 'client_id metadata document refused', clientId: `${docs.url}/a5.json`, ip: '203.0.113.1', reason: expect.stringMatching(/203\.0\.113\.1 is over its budget of 3 document fetches a minute/) }));
  });

  it.concurrent('an address written by the client in X-Forwarded-For, left of what the trusted proxy added, does not make a new budget', async ({ expect }) => {
    const paths = ['/x1.json', '/x2.json', '/x3.json', '/x4.json'];
    const answers = [];
    for (const [i, path] of paths.entries()) answers.push(await tokenAnswer(server, docs.agent(path), `10.9.9.${i}, 203.0.113.77`));
    expect(answers.map(isFound)).toEqual([true, true, true, false]);
    expect(docs.hits.get('/x4.json')).toBeUndefined();
  });

  it.concurrent('every failed fetch is answered alike — not found, nobody listening, not JSON, too large, over the limit — and none sooner than the others', async ({ expect }) => {
    const cases: Array<[string, string]> = [
      ['not found', `${docs.url}/missing.json`],
      ['nobody listening', 'http://127.0.0.1:9/nobody.json'],
      ['not JSON', docs.serve('/not-json.json', { body: '<html>hello</html>' })],
      ['too large', docs.agent('/too-large.json', { padding: 'y'.repeat(6000) })],
      ['a status 500', docs.serve('/fails.json', { status: 500 })],
    ];
    // Each from an address of its own (within its budget), and meanwhile one over the limit.
    const failing = Promise.all(cases.map(([, clientId], i) => tokenAnswer(server, clientId, `198.51.100.${i + 1}`)));
    const spender = '198.51.100.99';
    for (const path of ['/s1.json', '/s2.json', '/s3.json']) expect(isFound(await tokenAnswer(server, docs.agent(path), spender))).toBe(true);
    const limited = await tokenAnswer(server, docs.agent('/s4.json'), spender);
    expect(docs.hits.get('/s4.json')).toBeUndefined();
    const all = [...(await failing), limited];
    for (const [i, answer] of all.entries()) {
      expect({ status: answer.status, body: answer.body }, cases[i]?.[0] ?? 'over the limit').toEqual({ status: 400, body: JSON.stringify({ error: 'invalid_client', error_description: UNUSABLE_DOCUMENT }) });
      expect(answer.ms, cases[i]?.[0] ?? 'over the limit').toBeGreaterThanOrEqual(FAILED_FETCH_ANSWER_MS - 50);
    }
    // The reasons, told apart, in the log only.
    const reasons = logged.lines.filter((l) => l.msg === 'client_id metadata document refused').map((l) => String(l.reason));
    for (const reason of [/status 404/, /the connection failed/, /is not JSON/, /larger than 5120 bytes/, /status 500/]) expect(reasons.some((r) => reason.test(r)), String(reason)).toBe(true);
  });

  it.concurrent('the authorization endpoint says the same on its error page, whatever the failure', async ({ expect }) => {
    const { challenge } = pkcePair();
    const page = async (clientId: string, address: string) => {
      const browser = new Browser();
      return browser.request(authorizeUrl(server.url, { client_id: clientId, redirect_uri: AGENT_REDIRECT, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }), { headers: { 'x-forwarded-for': address } });
    };
    const [missing, nobody] = await Promise.all([page(`${docs.url}/missing-too.json`, '192.0.2.1'), page('http://127.0.0.1:9/nobody-too.json', '192.0.2.2')]);
    expect(missing.status).toBe(400);
    expect(nobody.status).toBe(400);
    // The same page but for what differs per request (nonces, request ids).
    const text = (html: string) => html.replaceAll(/nonce="[^"]*"|[0-9a-f-]{36}/g, '');
    expect(text(missing.html)).toContain('invalid_client');
    expect(text(missing.html)).toEqual(text(nobody.html));
    expect(missing.$('body').text()).toContain(UNUSABLE_DOCUMENT);
  });
});

describe('document fetches per site (redis)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let docs: DocumentServer;
  beforeAll(async () => {
    [server, docs] = await Promise.all([startTestServer(storage, { ...BASE_ENV, CIMD_FETCHES_PER_ADDRESS_PER_MINUTE: '100', CIMD_FETCHES_PER_SITE_PER_MINUTE: '4' }), startDocumentServer()]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), docs?.close()]);
  });

  it('many addresses cannot make this server hammer one site: its budget stops the fetches, whoever asks', async () => {
    const paths = Array.from({ length: 7 }, (_, i) => `/site-${i}.json`);
    const answers = [];
    for (const [i, path] of paths.entries()) answers.push(await tokenAnswer(server, docs.agent(path), `203.0.113.${10 + i}`));
    expect(answers.map(isFound)).toEqual([true, true, true, true, false, false, false]);
    expect(paths.reduce((n, p) => n + (docs.hits.get(p) ?? 0), 0)).toBe(4);
    // A client seen before is no new fetch: still served once its cache time is over.
    server.system.cimd.forget();
    expect(isFound(await tokenAnswer(server, `${docs.url}/site-0.json`, '203.0.113.99'))).toBe(true);
  });
});
