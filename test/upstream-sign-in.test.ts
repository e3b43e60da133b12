// An upstream OpenID provider as the account source (issue 51 item 1; docs/accounts.md): "Sign in
// with …" sends the person to a real upstream (node-oidc-provider in its own process,
// test/support/upstream-op.mjs) and back, and they are signed in here as the user linked to the
// upstream account by (issuer, subject). Just-in-time creation on both stores; the existing-user
// mode matched by a verified e-mail once, then by subject; every bad answer refused in words,
// nothing created, never a 500; the authorization flow continues to consent as after a password;
// passwords switched off; the operator's users list, link and unlink.
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser, signedIn, type Page } from './support/browser.ts';
import { authorizeUrl, getMe, tokenRequest } from './support/oauth.ts';
import { approvedClient, newUser, operator, REDIRECT } from './support/fixtures.ts';
import { freePort, ROOT } from './support/processes.ts';
import { usersLink, usersList, usersUnlink } from '../src/admin/commands.ts';

const CLIENT_ID = 'our-server';
const CLIENT_SECRET = randomBytes(24).toString('base64url');
const NAME = 'Test Upstream';

interface Upstream {
  issuer: string;
  process: ChildProcess;
  post(path: string, body: unknown): Promise<void>;
}

async function startUpstream(): Promise<Upstream> {
  const child = spawn(process.execPath, ['test/support/upstream-op.mjs'], { cwd: ROOT, env: { ...process.env, CLIENT_ID, CLIENT_SECRET }, stdio: ['ignore', 'pipe', 'ignore'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the upstream provider exited (${code})`)));
  });
  const { issuer } = JSON.parse(line) as { issuer: string };
  return {
    issuer,
    process: child,
    async post(path, body) {
      const res = await fetch(`${issuer}${path}`, { method: 'POST', body: JSON.stringify(body) });
      expect(res.status).toBe(204);
    },
  };
}

let upstream: Upstream;
/** UPSTREAM_LINKING=create, on Redis. */
let jitRedis: TestServer;
/** UPSTREAM_LINKING=create with LOCAL_PASSWORDS=off, on SQL. */
let jitSql: TestServer;
/** UPSTREAM_LINKING=existing (the default), on Redis: the refusals and the authorization flow. */
let existing: TestServer;
/** UPSTREAM_CLIENT_AUTH=private_key_jwt, on SQL. */
let keyAuth: TestServer;
const KEY_CLIENT_ID = 'our-server-with-a-key';
const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const PUBLIC_JWK = { ...publicKey.export({ format: 'jwk' }), kid: 'our-key-1', alg: 'ES256', use: 'sig' };
const PRIVATE_JWK = { ...privateKey.export({ format: 'jwk' }), kid: 'our-key-1' };

const upstreamEnv = () => ({ UPSTREAM_ISSUER: upstream.issuer, UPSTREAM_CLIENT_ID: CLIENT_ID, UPSTREAM_CLIENT_SECRET: CLIENT_SECRET, UPSTREAM_ALLOW_LOOPBACK: 'true', UPSTREAM_NAME: NAME });

beforeAll(async () => {
  upstream = await startUpstream();
  [jitRedis, jitSql, existing, keyAuth] = await Promise.all([
    startTestServer('redis', { ...upstreamEnv(), UPSTREAM_LINKING: 'create' }),
    startTestServer('sql', { ...upstreamEnv(), UPSTREAM_LINKING: 'create', LOCAL_PASSWORDS: 'off' }),
    startTestServer('redis', upstreamEnv()),
    startTestServer('sql', { ...upstreamEnv(), UPSTREAM_LINKING: 'create', UPSTREAM_CLIENT_ID: KEY_CLIENT_ID, UPSTREAM_CLIENT_SECRET: '', UPSTREAM_CLIENT_AUTH: 'private_key_jwt', UPSTREAM_PRIVATE_KEY: JSON.stringify(PRIVATE_JWK) }),
  ]);
  // Only now are our redirect URIs known: the upstream's client is made with them.
  await upstream.post('/__test/setup', { redirect_uris: [jitRedis, jitSql, existing].map((s) => `${s.url}/login/upstream/callback`), post_logout_redirect_uris: [jitRedis, jitSql, existing].map((s) => `${s.url}/login`),
    key_client: { client_id: KEY_CLIENT_ID, jwk: PUBLIC_JWK, redirect_uris: [`${keyAuth.url}/login/upstream/callback`] },
  });
}, 60_000);
afterAll(async () => {
  upstream?.process.kill();
  await Promise.all([jitRedis?.close(), jitSql?.close(), existing?.close(), keyAuth?.close()]);
});

interface UpstreamAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
}

async function upstreamAccount(claims: Partial<UpstreamAccount> = {}): Promise<UpstreamAccount> {
  const sub = `sub-${randomBytes(6).toString('hex')}`;
  const account = { sub, email: `${sub}@upstream.example`, email_verified: true, name: 'Upstream Person', ...claims };
  await upstream.post('/__test/accounts', account);
  return account;
}

/** Clicks "Sign in with …" on `page`, signs in at the upstream as `sub` and allows; returns the upstream's redirect back to us (not followed). */
async function throughUpstream(browser: Browser, page: Page, sub: string): Promise<URL> {
  const start = await browser.submit(page, 'form.upstream-sign-in');
  expect(start.status, start.html.slice(0, 500)).toBe(303);
  expect(start.location!.startsWith(`${upstream.issuer}/`)).toBe(true);
  const at = `${upstream.issuer}/`;
  let step = await browser.follow(start.location!, at);
  step = await browser.submit(step, 'form:has(input[name=login])', { login: sub, password: 'anything' });
  step = await browser.follow(step.location!, at);
  if (step.$('input[name=prompt][value=consent]').length) {
    step = await browser.submit(step, 'form:has(input[name=prompt][value=consent])');
    step = await browser.follow(step.location!, at);
  }
  expect(step.location, step.html.slice(0, 500)).toBeDefined();
  return new URL(step.location!);
}

/** The whole upstream sign-in from the pages' /login; returns where our callback answered. */
async function signInWithUpstream(server: TestServer, sub: string, browser = new Browser()): Promise<{ browser: Browser; back: URL; answer: Page }> {
  const login = await browser.get(`${server.url}/login`);
  const back = await throughUpstream(browser, login, sub);
  expect(back.origin + back.pathname).toBe(`${server.url}/login/upstream/callback`);
  const answer = await browser.get(back.href);
  return { browser, back, answer };
}

/** Who the pages say is signed in ('' for nobody). */
const pagesUser = async (server: TestServer, browser: Browser) => (await browser.get(`${server.url}/`)).$('form[action="/logout"] .who').text().trim();
const usersWithEmail = async (server: TestServer, email: string) => server.pg.db('users').where('email', email.toLowerCase()).select('id');
const linksOf = async (server: TestServer, subject: string) => server.pg.db('upstream_links').where({ issuer: upstream.issuer, subject }).select('user_id');

describe.each([
  ['redis', () => jitRedis],
  ['sql', () => jitSql],
  ['sql, private_key_jwt at the upstream', () => keyAuth],
])('just-in-time creation (%s)', (_store, server) => {
  it('makes a user at the first sign-in and signs in as the same user at the second', async () => {
    const account = await upstreamAccount();
    const first = await signInWithUpstream(server(), account.sub);
    expect(first.answer.status, first.answer.html.slice(0, 500)).toBe(303);
    expect(await pagesUser(server(), first.browser)).toBe(account.email);
    const [made] = await usersWithEmail(server(), account.email!);
    expect(made).toBeDefined();
    expect(await linksOf(server(), account.sub)).toEqual([{ user_id: made!.id }]);
    // No password was made: the user's source is the upstream alone.
    expect((await server().pg.db('users').where('id', made!.id).first('password_hash')).password_hash).toBeNull();

    const second = await signInWithUpstream(server(), account.sub);
    expect(second.answer.status).toBe(303);
    expect(await pagesUser(server(), second.browser)).toBe(account.email);
    expect(await usersWithEmail(server(), account.email!)).toEqual([{ id: made!.id }]);
  });
});

describe('the existing-user mode', () => {
  it('matches a verified e-mail once, then the subject: a changed e-mail upstream is still the same user', async () => {
    const user = await newUser(existing, 'Local Person');
    const account = await upstreamAccount({ email: user.email.toUpperCase() });
    const first = await signInWithUpstream(existing, account.sub);
    expect(first.answer.status, first.answer.html.slice(0, 500)).toBe(303);
    expect(await pagesUser(existing, first.browser)).toBe(user.email);
    expect(await linksOf(existing, account.sub)).toEqual([{ user_id: user.id }]);

    // The upstream account's e-mail changes, to one nobody has here and unverified: the link decides.
    await upstream.post('/__test/accounts', { ...account, email: `moved-${account.sub}@elsewhere.example`, email_verified: false });
    const moved = await signInWithUpstream(existing, account.sub);
    expect(moved.answer.status, moved.answer.html.slice(0, 500)).toBe(303);
    expect(await pagesUser(existing, moved.browser)).toBe(user.email);

    // …and to another user's: still the linked user, never the one the e-mail names.
    const other = await newUser(existing, 'Other Person');
    await upstream.post('/__test/accounts', { ...account, email: other.email });
    const second = await signInWithUpstream(existing, account.sub);
    expect(second.answer.status).toBe(303);
    expect(await pagesUser(existing, second.browser)).toBe(user.email);
  });

  it('refuses an unverified e-mail: nobody signed in, nothing linked', async () => {
    const user = await newUser(existing);
    const account = await upstreamAccount({ email: user.email, email_verified: false });
    const { browser, answer } = await signInWithUpstream(existing, account.sub);
    expect(answer.status).toBe(403);
    expect(answer.html).toContain('is not verified');
    expect(await pagesUser(existing, browser)).toBe('');
    expect(await linksOf(existing, account.sub)).toEqual([]);
  });

  it('refuses an upstream account with no user here, and creates none', async () => {
    const account = await upstreamAccount();
    const { answer } = await signInWithUpstream(existing, account.sub);
    expect(answer.status).toBe(403);
    expect(answer.html).toContain('There is no account here for');
    expect(await usersWithEmail(existing, account.email!)).toEqual([]);
    expect(await linksOf(existing, account.sub)).toEqual([]);
  });
});

describe('bad answers', () => {
  it('refuses a replayed return, in the same browser and in another', async () => {
    const user = await newUser(existing);
    const account = await upstreamAccount({ email: user.email });
    const browser = new Browser();
    const back = await throughUpstream(browser, await browser.get(`${existing.url}/login`), account.sub);
    // The trip's cookie as the return carried it: a replay with it is refused by the server's record, not the cookie's absence.
    const trip = (await browser.jar.getCookieString(back.href)).split('; ').filter((c) => c.startsWith('upstream_trip'));
    expect(trip).toHaveLength(2); // the id and its signature
    expect((await browser.get(back.href)).status).toBe(303);
    const again = await new Browser().request(back.href, { headers: { cookie: trip.join('; ') } });
    expect(again.status).toBe(400);
    expect(again.html).toContain('This sign-in cannot be used');
    expect((await browser.get(back.href)).status).toBe(400);
    // An attacker's browser with a trip of its own: the return is checked against its own state.
    const attacker = new Browser();
    await attacker.submit(await attacker.get(`${existing.url}/login`), 'form.upstream-sign-in');
    const replayed = await attacker.get(back.href);
    expect(replayed.status).toBe(400);
    expect(await pagesUser(existing, attacker)).toBe('');
  });

  it('refuses a return with another issuer (RFC 9207 iss)', async () => {
    const user = await newUser(existing);
    const account = await upstreamAccount({ email: user.email });
    const browser = new Browser();
    const back = await throughUpstream(browser, await browser.get(`${existing.url}/login`), account.sub);
    expect(back.searchParams.get('iss')).toBe(upstream.issuer);
    back.searchParams.set('iss', 'https://attacker.example');
    const answer = await browser.get(back.href);
    expect(answer.status).toBe(400);
    expect(answer.html).toContain('answer was refused');
    expect(await pagesUser(existing, browser)).toBe('');
    expect(await linksOf(existing, account.sub)).toEqual([]);
  });

  it.each(['wrong-key', 'alg-none'])('refuses an ID token %s', async (mode) => {
    const user = await newUser(existing);
    const account = await upstreamAccount({ email: user.email });
    await upstream.post('/__test/mode', { idToken: mode });
    try {
      const { browser, answer } = await signInWithUpstream(existing, account.sub);
      expect(answer.status, answer.html.slice(0, 800)).toBe(400);
      expect(answer.html).toContain('answer was refused');
      expect(await pagesUser(existing, browser)).toBe('');
      expect(await linksOf(existing, account.sub)).toEqual([]);
    } finally {
      await upstream.post('/__test/mode', { idToken: 'normal' });
    }
  });

  it('says so on a page when the upstream is down, and creates nothing', async () => {
    const down = await startTestServer('sql', { ...upstreamEnv(), UPSTREAM_ISSUER: `http://127.0.0.1:${await freePort()}`, UPSTREAM_LINKING: 'create' });
    try {
      const browser = new Browser();
      const res = await browser.submit(await browser.get(`${down.url}/login`), 'form.upstream-sign-in');
      expect(res.status).toBe(502);
      expect(res.html).toContain(`${NAME} cannot be reached`);
      expect(Number((await down.pg.db('upstream_links').count({ n: '*' }).first())!.n)).toBe(0);
    } finally {
      await down.close();
    }
  });
});

