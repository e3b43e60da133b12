// A refresh retried or raced within seconds gets the same answer (a grace window of 2 s here):
// one token family, never two live refresh tokens; outside the window, after the new token was
// used, or from another client: reuse detection revokes the grant; nothing usable at rest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { getMe, tokenRequest } from './support/oauth.ts';
import { approvedClient, newUser, tokensFor, type TestClient } from './support/fixtures.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const WINDOW_S = 2;

describe.each<Storage>(['redis', 'sql'])('refresh grace window (%s storage)', (storage) => {
  let server: TestServer;
  let client: TestClient;
  let user: Awaited<ReturnType<typeof newUser>>;
  beforeAll(async () => {
    server = await startTestServer(storage, { REFRESH_GRACE_SECONDS: String(WINDOW_S) });
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
    await sleep(1000);
    const retry = await refresh(t0.refresh_token);
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(first.body);

    await sleep(WINDOW_S * 1000 + 500);
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
