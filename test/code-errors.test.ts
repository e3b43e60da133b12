// Issue 38 point 2: a late or repeated code exchange is still `invalid_grant`, and its
// error_description says in words what happened (expired, already used); a code the client was
// never given reads like an unknown one (no oracle). A missing response_type is named as such,
// not as the library's response_mode complaint.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { tokenRequest } from './support/oauth.ts';
import { approvedClient, codeFor, newUser, REDIRECT, type TestClient } from './support/fixtures.ts';
import type { TestUser } from './support/oauth.ts';
import { artifactKeyOf } from '../src/storage/redis-keys.ts';
import { codeRefusalText } from '../src/oauth/error-descriptions.ts';

describe('token errors for codes, in words (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let client: TestClient;
  let other: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    server = await startTestServer(storage);
    [client, other, user] = await Promise.all([approvedClient(server, ['PROFILE_READ']), approvedClient(server, ['PROFILE_READ'], 'Other'), newUser(server)]);
  });
  afterAll(() => server?.close());
  afterEach(() => vi.useRealTimers());

  const exchange = (code: string, as: TestClient = client) => tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...as });

  it('a repeated exchange: invalid_grant, "already used"', async () => {
    const code = await codeFor(server, client, user, 'PROFILE_READ');
    expect((await exchange(code)).status).toBe(200);
    const again = await exchange(code);
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ error: 'invalid_grant', error_description: codeRefusalText('used') });
  });

  it('a late exchange (over 60 seconds): invalid_grant, "expired"', async () => {
    const code = await codeFor(server, client, user, 'PROFILE_READ');
    // Only the clock moves (the provider reads Date.now()); timers and I/O run as usual.
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    vi.setSystemTime(Date.now() + 61_000);
    // The store's own clock moves as far: the code's key lives 61 s less (gone, if it were kept only until its expiry).
    const { redis, prefix } = server.redis!;
    const key = artifactKeyOf(prefix, 'AuthorizationCode', code);
    const left = await redis.pttl(key);
    if (left > 61_000) await redis.pexpire(key, left - 61_000);
    else await redis.del(key);
    const late = await exchange(code);
    expect(late.status).toBe(400);
    // Told apart from an unknown code, whose words also mention expiry.
    expect(late.body).toEqual({ error: 'invalid_grant', error_description: codeRefusalText('expired') });
    expect(codeRefusalText('expired')).toMatch(/^the authorization code expired \(codes are valid for 60 seconds\)/);
  });

  it("another client's code and a made-up code read alike: not valid, nothing more", async () => {
    const code = await codeFor(server, client, user, 'PROFILE_READ');
    const foreign = await exchange(code, other);
    const madeUp = await exchange('not-a-code-at-all-0123456789');
    expect(foreign.status).toBe(400);
    expect(foreign.body).toEqual(madeUp.body);
    expect(foreign.body).toEqual({ error: 'invalid_grant', error_description: expect.stringMatching(/not valid/) });
    // The code still works for its own client: the foreign attempt changed nothing.
    expect((await exchange(code)).status).toBe(200);
  });

  it('a missing response_type is named as such in the redirect', async () => {
    const url = new URL(`${server.url}/auth/oauth2/authorize`);
    url.search = new URLSearchParams({ client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's1' }).toString();
    const res = await new Browser().get(url.href);
    expect(res.status).toBe(303);
    const back = new URL(res.location!);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('error_description')).toMatch(/response_type parameter is missing/);
    expect(back.searchParams.get('state')).toBe('s1');
  });
});