describe('the authorization flow', () => {
  it('continues to consent after an upstream sign-in, and the token is the linked user’s', async () => {
    const client = await approvedClient(existing, ['PROFILE_READ']);
    const user = await newUser(existing, 'Flow Person');
    const account = await upstreamAccount({ email: user.email });
    const browser = new Browser();
    const signIn = await browser.follow(authorizeUrl(existing.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 'st' }), `${existing.url}/`);
    expect(signIn.$('form.upstream-sign-in').length).toBe(1);
    const back = await throughUpstream(browser, signIn, account.sub);
    const consent = await browser.follow(back.href, `${existing.url}/`);
    expect(consent.$('button:contains("Allow")').length, consent.html.slice(0, 800)).toBe(1);
    expect(consent.html).toContain(user.email);
    const allowed = await browser.submit(consent, 'button:contains("Allow")');
    const final = await browser.follow(allowed.location!, `${existing.url}/`);
    const code = new URL(final.location!).searchParams.get('code');
    expect(code).toBeTruthy();
    const tokens = await tokenRequest(existing.url, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, ...client });
    expect(tokens.status).toBe(200);
    const me = await getMe(existing.url, tokens.body.access_token as string);
    expect(me.body.data?.email ?? me.body.email).toBe(user.email);
    // One sign-in across the site: the pages are signed in too.
    expect(await pagesUser(existing, browser)).toBe(user.email);
  });
});

