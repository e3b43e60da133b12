// The rotating refresh on the hot path (src/fast/refresh.ts): the plain case is answered without
// the provider's pipeline, with the provider's own models, and must be indistinguishable from the
// provider's answer — status, headers, body shape, what is stored — while everything else is left
// to the provider before anything is written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { approvedClient, newUser, operator, tokensFor, type TestClient } from './support/fixtures.ts';
import { getMe } from './support/oauth.ts';
import { comparable, raw, type Raw } from './support/raw-http.ts';
import { clientsCreate, clientsSetRateLimit, clientsSetRefreshGrace, clientsSetStatus } from '../src/admin/commands.ts';
import { refreshGrant } from '../src/fast/refresh.ts';
import { refreshGraceWindows } from '../src/oauth/refresh-grace.ts';
import { systemClock } from '../src/clock.ts';
import type { TokenEndpointLimits } from '../src/oauth/rate-limits.ts';
import { createLogger } from '../src/log.ts';
import { artifactKey } from '../src/storage/artifact-key.ts';
import { eventually } from './support/eventually.ts';

const PATH = '/v2/auth/oauth2/token';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const basic = (c: TestClient) => ({ authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}` });
const post = (c: TestClient) => `client_id=${c.client_id}&client_secret=${c.client_secret}`;
const refreshBody = (token: string, credentials = '') => `grant_type=refresh_token&refresh_token=${token}${credentials ? `&${credentials}` : ''}`;

let server: TestServer;
let app: TestClient;
let other: TestClient;
let user: Awaited<ReturnType<typeof newUser>>;
const SCOPE = 'PROFILE_READ BOOKING_READ';

beforeAll(async () => {
  server = await startTestServer('redis');
  [app, other] = await Promise.all([approvedClient(server, ['PROFILE_READ', 'BOOKING_READ']), approvedClient(server, ['PROFILE_READ'], 'Other App')]);
  user = await newUser(server);
});
afterAll(() => server?.close());

const family = async (client = app, scope = SCOPE) => (await tokensFor(server, client, user, scope)).refresh_token;
const json = (answer: Raw) => JSON.parse(answer.body) as Record<string, unknown>;
/** An answer with its token values replaced by their shape, so that two issuances compare. */
function shaped(answer: Raw) {
  const body = json(answer);
  for (const key of ['access_token', 'refresh_token']) if (typeof body[key] === 'string') body[key] = /^sp(at|rt)_[0-9A-Za-z]{49}$/.test(body[key] as string) ? '<token>' : body[key];
  return { ...comparable(answer), body };
}

describe('refresh on the hot path', () => {
  const limitsOff = { heldBack: () => 0, spend: async () => undefined, refreshHeldBack: () => 0, spendRefresh: async () => {}, spendWithRefresh: async () => undefined } as unknown as TokenEndpointLimits;
  const hotPath = () =>
    refreshGrant({
      provider: server.system.provider,
      secrets: server.system.secrets,
      limits: limitsOff,
      grace: refreshGraceWindows(server.system.artifacts.flights, 10, systemClock),
      rotation: server.system.artifacts.refreshRotation,
      together: server.system.artifacts.together,
      accountExists: async () => true,
      log: createLogger('silent'),
    })!;
  const answered = async (headers: Record<string, string>, body: string) => 'status' in (await hotPath()({ headers, form: new URLSearchParams(body), ip: '127.0.0.1', message: {} }));

  it('answers the plain case itself: an unspent refresh token of the client, its secret in Basic or in the form', async () => {
    expect(await answered(basic(app), refreshBody(await family()))).toBe(true);
    expect(await answered({}, refreshBody(await family(), post(app)))).toBe(true);
  });

  it('leaves everything else to the provider, having written nothing', async () => {
    const token = await family();
    const spent = await family();
    expect(await answered(basic(app), refreshBody(spent))).toBe(true);
    const left: Array<[Record<string, string>, string]> = [
      [basic(app), `${refreshBody(token)}&scope=PROFILE_READ`], // narrowing
      [basic(app), `${refreshBody(token)}&resource=https://x.example`], // any other parameter
      [basic(app), `${refreshBody(token)}&refresh_token=${token}`],
      [basic(app), refreshBody(spent)], // reuse: the provider revokes the grant
      [basic(app), refreshBody('junk')],
      [basic(other), refreshBody(token)], // another client's token
      [basic({ ...app, client_secret: 'wrong' }), refreshBody(token)],
      [{}, refreshBody(token, `client_id=${app.client_id}`)],
      [{ ...basic(app), dpop: 'x' }, refreshBody(token)],
      [basic(app), `grant_type=authorization_code&code=x&redirect_uri=https://app.example.com/callback`],
    ];
    for (const [headers, body] of left) expect(await answered(headers, body), `${JSON.stringify(headers)} ${body}`).toBe(false);
    // The token left alone is still unspent: the provider refreshes it.
    const after = await raw(server.url, 'POST', `${server.url}${PATH}`, { ...FORM, ...basic(app) }, refreshBody(token));
    expect(after.status).toBe(200);
  });

  it("gives the provider's answer: status, headers and body (tokens aside), success and failure alike", async () => {
    const cases: Array<[Record<string, string>, (token: string) => string]> = [
      [{ ...FORM, ...basic(app) }, (t) => refreshBody(t)],
      [FORM, (t) => refreshBody(t, post(app))],
      [{ 'content-type': 'application/x-www-form-urlencoded; charset=utf-8', ...basic(app) }, (t) => refreshBody(t)],
      [{ ...FORM, ...basic(app) }, (t) => `${refreshBody(t)}&scope=PROFILE_READ`],
      [{ ...FORM, ...basic(app) }, () => refreshBody('junk')],
      [{ ...FORM, ...basic(other) }, (t) => refreshBody(t)],
      [{ ...FORM, ...basic({ ...app, client_secret: 'wrong' }) }, (t) => refreshBody(t)],
      [{ ...FORM, ...basic(app), origin: 'https://app.example.com' }, (t) => refreshBody(t)],
      [{ 'content-type': 'application/json', ...basic(app) }, (t) => JSON.stringify({ grant_type: 'refresh_token', refresh_token: t })],
    ];
    for (const [headers, body] of cases) {
      // Two families alike, one refreshed on each path.
      const [mine, theirs] = [await family(), await family()];
      const hot = await raw(server.url, 'POST', PATH, headers, body(mine));
      const provider = await raw(server.url, 'POST', `${server.url}${PATH}`, headers, body(theirs));
      expect(shaped(hot), `${JSON.stringify(headers)} ${body('<token>')}`).toEqual(shaped(provider));
    }
    const plain = json(await raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, refreshBody(await family())));
    expect(Object.keys(plain)).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
    expect(plain).toMatchObject({ expires_in: 1800, scope: SCOPE, token_type: 'bearer' });
  });

  it('stores what the provider stores: the same payloads, keys and indexes', async () => {
    const [mine, theirs] = [await family(), await family()];
    const hot = json(await raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, refreshBody(mine)));
    const provider = json(await raw(server.url, 'POST', `${server.url}${PATH}`, { ...FORM, ...basic(app) }, refreshBody(theirs)));
    const stored = async (model: string, id: unknown) => {
      const payload = await server.system.artifacts.adapterFor(model).find(String(id));
      expect(payload, `${model} ${String(id)}`).toBeTruthy();
      // What differs between two issuances: ids, times, the grant and session of each family.
      const { jti: _j, iat, exp, iiat: _ii, authTime, grantId, sessionUid, ...rest } = payload!;
      return { ...rest, lifetime: Number(exp) - Number(iat), authTime: typeof authTime, grantId: typeof grantId, sessionUid: typeof sessionUid };
    };
    expect(await stored('RefreshToken', hot.refresh_token)).toEqual(await stored('RefreshToken', provider.refresh_token));
    expect(await stored('AccessToken', hot.access_token)).toEqual(await stored('AccessToken', provider.access_token));
    expect(await stored('RefreshToken', hot.refresh_token)).toMatchObject({ rotations: 1, scope: SCOPE, clientId: app.client_id, accountId: String(user.id) });
  });

  it('issues tokens that work everywhere, and that revocation and suspension reach', async () => {
    const first = json(await raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, refreshBody(await family())));
    expect((await getMe(server.url, String(first.access_token))).status).toBe(200);
    // The provider refreshes what the hot path issued, and the other way round.
    const second = json(await raw(server.url, 'POST', `${server.url}${PATH}`, { ...FORM, ...basic(app) }, refreshBody(String(first.refresh_token))));
    expect(second.refresh_token).toEqual(expect.any(String));
    const third = json(await raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, refreshBody(String(second.refresh_token))));
    expect(third.refresh_token).toEqual(expect.any(String));
    // Revoking the refresh token ends its whole grant: the index the hot path wrote is found.
    const revoked = await raw(server.url, 'POST', '/v2/auth/oauth2/revoke', { ...FORM, ...basic(app) }, `token=${String(third.refresh_token)}`);
    expect(revoked.status).toBe(200);
    expect((await getMe(server.url, String(third.access_token))).status).toBe(401);
    expect((await getMe(server.url, String(first.access_token))).status).toBe(401);

    // Suspending the client ends what the hot path issued for it.
    const created = await clientsCreate(operator(server), { name: 'Short-lived', redirectUri: ['https://app.example.com/callback'], scope: ['PROFILE_READ'] });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    const shortLived = { client_id: created.client_id, client_secret: created.client_secret! };
    const issued = json(await raw(server.url, 'POST', PATH, { ...FORM, ...basic(shortLived) }, refreshBody(await family(shortLived, 'PROFILE_READ'))));
    expect((await getMe(server.url, String(issued.access_token))).status).toBe(200);
    await clientsSetStatus(operator(server), created.client_id, 'suspended');
    expect((await getMe(server.url, String(issued.access_token))).status).toBe(401);
    expect(await server.system.artifacts.adapterFor('RefreshToken').find(String(issued.refresh_token))).toBeUndefined();
  });

  it('gives a retry within the grace window the same answer, and revokes the grant on reuse once the new token was used', async () => {
    const token = await family();
    const first = await raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, refreshBody(token));
    const retry = await raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, refreshBody(token));
    expect(retry.status).toBe(200);
    expect(retry.body).toBe(first.body);
    const next = json(first);
    const used = await raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, refreshBody(String(next.refresh_token)));
    expect(used.status).toBe(200);
    // The first token again, now that its successor was used: reuse, the grant is revoked.
    const reuse = await raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, refreshBody(token));
    expect(reuse.status).toBe(400);
    expect(json(reuse).error).toBe('invalid_grant');
    expect((await getMe(server.url, String(json(used).access_token))).status).toBe(401);
  });

  it("keeps to the client's own grace window as the provider does (0: off; 1 s), whichever path answers first", async () => {
    for (const seconds of ['0', '1'] as const) {
      const own = await approvedClient(server, ['PROFILE_READ'], `Grace ${seconds} App`);
      await clientsSetRefreshGrace(operator(server), own.client_id, seconds);
      // The first presentation on the hot path (origin-form) or the provider's (absolute-form); the retry alike.
      for (const target of [PATH, `${server.url}${PATH}`]) {
        const token = await family(own, 'PROFILE_READ');
        const first = await raw(server.url, 'POST', target, { ...FORM, ...basic(own) }, refreshBody(token));
        expect(first.status).toBe(200);
        const retry = async () => json(await raw(server.url, 'POST', target, { ...FORM, ...basic(own) }, refreshBody(token))).error;
        if (seconds === '0') expect(await retry(), `0 s, ${target}`).toBe('invalid_grant');
        // 1 s: retried (the same answer, within the window) until refused as reuse, well before
        // the server's own window (10 s) would end. The window is the store's own expiry.
        else await eventually(async () => expect(await retry(), `1 s, ${target}`).toBe('invalid_grant'), { timeout: 8000, interval: 250 });
        expect((await getMe(server.url, String(json(first).access_token))).status).toBe(401);
      }
    }
  });

  it('answers concurrent presentations of one token with one answer and one family', async () => {
    const token = await family();
    const answers = await Promise.all(Array.from({ length: 8 }, () => raw(server.url, 'POST', PATH, { ...FORM, ...basic(app) }, refreshBody(token))));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
  });

  it("spends the client's own budget; over it, the client waits (429)", async () => {
    const limited = await approvedClient(server, ['PROFILE_READ'], 'Limited App');
    let token = await family(limited, 'PROFILE_READ');
    await clientsSetRateLimit(operator(server), limited.client_id, '3');
    const statuses: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      const answer = await raw(server.url, 'POST', PATH, { ...FORM, ...basic(limited) }, refreshBody(token));
      statuses.push(answer.status);
      if (answer.status === 200) token = String(json(answer).refresh_token);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('counts each request once, also one the provider answers after the hot path counted it (a twin)', async () => {
    const limited = await approvedClient(server, ['PROFILE_READ'], 'Twin Budget App');
    const token = await family(limited, 'PROFILE_READ');
    await clientsSetRateLimit(operator(server), limited.client_id, '6');
    // Four at once: they are read together, one rotates, the others are the provider's (the grace window).
    const twins = await Promise.all(Array.from({ length: 4 }, () => raw(server.url, 'POST', PATH, { ...FORM, ...basic(limited) }, refreshBody(token))));
    expect(twins.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    let next = String(json(twins[0]!).refresh_token);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const answer = await raw(server.url, 'POST', PATH, { ...FORM, ...basic(limited) }, refreshBody(next));
      statuses.push(answer.status);
      if (answer.status === 200) next = String(json(answer).refresh_token);
    }
    expect(statuses).toEqual([200, 200, 429]);
  });

  const redisKey = (model: string, id: string) => `${server.redis!.prefix}${model}:${artifactKey(id)}`;

  it('rotates a refresh token stored before tokens kept their grant key, reading its grant on its own', async () => {
    const token = await family();
    expect(await server.redis!.redis.hdel(redisKey('RefreshToken', token), 'grant')).toBe(1);
    expect(await answered(basic(app), refreshBody(token))).toBe(true);
  });

  it('writes nothing when the grant is revoked between reading the token and rotating it', async () => {
    const token = await family();
    const rotation = server.system.artifacts.refreshRotation!;
    const stored = (await rotation.read(token))!;
    expect(stored.grant).toMatchObject({ accountId: String(user.id), clientId: app.client_id });
    const grantId = String(stored.token.grantId);
    await server.redis!.redis.del(redisKey('Grant', grantId));
    const successor = (id: string) => ({ id, payload: { ...stored.token, jti: id, grantId }, expiresIn: 60 });
    expect(await rotation.rotate(token, successor('new-refresh-0123456789abcdef0123456789abc'), successor('new-access-0123456789abcdef0123456789abcd'))).toBe('spent');
    expect(await server.redis!.redis.hget(redisKey('RefreshToken', token), 'consumed')).toBeNull();
    expect(await server.redis!.redis.exists(redisKey('RefreshToken', 'new-refresh-0123456789abcdef0123456789abc'), redisKey('AccessToken', 'new-access-0123456789abcdef0123456789abcd'))).toBe(0);
    expect(await rotation.read(token)).toMatchObject({ grant: null });
  });
});
