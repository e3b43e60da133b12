// Scopes over real HTTP: strict validation of the authorization request, stable grants across
// refreshes, and /v2/me GET and PATCH under every relevant combination of scopes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { getMe, tokenRequest } from './support/oauth.ts';
import { approvedClient, newUser, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';

let server: TestServer;
let client: TestClient;
let user: Awaited<ReturnType<typeof newUser>>;

beforeAll(async () => {
  server = await startTestServer('redis');
  client = await approvedClient(server, ['PROFILE_READ', 'PROFILE_WRITE', 'BOOKING_READ', 'ORG_PROFILE_READ']);
  user = await newUser(server, 'Scope Tester');
});
afterAll(() => server?.close());

/** The authorization request's outcome before any sign-in: an error redirect, or a page. */
async function requestAuthorization(query: string) {
  return new Browser().follow(`${server.url}/auth/oauth2/authorize?${query}`, server.url);
}

describe('authorization request scope validation', () => {
  const base = () => `response_type=code&client_id=${client.client_id}&redirect_uri=${encodeURIComponent(REDIRECT)}&state=st`;

  it.each([
    ['a scope outside the client set', 'scope=PROFILE_READ%20SCHEDULE_READ', 'SCHEDULE_READ'],
    ['an unknown scope', 'scope=PROFILE_READ+NOT_A_SCOPE', 'NOT_A_SCOPE'],
    ['a lower-case catalogue name', 'scope=profile_read', 'profile_read'],
    ['openid', 'scope=openid%20PROFILE_READ', 'openid'],
  ])('refuses %s with invalid_scope, redirected with state and iss, no code', async (_name, scope, refused) => {
    const page = await requestAuthorization(`${base()}&${scope}`);
    expect(page.status).toBe(303);
    const back = new URL(page.location!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('error')).toBe('invalid_scope');
    expect(back.searchParams.get('scope')).toBe(refused);
    expect(back.searchParams.get('state')).toBe('st');
    expect(back.searchParams.get('iss')).toBe(`${server.url}/v2/auth/oauth2`);
    expect(back.searchParams.get('code')).toBeNull();
  });

  it.each([['no scope parameter', ''], ['an empty scope', '&scope='], ['only separators', '&scope=%20,%20']])(
    'refuses %s for a non-legacy client',
    async (_name, scope) => {
      const page = await requestAuthorization(`${base()}${scope}`);
      const back = new URL(page.location!);
      expect(back.searchParams.get('error')).toBe('invalid_scope');
      expect(back.searchParams.get('code')).toBeNull();
    },
  );

  it.each([
    ['%20', 'PROFILE_READ%20BOOKING_READ'],
    ['+', 'PROFILE_READ+BOOKING_READ'],
    [',', 'PROFILE_READ,BOOKING_READ'],
    ['a mix with duplicates', 'BOOKING_READ,+PROFILE_READ%20,BOOKING_READ'],
  ])('accepts scopes separated by %s', async (_name, scope) => {
    const page = await requestAuthorization(`${base()}&scope=${scope}`);
    expect(page.status).toBe(200);
    expect(page.$('input[name=password]')).toHaveLength(1);
  });

  it('grants exactly the requested scopes, keeps them across refreshes, and refuses to widen them', async () => {
    const tokens = await tokensFor(server, client, user, 'BOOKING_READ,PROFILE_READ');
    expect(tokens.scope.split(' ').sort()).toEqual(['BOOKING_READ', 'PROFILE_READ']);

    const refreshed = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client });
    expect(refreshed.status).toBe(200);
    expect((refreshed.body.scope as string).split(' ').sort()).toEqual(['BOOKING_READ', 'PROFILE_READ']);

    const widened = await tokenRequest(server.url, {
      grant_type: 'refresh_token',
      refresh_token: refreshed.body.refresh_token as string,
      scope: 'PROFILE_READ PROFILE_WRITE',
      ...client,
    });
    expect(widened.status).toBe(400);
    expect(widened.body.error).toBe('invalid_scope');
  });
});

describe('/v2/me with each combination of profile scopes', () => {
  const combos: Array<[string, { get: number; patch: number }]> = [
    ['PROFILE_READ', { get: 200, patch: 403 }],
    ['PROFILE_WRITE', { get: 403, patch: 200 }],
    ['PROFILE_READ PROFILE_WRITE', { get: 200, patch: 200 }],
    ['BOOKING_READ', { get: 403, patch: 403 }],
    ['ORG_PROFILE_READ', { get: 403, patch: 403 }],
  ];

  it.each(combos)('%s → GET %j', async (scope, expected) => {
    const { access_token } = await tokensFor(server, client, user, scope);
    const got = await getMe(server.url, access_token);
    expect(got.status).toBe(expected.get);
    if (expected.get === 403) {
      expect(got.challenge).toBe('Bearer realm="api", error="insufficient_scope", scope="PROFILE_READ"');
      expect(got.body).toEqual({ status: 'error', error: { code: 'insufficient_scope', message: expect.any(String) } });
    }
    const patched = await patchMe(access_token, { timeZone: 'Asia/Tokyo' });
    expect(patched.status).toBe(expected.patch);
    if (expected.patch === 403) expect(patched.challenge).toContain('scope="PROFILE_WRITE"');
    if (expected.patch === 200) expect(patched.body.data.timeZone).toBe('Asia/Tokyo');
  });

  it('PATCH changes name and time zone, and refuses bad input with 400 changing nothing', async () => {
    const { access_token } = await tokensFor(server, client, user, 'PROFILE_READ PROFILE_WRITE');
    const ok = await patchMe(access_token, { name: '  Grace B. Hopper ', timeZone: 'America/New_York', ignored: true });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ name: 'Grace B. Hopper', timeZone: 'America/New_York' });

    for (const body of [
      { name: 'Valid', timeZone: 'Mars/Olympus_Mons' },
      { name: '' },
      { name: '   ' },
      { name: 'x'.repeat(201) },
      { name: 'line\nbreak' },
      { name: 42 },
      { timeZone: null },
      {},
      [],
      'just a string',
    ]) {
      const res = await patchMe(access_token, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toEqual({ status: 'error', error: { code: 'invalid_request', message: expect.any(String) } });
    }
    for (const raw of ['{"name":', 'not json']) {
      const res = await fetch(`${server.url}/v2/me`, { method: 'PATCH', headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' }, body: raw });
      expect(res.status).toBe(400);
      expect((await res.json()).status).toBe('error');
    }
    const after = await getMe(server.url, access_token);
    expect(after.body.data).toMatchObject({ name: 'Grace B. Hopper', timeZone: 'America/New_York' });
  });
});

async function patchMe(accessToken: string, body: unknown) {
  const res = await fetch(`${server.url}/v2/me`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any>, challenge: res.headers.get('www-authenticate') };
}