describe('local passwords switched off', () => {
  it('hides the password form and refuses a password sign-in', async () => {
    const browser = new Browser();
    const login = await browser.get(`${jitSql.url}/login`);
    expect(login.$('form.upstream-sign-in button').text()).toContain(`Sign in with ${NAME}`);
    expect(login.$('input[name=password]').length).toBe(0);
    const user = await newUser(jitSql);
    const csrf = login.$('input[name=csrf]').first().attr('value')!;
    const res = await browser.request(`${jitSql.url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, email: user.email, password: user.password }).toString(),
    });
    expect(res.status).toBe(403);
    expect(res.html).toContain('Passwords are not used here');
    expect(await pagesUser(jitSql, browser)).toBe('');

    // The authorization flow's sign-in page too: only the upstream, and its password step refused.
    const client = await approvedClient(jitSql, ['PROFILE_READ']);
    const flow = await browser.follow(authorizeUrl(jitSql.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 'st' }), `${jitSql.url}/`);
    expect(flow.$('form.upstream-sign-in').length, flow.html.slice(0, 500)).toBe(1);
    expect(flow.$('input[name=password]').length).toBe(0);
    const uid = /\/interaction\/([^/]+)\/upstream$/.exec(flow.$('form.upstream-sign-in').attr('action')!)![1];
    const refused = await browser.request(`${jitSql.url}/auth/oauth2/interaction/${uid}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: flow.$('form.upstream-sign-in input[name=csrf]').attr('value')!, email: user.email, password: user.password }).toString(),
    });
    expect(refused.status).toBe(403);
    expect(refused.html).toContain('Passwords are not used here');
  });

  it('both ways coexist where passwords are on', async () => {
    const login = await new Browser().get(`${existing.url}/login`);
    expect(login.$('form.upstream-sign-in').length).toBe(1);
    expect(login.$('input[name=password]').length).toBe(1);
    const user = await newUser(existing);
    await signedIn(existing.url, user);
  });
});

