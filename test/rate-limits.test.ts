// Abuse limits that stop attackers and never legitimate users: failures are held back where they
// come from (claimed client id and address), a client's own authenticated volume is its only
// budget (429 + Retry-After + RFC body); sign-ins past the limits solve a proof of work, never a block.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { CPU_BOUND_TEST_MS } from './support/timeouts.ts';
import { Browser, type Page } from './support/browser.ts';
import { authorizeUrl } from './support/oauth.ts';
import { approvedClient, codeFor, newUser, operator, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';
import { solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { clientsCreate, clientsSetRateLimit, clientsSetStatus, clientsShow } from '../src/admin/commands.ts';


async function tokenFrom(base: string, ip: string, fields: Record<string, string> | string, path = '/v2/auth/oauth2/token', headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip, ...headers },
    body: typeof fields === 'string' ? fields : new URLSearchParams(fields),
  });
  const text = await res.text();
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    policy: res.headers.get('ratelimit-policy'),
    rateLimit: res.headers.get('ratelimit'),
    body: (text.startsWith('{') ? JSON.parse(text) : text) as Record<string, unknown>,
  };
}

describe.each<Storage>(['redis', 'sql'])('rate limits (%s storage)', (storage) => {
  let server: TestServer;
  let a: TestClient;
  let b: TestClient;
  let user: Awaited<ReturnType<typeof newUser>>;

  beforeAll(async () => {
    server = await startTestServer(storage, {
      TRUST_PROXY: 'true', // lets the tests speak from several IP addresses
      RATE_LIMIT_AUTH_FAILURES: '3',
      RATE_LIMIT_AUTH_FAILURES_PER_IP: '200',
      RATE_LIMIT_AUTH_MAX_DELAY_SECONDS: '8',
      RATE_LIMIT_TOKEN_PER_MINUTE_PER_CLIENT: '40',
      RATE_LIMIT_REFRESH_PER_MINUTE_PER_USER: '3',
      RATE_LIMIT_SIGNIN_FREE_FAILURES: '2',
      RATE_LIMIT_SIGNIN_FAILURES_PER_HOUR_PER_IP: '20',
      // Small proofs of work, so that the tests can solve hundreds (the defaults: 2000 up to 32000).
      RATE_LIMIT_SIGNIN_CHALLENGE_WORK: '2',
      RATE_LIMIT_SIGNIN_CHALLENGE_MAX_WORK: '16',
    });
    [a, b] = await Promise.all([approvedClient(server, ['PROFILE_READ'], 'App A'), approvedClient(server, ['PROFILE_READ'], 'App B')]);
    user = await newUser(server);
  });
  afterAll(() => server?.close());

  const exchange = async (ip: string, client: TestClient, secret = client.client_secret) =>
    tokenFrom(server.url, ip, { grant_type: 'authorization_code', code: await codeFor(server, client, user, 'PROFILE_READ'), redirect_uri: REDIRECT, client_id: client.client_id, client_secret: secret });
  const junk = (ip: string, client_id: string, client_secret = 'wrong') => tokenFrom(server.url, ip, { grant_type: 'refresh_token', refresh_token: 'x', client_id, client_secret });

  it('never refuses correct credentials because of failures: 100 wrong secrets for A, then A and B from the same address', async () => {
    const ip = '198.51.100.1';
    const answers = [];
    for (let i = 0; i < 100; i++) answers.push(await junk(ip, a.client_id));
    expect(answers.slice(0, 3).map((r) => r.status)).toEqual([401, 401, 401]);
    // Past the limit, failures are held back with a growing Retry-After (1, 2, 4, 8, 8 … seconds).
    expect(answers.slice(3, 8).map((r) => [r.status, r.retryAfter])).toEqual([[429, '1'], [429, '2'], [429, '4'], [429, '8'], [429, '8']]);
    expect(answers[99]).toMatchObject({ status: 429, body: { error: 'slow_down', error_description: expect.stringContaining('retry after') } });

    expect((await exchange(ip, b)).status).toBe(200);
    expect((await exchange(ip, a)).status).toBe(200);
    // …and the wrong secret is still held back.
    expect((await junk(ip, a.client_id)).status).toBe(429);
  });

  it('answers an unknown client id exactly as a wrong secret, held back or not', async () => {
    const unknown = [];
    const wrong = [];
    for (let i = 0; i < 6; i++) {
      unknown.push(await junk('198.51.100.3', 'ffffffffffffffffffffffffffffffff', 's'));
      wrong.push(await junk('198.51.100.4', a.client_id, 's'));
    }
    expect(unknown.map((r) => r.status)).toEqual([401, 401, 401, 429, 429, 429]);
    expect(unknown).toEqual(wrong);
  });

  it("does not let junk naming A's public id spend A's budget", async () => {
    for (let i = 0; i < 60; i++) {
      const res = await junk(`203.0.113.${i % 20}`, a.client_id, i % 2 ? 'wrong' : '');
      expect([400, 401, 429]).toContain(res.status);
    }
    // A's own authenticated requests (a junk refresh token, the right secret) are its only budget.
    for (let i = 0; i < 5; i++) expect((await junk('203.0.113.1', a.client_id, a.client_secret)).body.error).toBe('invalid_grant');
  });

  it("refuses an authenticated client only over its own budget, which an operator can set per client", async () => {
    const created = await clientsCreate(operator(server), { name: 'Busy App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    expect((await clientsSetRateLimit(operator(server), created.client_id, '3')).token_requests_per_minute).toBe(3);
    expect((await clientsShow(operator(server), created.client_id)).token_requests_per_minute).toBe(3);
    const busy = (ip: string) => junk(ip, created.client_id, created.client_secret!);
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push(await busy(`192.0.2.${i}`)); // from anywhere: the budget is the client's
    expect(statuses.map((r) => r.status)).toEqual([400, 400, 400, 429, 429]);
    expect(Number(statuses[3]!.retryAfter)).toBeGreaterThan(0);
    expect(Number(statuses[3]!.retryAfter)).toBeLessThanOrEqual(60);
    // Another client is not affected, nor is the default budget of 40 hit by B.
    expect((await junk('192.0.2.1', b.client_id, b.client_secret)).body.error).toBe('invalid_grant');
    expect((await clientsSetRateLimit(operator(server), created.client_id, 'default')).token_requests_per_minute).toBe('default');
  });

  it("budgets a public client per address, by the requests the provider accepted: nobody can spend another app user's budget", async () => {
    const created = await clientsCreate(operator(server), { name: 'Mobile App', redirectUri: ['com.example.mobile:/cb'], scope: ['PROFILE_READ'], public: true });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    await clientsSetRateLimit(operator(server), created.client_id, '2');
    const id = created.client_id;
    // Accepted (a public client may revoke and introspect; junk is answered 200): these spend it.
    const revoke = (ip: string) => tokenFrom(server.url, ip, { token: 'x', client_id: id }, '/v2/auth/oauth2/revoke');
    expect([(await revoke('192.0.2.50')).status, (await revoke('192.0.2.50')).status, (await revoke('192.0.2.50')).status]).toEqual([200, 200, 429]);
    expect((await revoke('192.0.2.51')).status).toBe(200);
    // Refused (no secret to check: nothing authenticated): failures, held back past the limit of
    // 3, and never the budget of that address's accepted requests.
    const refresh = (ip: string, headers: Record<string, string> = {}) =>
      tokenFrom(server.url, ip, { grant_type: 'refresh_token', refresh_token: 'x', client_id: id }, undefined, headers);
    const refused = [];
    for (let i = 0; i < 3; i++) refused.push((await refresh('192.0.2.52')).status, (await refresh('192.0.2.52', { 'OAuth-Client-Attestation-PoP': 'x' })).status);
    expect(refused.slice(0, 3)).toEqual([400, 400, 400]);
    expect(refused.slice(3)).toEqual([429, 429, 429]);
    expect((await revoke('192.0.2.52')).status).toBe(200);
  });

  it("spends a client's budget only on requests its secret authenticated, whatever the provider refuses after naming the client", async () => {
    const created = await clientsCreate(operator(server), { name: 'Targeted App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    await clientsSetRateLimit(operator(server), created.client_id, '5');
    const c = { client_id: created.client_id, client_secret: created.client_secret! };
    const tokens = await tokensFor(server, c, user, 'PROFILE_READ'); // 1 of 5
    const id = c.client_id;
    const basic = (user: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}` });
    const refresh = `grant_type=refresh_token&refresh_token=junk&client_id=${id}`;
    // Every way to be refused once the provider has looked the client up, without its secret, on
    // each endpoint: attestation headers (the library names the client, then refuses them with
    // a 400), DPoP, malformed and duplicated parameters, a missing or wrong secret.
    const attempts: [string, string, Record<string, string>][] = [];
    for (const [path, body] of [['token', refresh], ['introspect', `token=junk&client_id=${id}`], ['revoke', `token=junk&client_id=${id}`]] as const) {
      attempts.push(
        [path, body, { 'OAuth-Client-Attestation-PoP': 'x' }],
        [path, body, { 'OAuth-Client-Attestation': 'x' }],
        [path, body, { 'OAuth-Client-Attestation': 'x.y.z', 'OAuth-Client-Attestation-PoP': 'x.y.z', DPoP: 'x' }],
        [path, body, { DPoP: 'x' }],
        [path, body, {}],
        [path, `${body}&client_secret=`, {}],
        [path, `${body}&client_secret=wrong`, { 'OAuth-Client-Attestation-PoP': 'x' }],
        [path, `${body}&client_id=${id}`, {}],
        [path, body.replace(`client_id=${id}`, ''), basic(id, 'wrong')],
        [path, body.replace(`client_id=${id}`, ''), { ...basic(id, 'wrong'), 'OAuth-Client-Attestation-PoP': 'x' }],
      );
    }
    attempts.push(['token', `client_id=${id}&grant_type=nonsense`, {}], ['token', `client_id=${id}`, { 'OAuth-Client-Attestation-PoP': 'x' }]);
    for (const [path, body, headers] of attempts) {
      for (let i = 0; i < 6; i++) {
        const res = await tokenFrom(server.url, '203.0.113.77', body, `/v2/auth/oauth2/${path}`, headers);
        expect([400, 401, 429], `${path} ${body} ${JSON.stringify(headers)}: ${JSON.stringify(res.body)}`).toContain(res.status);
      }
    }
    // The client's own requests, from its address, are served: its budget is untouched.
    const refreshed = await tokenFrom(server.url, '192.0.2.80', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...c });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    const seen = await tokenFrom(server.url, '192.0.2.80', { token: String(refreshed.body.access_token), ...c }, '/v2/auth/oauth2/introspect');
    expect(seen).toMatchObject({ status: 200, body: { active: true } });
    expect((await tokenFrom(server.url, '192.0.2.80', { token: String(refreshed.body.refresh_token), ...c }, '/v2/auth/oauth2/revoke')).status).toBe(200);
  });

  it('tells an authenticated client its budget on every answer (RateLimit-Policy, RateLimit), on the fast path and through the provider; never another client\'s count', async () => {
    const created = await clientsCreate(operator(server), { name: 'Counted App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    await clientsSetRateLimit(operator(server), created.client_id, '6');
    const app: TestClient = { client_id: created.client_id, client_secret: created.client_secret! };
    const remaining = (r: { rateLimit: string | null }) => Number(/^"client";r=(\d+);t=(\d+)$/.exec(r.rateLimit ?? '')?.[1]);
    const { access_token, refresh_token } = await tokensFor(server, app, user, 'PROFILE_READ'); // the code exchange: 1
    const ip = '192.0.2.60';
    const answers = [
      await tokenFrom(server.url, ip, { token: access_token, ...app }, '/v2/auth/oauth2/introspect'), // fast path: 2
      await tokenFrom(server.url, ip, { token: 'junk', ...app }, '/v2/auth/oauth2/introspect'), // the provider: 3
      await tokenFrom(server.url, ip, { grant_type: 'refresh_token', refresh_token, ...app }), // fast path: 4
      await tokenFrom(server.url, ip, { grant_type: 'refresh_token', refresh_token: 'junk', ...app }), // the provider, refused: 5
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 400]);
    for (const r of answers) {
      expect(r.policy).toBe('"client";q=6;w=60');
      expect(r.rateLimit).toMatch(/^"client";r=\d+;t=([1-9]|[1-5][0-9]|60)$/);
    }
    expect(answers.map(remaining)).toEqual([4, 3, 2, 1]);
    // Another client at full speed leaves this one's count as it was.
    for (let i = 0; i < 10; i++) await tokenFrom(server.url, ip, { token: 'junk', ...b }, '/v2/auth/oauth2/introspect');
    const sixth = await tokenFrom(server.url, ip, { token: 'junk', ...app }, '/v2/auth/oauth2/introspect');
    expect([sixth.status, remaining(sixth)]).toEqual([200, 0]);
    // Over it: 429 with Retry-After, and the same fields saying nothing is left.
    const over = await tokenFrom(server.url, ip, { token: 'junk', ...app }, '/v2/auth/oauth2/introspect');
    expect(over).toMatchObject({ status: 429, policy: '"client";q=6;w=60', body: { error: 'slow_down' } });
    expect(over.rateLimit).toBe(`"client";r=0;t=${over.retryAfter}`);
    // A failed authentication is not the client's: no budget is told.
    const failed = await tokenFrom(server.url, '192.0.2.61', { token: 'junk', client_id: b.client_id, client_secret: 'wrong' }, '/v2/auth/oauth2/introspect');
    expect([failed.status, failed.policy, failed.rateLimit]).toEqual([401, null, null]);
  });

  it("stops a client refreshing one user's tokens in a loop, on the fast path and through the provider, without touching its other users", async () => {
    const created = await clientsCreate(operator(server), { name: 'Looping App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    const app: TestClient = { client_id: created.client_id, client_secret: created.client_secret! };
    const [looped, other] = [await newUser(server), await newUser(server)];
    const ip = '192.0.2.70';
    // Alternating the fast path and the provider (a query string hands a request over): one budget.
    const refresh = (token: string, i: number) => tokenFrom(server.url, ip, { grant_type: 'refresh_token', refresh_token: token, ...app }, i % 2 ? '/v2/auth/oauth2/token?via=provider' : '/v2/auth/oauth2/token');
    let token = (await tokensFor(server, app, looped, 'PROFILE_READ')).refresh_token;
    const answers = [];
    for (let i = 0; i < 5; i++) {
      const r = await refresh(token, i);
      answers.push(r);
      if (r.status === 200) token = r.body.refresh_token as string;
    }
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
    expect(answers[3]).toMatchObject({ body: { error: 'slow_down', error_description: expect.stringContaining("this user's tokens") } });
    expect(Number(answers[3]!.retryAfter)).toBeGreaterThan(0);
    expect(Number(answers[3]!.retryAfter)).toBeLessThanOrEqual(60);
    // Nothing was spent by the refused refreshes: the token still works once the minute is over
    // — and meanwhile the same app refreshes its other users' tokens as before.
    const others = await tokensFor(server, app, other, 'PROFILE_READ');
    expect((await refresh(others.refresh_token, 0)).status).toBe(200);
    expect((await tokenFrom(server.url, ip, { token: others.access_token, ...app }, '/v2/auth/oauth2/introspect')).status).toBe(200);
  });

  it("applies a resource server's own budget, on the introspection hot path and in the provider", async () => {
    const resourceServer = async (perMinute: string) => {
      const created = await clientsCreate(operator(server), { name: 'Gateway', resourceServer: true });
      await clientsSetStatus(operator(server), created.client_id, 'approved');
      expect((await clientsSetRateLimit(operator(server), created.client_id, perMinute)).token_requests_per_minute).toBe(Number(perMinute));
      return { client_id: created.client_id, client_secret: created.client_secret! };
    };
    const live = (await tokensFor(server, b, user, 'PROFILE_READ')).access_token;
    // A live token is answered on the hot path, junk by the provider: both count.
    const introspect = (rs: TestClient, i: number) => tokenFrom(server.url, '192.0.2.90', { token: i % 2 ? 'junk' : live, ...rs }, '/v2/auth/oauth2/introspect');
    const busy = await resourceServer('50'); // above the default of 40
    for (let i = 0; i < 45; i++) expect((await introspect(busy, i)).status, `request ${i + 1}`).toBe(200);
    const small = await resourceServer('2');
    expect([(await introspect(small, 0)).status, (await introspect(small, 1)).status, (await introspect(small, 0)).status, (await introspect(small, 1)).status]).toEqual([200, 200, 429, 429]);
  });

  it('counts a client id that cannot exist (a 12,000-character one) on its own, under a digest: never with the others, never a key of its size', async () => {
    const basic = (id: string) => ({ authorization: `Basic ${Buffer.from(`${id}:s`).toString('base64')}` });
    const statuses = [];
    // Each id different: each has a count of its own (issue 45 item 2: one shared count for all
    // such ids let anyone's failures hold back every agent from an address); the address's own
    // count (RATE_LIMIT_AUTH_FAILURES_PER_IP) still counts them all.
    for (let i = 0; i < 5; i++) statuses.push((await tokenFrom(server.url, '198.51.100.40', 'grant_type=refresh_token&refresh_token=x', undefined, basic(`${i}`.repeat(12_000)))).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401]);
    const same = [];
    for (let i = 0; i < 5; i++) same.push((await tokenFrom(server.url, '198.51.100.41', 'grant_type=refresh_token&refresh_token=x', undefined, basic('7'.repeat(12_000)))).status);
    expect(same).toEqual([401, 401, 401, 429, 429]);
    if (server.redis) {
      const keys = await server.redis.redis.keys(`${server.redis.prefix}rl:*`);
      expect(keys.length).toBeGreaterThan(0);
      expect(Math.max(...keys.map((k) => k.length))).toBeLessThan(200);
    }
  });

  it('applies the same limits to every spelling of the endpoints, or answers 404', async () => {
    for (const path of ['/v2/auth/oauth2/Token', '/v2/auth/oauth2/token/', '/V2/auth/oauth2/token', '/v2/auth/oauth2/TOKEN', '/v2/auth/oauth2/Revoke', '/v2/auth/oauth2/introspect/']) {
      expect((await tokenFrom(server.url, '198.51.100.9', { grant_type: 'refresh_token', refresh_token: 'x', client_id: a.client_id, client_secret: 'w' }, path)).status, path).toBe(404);
    }
  });

  describe('sign-in', () => {
    const authorizationSignIn = async (browser: Browser): Promise<Page> => {
      const page = await browser.follow(authorizeUrl(server.url, { client_id: a.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }), server.url);
      expect(page.$('input[name=password]')).toHaveLength(1);
      return page;
    };
    const pagesSignIn = (browser: Browser, ip = '127.0.0.1') => browser.request(`${server.url}/login`, { headers: { 'x-forwarded-for': ip } });

    /** The work the page's challenge asks (0: the form carries none), as the server sealed it in: the browser cannot read it. */
    const workAsked = (page: Page) => {
      const json = page.$('altcha-widget').attr('challenge');
      return json ? (server.system.signInLimits.terms(JSON.parse(json) as Challenge)?.work ?? -1) : 0;
    };
    /** What the ALTCHA widget puts in the form: the page's challenge solved, as a browser would. */
    async function solve(page: Page): Promise<string> {
      const challenge = JSON.parse(page.$('altcha-widget').attr('challenge')!) as Challenge;
      const solution = await solveChallenge({ challenge, deriveKey });
      return Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
    }
    const post = (browser: Browser, page: Page, ip: string, fields: Record<string, string>) =>
      browser.request(new URL(page.$('form:has(input[name=password])').attr('action')!, page.url).href, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
        body: new URLSearchParams({ csrf: page.$('input[name=csrf]').first().val() as string, ...fields }).toString(),
      });
    /**
     * A sign-in as a person in a browser does it: the form as shown (solving its challenge when it
     * carries one), and once more with the new challenge if the answer asks for one. `work`: what was asked.
     */
    async function signIn(browser: Browser, page: Page, ip: string, email: string, password: string): Promise<{ res: Page; work: number }> {
      let work = workAsked(page);
      let res = await post(browser, page, ip, { email, password, ...(work ? { altcha: await solve(page) } : {}) });
      if (res.status === 429 && workAsked(res)) {
        work = workAsked(res);
        res = await post(browser, res, ip, { email, password, altcha: await solve(res) });
      }
      // Each sign-in here starts signed out: a sign-in signs in to the whole site (issue 50 item 4),
      // and signing out keeps the browser's known-device mark.
      if (res.status === 303) await signOut(browser);
      return { res, work };
    }
    async function signOut(browser: Browser): Promise<void> {
      const home = await browser.get(`${server.url}/`);
      expect((await browser.submit(home, 'form[action="/logout"]')).status).toBe(303);
    }
    const randomEmail = () => `nobody-${Math.random().toString(36).slice(2)}@example.com`;

    it("asks for work past the limits but never refuses: 200 failures for random accounts from one address, then another user's right password there in a fresh browser signs in", async () => {
      const ip = '198.51.100.20';
      const prober = new Browser();
      const works: number[] = [];
      const probe = async (browser: Browser, i: number) => {
        const { res, work } = await signIn(browser, await pagesSignIn(browser), ip, randomEmail(), 'guess');
        expect(res.status, `probe ${i + 1}`).toBe(401); // every probe was checked (and counted): it did the work asked
        works[i] = work;
      };
      for (let i = 0; i < 25; i++) await probe(prober, i);
      // At the ceiling the order no longer matters: the other 175 from five browsers at once, all from the address.
      await Promise.all(Array.from({ length: 5 }, async (_, lane) => {
        const browser = new Browser();
        for (let i = 25 + lane; i < 200; i += 5) await probe(browser, i);
      }));
      // 20 free failures from the address, then 2, 4, 8, 16 and 16 … (the ceiling) for each further one.
      expect(works.slice(0, 20)).toEqual(Array(20).fill(0));
      expect(works.slice(20, 25)).toEqual([2, 4, 8, 16, 16]);
      expect(works.slice(25)).toEqual(Array(175).fill(16));

      const other = await newUser(server);
      const fresh = new Browser();
      const form = await pagesSignIn(fresh, ip);
      expect(workAsked(form)).toBe(16); // the form already carries the address's challenge
      const { res, work } = await signIn(fresh, form, ip, other.email, other.password);
      expect([res.status, work]).toEqual([303, 16]);
      expect(res.location).toContain('/connected-apps');
    }, CPU_BOUND_TEST_MS);

    it('slows 50 guesses at one account spread over 50 fresh browsers (and addresses) exactly as much as 50 from one', async () => {
      const [u1, u2] = [await newUser(server), await newUser(server)];
      const one = new Browser();
      const fromOne: number[] = [];
      for (let i = 0; i < 50; i++) {
        const { res, work } = await signIn(one, await authorizationSignIn(one), '198.51.100.40', u1.email, `guess-${i}`);
        expect(res.status).toBe(401);
        fromOne.push(work);
      }
      const spread: number[] = [];
      const guess = async (i: number) => {
        const jar = new Browser();
        const { res, work } = await signIn(jar, await authorizationSignIn(jar), `203.0.113.${100 + i}`, u2.email, `guess-${i}`);
        expect(res.status, `guess ${i + 1}`).toBe(401);
        spread[i] = work;
      };
      for (let i = 0; i < 6; i++) await guess(i);
      // At the ceiling (the 6th) the order no longer matters: the other 44 browsers at once, five at a time.
      await Promise.all(Array.from({ length: 5 }, async (_, lane) => {
        for (let i = 6 + lane; i < 50; i += 5) await guess(i);
      }));
      expect(spread).toEqual(fromOne);
      expect(fromOne.slice(0, 6)).toEqual([0, 0, 2, 4, 8, 16]);
      expect(fromOne.filter((w) => w === 16)).toHaveLength(45);
    }, CPU_BOUND_TEST_MS);

    it("never slows the owner on a browser that signed in before; a fresh browser solves the challenge and signs in", async () => {
      const owner = await newUser(server);
      const own = new Browser();
      expect((await signIn(own, await authorizationSignIn(own), '198.51.100.50', owner.email, owner.password)).res.status).toBe(303);

      for (let i = 0; i < 20; i++) {
        const attacker = new Browser();
        expect((await signIn(attacker, await authorizationSignIn(attacker), `192.0.2.${i}`, owner.email, `guess-${i}`)).res.status).toBe(401);
      }
      const again = await signIn(own, await authorizationSignIn(own), '198.51.100.50', owner.email, owner.password);
      expect([again.res.status, again.work]).toEqual([303, 0]);
      const pages = await signIn(own, await pagesSignIn(own), '198.51.100.50', owner.email, owner.password);
      expect([pages.res.status, pages.work]).toEqual([303, 0]);

      const elsewhere = new Browser();
      const fresh = await signIn(elsewhere, await authorizationSignIn(elsewhere), '198.51.100.51', owner.email, owner.password);
      expect([fresh.res.status, fresh.work]).toEqual([303, 16]);
    });

    it("does not take a mark of a device known for one account as one for another, nor a made-up mark", async () => {
      const [attacker, victim] = [await newUser(server), await newUser(server)];
      const browser = new Browser();
      expect((await signIn(browser, await pagesSignIn(browser), '198.51.100.60', attacker.email, attacker.password)).res.status).toBe(303);
      const marked = (await browser.jar.getCookies(server.url)).find((c) => c.key === 'known_device');
      expect(marked?.value).toBeTruthy();
      expect(marked!.value).not.toContain(attacker.email);
      const works: number[] = [];
      for (let i = 0; i < 4; i++) works.push((await signIn(browser, await authorizationSignIn(browser), '198.51.100.60', victim.email, `guess-${i}`)).work);
      expect(works).toEqual([0, 0, 2, 4]);

      // A forged cookie (not signed with our keys) is no mark at all.
      const forger = new Browser();
      await forger.jar.setCookie(`known_device=${marked!.value}x; Path=/`, server.url);
      expect((await signIn(forger, await authorizationSignIn(forger), '198.51.100.61', victim.email, 'guess')).work).toBe(8);
    });

    it('takes a solution once, only of our signed challenge, and only when worth the work now asked', async () => {
      const user = await newUser(server);
      const browser = new Browser();
      const ip = '198.51.100.70';
      for (let i = 0; i < 2; i++) await signIn(browser, await pagesSignIn(browser), ip, user.email, `guess-${i}`);
      const form = await post(browser, await pagesSignIn(browser), ip, { email: user.email, password: 'guess' });
      expect([form.status, workAsked(form)]).toEqual([429, 2]);
      expect(form.$('.alert').text()).toContain('complete the check below');
      expect(form.$('script[src="/assets/altcha.js"]')).toHaveLength(1);
      const spare = await post(browser, form, ip, { email: user.email, password: 'guess' }); // another challenge of work 2, kept
      expect(workAsked(spare)).toBe(2);

      const altcha = await solve(form);
      expect((await post(browser, form, ip, { email: user.email, password: 'guess', altcha })).status).toBe(401);
      const replay = await post(browser, form, ip, { email: user.email, password: user.password, altcha });
      expect(replay.status).toBe(429); // replayed: refused, and the password was not looked at

      // Tampered: the work claimed lowered, or the signature changed.
      const next = await post(browser, replay, ip, { email: user.email, password: 'x' });
      const decoded = JSON.parse(Buffer.from(await solve(next), 'base64').toString()) as { challenge: Challenge; solution: unknown };
      decoded.challenge.parameters.data = JSON.parse(spare.$('altcha-widget').attr('challenge')!).parameters.data; // the terms of a cheaper one
      expect((await post(browser, next, ip, { email: user.email, password: user.password, altcha: Buffer.from(JSON.stringify(decoded)).toString('base64') })).status).toBe(429);
      for (const junk of ['', 'not base64 at all', Buffer.from('{"challenge":1}').toString('base64'), 'x'.repeat(20_000)]) {
        expect((await post(browser, next, ip, { email: user.email, password: user.password, altcha: junk })).status).toBe(429);
      }
      // A solution of an earlier, cheaper challenge does not pay for the work asked now (4 after 3 failures).
      const cheap = await solve(spare);
      expect(workAsked(next)).toBe(4);
      expect((await post(browser, next, ip, { email: user.email, password: user.password, altcha: cheap })).status).toBe(429);
      expect((await signIn(browser, next, ip, user.email, user.password)).res.status).toBe(303);
    });

    it('keeps its counters at a fixed size, whatever the form sends: a 20,000-character email sizes no key', async () => {
      const browser = new Browser();
      const ip = '198.51.100.80';
      for (let i = 0; i < 3; i++) await signIn(browser, await pagesSignIn(browser), ip, `${String(i).repeat(20_000)}@example.com`, 'guess');
      if (server.redis) {
        const keys = await server.redis.redis.keys(`${server.redis.prefix}rl:signin-*`);
        expect(keys.length).toBeGreaterThan(0);
        expect(Math.max(...keys.map((k) => k.length))).toBeLessThan(200);
      }
    });
  });
});
