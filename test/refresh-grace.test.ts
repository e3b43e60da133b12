// A refresh retried or raced within seconds gets the same answer (a grace window of 5 s here):
// one token family, never two live refresh tokens; outside the window, after the new token was
// used, or from another client: reuse detection revokes the grant; nothing usable at rest. The
// servers run on a test clock (test/support/clock.ts), moved past the window instead of waiting;
// the store's own expiry of the window (its single flight) is proven on real time in
// test/adapters.contract.test.ts.
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { authorize, getMe, tokenRequest } from './support/oauth.ts';
import { approvedClient, newUser, operator, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';
import { Browser } from './support/browser.ts';
import { testClock, type TestClock } from './support/clock.ts';
import { clientsCreate, clientsSetRefreshGrace, clientsSetStatus } from '../src/admin/commands.ts';

// Long enough that real time between two requests never ends it; the clock is moved instead.
const WINDOW_S = 5;

describe.each<Storage>(['redis', 'sql'])('refresh grace window (%s storage)', (storage) => {
  let server: TestServer;
  let client: TestClient;
  let user: Awaited<ReturnType<typeof newUser>>;
  const clock: TestClock = testClock();
  beforeAll(async () => {
    server = await startTestServer(storage, { REFRESH_GRACE_SECONDS: String(WINDOW_S) }, { clock });
    client = await approvedClient(server, ['PROFILE_READ']);
    user = await newUser(server);
  });
  afterAll(() => server?.close());

  const refresh = (refresh_token: string, as: TestClient = client) => tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token, ...as });
  const alive = async (body: Record<string, unknown>) => (await getMe(server.url, body.access_token as string)).status === 200;

  it('answers 10 parallel refreshes of one token with one identical body (or invalid_grant), one family that lives on', async () => {
    const t0 = await tokensFor(server, client, user, 'PROFILE_READ');
    const results = await Promise.all(Array.from({ length: 10 }, () => refresh(t0.refresh_token)));
    const answered = results.filter((r) => r.status === 200);
    expect(answered.length).toBeGreaterThanOrEqual(1);
    expect(new Set(answered.map((r) => JSON.stringify(r.body))).size).toBe(1);
    for (const r of results.filter((x) => x.status !== 200)) expect(r.body.error).toBe('invalid_grant');
    expect(await alive(answered[0]!.body)).toBe(true);
    expect((await refresh(answered[0]!.body.refresh_token as string)).status).toBe(200);
  });

  it('answers a retry within the window with the same body; after the window, reuse revokes the grant', async () => {
    const t0 = await tokensFor(server, client, user, 'PROFILE_READ');
    const first = await refresh(t0.refresh_token);
    clock.advance(2000);
    const retry = await refresh(t0.refresh_token);
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(first.body);

    clock.advance(WINDOW_S * 1000 - 2000 + 500);
    const late = await refresh(t0.refresh_token);
    expect(late.body.error).toBe('invalid_grant');
    expect(await alive(first.body)).toBe(false);
    expect((await refresh(first.body.refresh_token as string)).body.error).toBe('invalid_grant');
  });

  it('treats the spent token as reuse once its successor was used, and answers another client nothing', async () => {
    const t0 = await tokensFor(server, client, user, 'PROFILE_READ');
    const first = await refresh(t0.refresh_token);
    const other = await approvedClient(server, ['PROFILE_READ'], 'Other App');
    const stranger = await refresh(t0.refresh_token, other);
    expect(stranger.status).not.toBe(200);
    expect(stranger.body.access_token).toBeUndefined();
    const wrongSecret = await refresh(t0.refresh_token, { ...client, client_secret: 'wrong' });
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body.access_token).toBeUndefined();

    const second = await refresh(first.body.refresh_token as string);
    expect(second.status).toBe(200);
    const reuse = await refresh(t0.refresh_token);
    expect(reuse.body.error).toBe('invalid_grant');
    expect(await alive(second.body)).toBe(false);
  });

  it('keeps nothing usable at rest: the remembered answer is sealed', async () => {
    const t0 = await tokensFor(server, client, user, 'PROFILE_READ');
    const first = await refresh(t0.refresh_token);
    const secrets = [first.body.access_token, first.body.refresh_token, t0.refresh_token] as string[];
    const dump =
      storage === 'redis'
        ? (await Promise.all((await server.redis!.redis.keys(`${server.redis!.prefix}*`)).map(async (k) => `${k} ${JSON.stringify(await server.redis!.redis.type(k) === 'hash' ? await server.redis!.redis.hgetall(k) : await server.redis!.redis.get(k).catch(() => ''))}`))).join('\n')
        : JSON.stringify(await server.pg.db('oidc_models').select('*'));
    expect(dump).toContain('refresh-grace:');
    for (const value of secrets) expect(dump).not.toContain(value);
  });
});

describe('refresh grace window off (REFRESH_GRACE_SECONDS=0)', () => {
  it('treats a retry as reuse at once', async () => {
    const server = await startTestServer('redis', { REFRESH_GRACE_SECONDS: '0' });
    try {
      const client = await approvedClient(server, ['PROFILE_READ']);
      const t0 = await tokensFor(server, client, await newUser(server), 'PROFILE_READ');
      const first = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: t0.refresh_token, ...client });
      expect(first.status).toBe(200);
      const retry = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: t0.refresh_token, ...client });
      expect(retry.body.error).toBe('invalid_grant');
      expect((await getMe(server.url, first.body.access_token as string)).status).toBe(401);
    } finally {
      await server.close();
    }
  });
});