describe('sign-out', () => {
  it('ends the session at the upstream too (RP-initiated logout), then back to our sign-in page', async () => {
    const account = await upstreamAccount();
    const { browser, answer } = await signInWithUpstream(jitRedis, account.sub);
    expect(answer.status).toBe(303);
    const out = await browser.submit(await browser.get(`${jitRedis.url}/`), 'form[action="/logout"]');
    expect(out.status).toBe(303);
    const end = new URL(out.location!);
    expect(end.origin).toBe(upstream.issuer);
    expect(end.searchParams.get('id_token_hint')).toBeTruthy();
    expect(end.searchParams.get('post_logout_redirect_uri')).toBe(`${jitRedis.url}/login`);
    expect(await pagesUser(jitRedis, browser)).toBe('');
    // The upstream's own confirmation, then back here.
    const confirm = await browser.follow(end.href, `${upstream.issuer}/`);
    const done = await browser.submit(confirm, 'form[id="op.logoutForm"]', { logout: 'yes' });
    expect(done.status).toBe(303);
    expect(done.location).toBe(`${jitRedis.url}/login`);
    // Signed out there: the next trip asks for the upstream sign-in again.
    const start = await browser.submit(await browser.get(`${jitRedis.url}/login`), 'form.upstream-sign-in');
    const at = await browser.follow(start.location!, `${upstream.issuer}/`);
    expect(at.$('input[name=login]').length, at.html.slice(0, 300)).toBe(1);
  });

  it('a password session signs out here only', async () => {
    const browser = await signedIn(existing.url, await newUser(existing));
    const out = await browser.submit(await browser.get(`${existing.url}/`), 'form[action="/logout"]');
    expect(out.status).toBe(303);
    expect(out.location).toBe(`${existing.url}/login`);
  });
});

describe('the operator', () => {
  it('users list shows each user’s source; link and unlink decide who an upstream account signs in as', async () => {
    const local = await newUser(jitRedis);
    const account = await upstreamAccount();
    await signInWithUpstream(jitRedis, account.sub);
    const sourceOf = async (email: string) => (await usersList(operator(jitRedis))).users.find((u) => u.email === email)?.source;
    expect(await sourceOf(local.email)).toEqual(['local']);
    expect(await sourceOf(account.email!)).toEqual(['upstream']);

    // Linked by the operator: the upstream account now signs in as the local user.
    const other = await upstreamAccount();
    await usersLink(operator(jitRedis), local.email, { issuer: upstream.issuer, subject: other.sub });
    expect(await sourceOf(local.email)).toEqual(['local', 'upstream']);
    const linked = await signInWithUpstream(jitRedis, other.sub);
    expect(await pagesUser(jitRedis, linked.browser)).toBe(local.email);

    await usersUnlink(operator(jitRedis), local.email);
    expect(await sourceOf(local.email)).toEqual(['local']);
    await expect(usersUnlink(operator(jitRedis), local.email)).rejects.toThrow(/no upstream link/);
  });
});