/** A DPoP proof (RFC 9449) of a token request, signed with `key` (P-256). */
function dpopProof(key: { privateKey: KeyObject; publicKey: KeyObject }, url: string): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const header = part({ typ: 'dpop+jwt', alg: 'ES256', jwk: key.publicKey.export({ format: 'jwk' }) });
  const payload = part({ htm: 'POST', htu: url, iat: Math.floor(Date.now() / 1000), jti: randomBytes(16).toString('base64url') });
  const signature = sign('sha256', Buffer.from(`${header}.${payload}`), { key: key.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  return `${header}.${payload}.${signature}`;
}

// Each client's own window (clients set-refresh-grace), a lower default for public clients, and a
// retry that must prove the first presentation's DPoP key; the server's default is 10 s here.
describe('refresh grace window per client (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let user: Awaited<ReturnType<typeof newUser>>;
  const clock: TestClock = testClock();
  beforeAll(async () => {
    server = await startTestServer(storage, {}, { clock });
    user = await newUser(server);
  });
  afterAll(() => server?.close());

  async function refresh(fields: Record<string, string>, headers: Record<string, string> = {}) {
    const url = `${server.url}/v2/auth/oauth2/token`;
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams({ grant_type: 'refresh_token', ...fields }) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  async function publicTokens(clientId: string) {
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const back = await authorize(new Browser(), server.url, { client_id: clientId, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }, user);
    const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier });
    expect(res.status).toBe(200);
    return res.body as { access_token: string; refresh_token: string };
  }

  async function publicClient(): Promise<string> {
    const created = await clientsCreate(operator(server), { name: 'Phone App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'], public: true });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    return created.client_id;
  }

  it("gives a public client 2 s by default, not the server's 10 s: a retry after that is reuse", async () => {
    const clientId = await publicClient();
    const t0 = await publicTokens(clientId);
    const first = await refresh({ refresh_token: t0.refresh_token, client_id: clientId });
    expect(first.status).toBe(200);
    const retry = await refresh({ refresh_token: t0.refresh_token, client_id: clientId });
    expect(retry).toEqual(first);
    clock.advance(2500);
    const late = await refresh({ refresh_token: t0.refresh_token, client_id: clientId });
    expect(late.body.error).toBe('invalid_grant');
    expect((await getMe(server.url, first.body.access_token as string)).status).toBe(401);
  });

  it('follows the per-client setting: 0 turns the window off, a value replaces the default', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    expect((await clientsSetRefreshGrace(operator(server), client.client_id, '0')).refresh_grace_seconds).toBe(0);
    const t0 = await tokensFor(server, client, user, 'PROFILE_READ');
    expect((await refresh({ refresh_token: t0.refresh_token, ...client })).status).toBe(200);
    expect((await refresh({ refresh_token: t0.refresh_token, ...client })).body.error).toBe('invalid_grant');

    // A public client may be given more than its default.
    const clientId = await publicClient();
    await clientsSetRefreshGrace(operator(server), clientId, '5');
    const t1 = await publicTokens(clientId);
    const first = await refresh({ refresh_token: t1.refresh_token, client_id: clientId });
    clock.advance(2500);
    expect(await refresh({ refresh_token: t1.refresh_token, client_id: clientId })).toEqual(first);
  });

  it('answers a retry only when it proves the DPoP key of the first presentation (and none when it sent none)', async () => {
    const clientId = await publicClient();
    const url = `${server.url}/v2/auth/oauth2/token`;
    const mine = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const theirs = generateKeyPairSync('ec', { namedCurve: 'P-256' });

    const t0 = await publicTokens(clientId);
    const first = await refresh({ refresh_token: t0.refresh_token, client_id: clientId }, { dpop: dpopProof(mine, url) });
    expect(first.status).toBe(200);
    // The same key, a new proof: the same answer.
    expect(await refresh({ refresh_token: t0.refresh_token, client_id: clientId }, { dpop: dpopProof(mine, url) })).toEqual(first);
    // Another key, or no proof: reuse, the grant is revoked. A proof not signed by its key is
    // refused as a proof (DPoP is on: the provider verifies it first), before the token is read.
    const forged = dpopProof(mine, url).replace(/\.[^.]+$/, `.${dpopProof(theirs, url).split('.')[2]}`);
    for (const [headers, error] of [[{ dpop: dpopProof(theirs, url) }, 'invalid_grant'], [{}, 'invalid_grant'], [{ dpop: forged }, 'invalid_dpop_proof']] as Array<[Record<string, string>, string]>) {
      const t = await publicTokens(clientId);
      expect((await refresh({ refresh_token: t.refresh_token, client_id: clientId }, { dpop: dpopProof(mine, url) })).status).toBe(200);
      const retry = await refresh({ refresh_token: t.refresh_token, client_id: clientId }, headers);
      expect(retry.body.error, JSON.stringify(headers).slice(0, 20)).toBe(error);
    }
    // A first presentation without a proof: a retry with one is not the same holder either.
    const t1 = await publicTokens(clientId);
    expect((await refresh({ refresh_token: t1.refresh_token, client_id: clientId })).status).toBe(200);
    expect((await refresh({ refresh_token: t1.refresh_token, client_id: clientId }, { dpop: dpopProof(mine, url) })).body.error).toBe('invalid_grant');
  });
});
