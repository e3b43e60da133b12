// The refresh grace window (src/oauth/refresh-grace.ts) for every kind of client (issue 47): the
// registry's confidential and public clients, clients described by a metadata document and
// clients registered openly (RFC 7591), each with `none` or `private_key_jwt`. Two refreshes of
// one token racing, or a retry within the client's window, get the same answer and the grant
// lives; after the window, or once the successor was used, reuse detection revokes the grant.
// A client that signs its requests is the same client only by an assertion the provider
// verified: a bad one, or another client's, gets no remembered answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { getMe } from './support/oauth.ts';
import { startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { clientKinds, KINDS, type Fields, type KindClient, type KindName } from './support/client-kinds.ts';
import { testClock, type TestClock } from './support/clock.ts';
import { PUBLIC_CLIENT_GRACE_SECONDS } from '../src/oauth/refresh-grace.ts';

// The server's window (REFRESH_GRACE_SECONDS); public kinds get PUBLIC_CLIENT_GRACE_SECONDS.
const WINDOW_S = 5;

describe.each<Storage>(['redis', 'sql'])('refresh grace window for every kind of client (%s storage)', (storage) => {
  let server: TestServer;
  let docs: DocumentServer;
  let audience: string;
  let makeClient: ReturnType<typeof clientKinds>;
  const clock: TestClock = testClock();

  beforeAll(async () => {
    docs = await startDocumentServer();
    server = await startTestServer(
      storage,
      {
        REFRESH_GRACE_SECONDS: String(WINDOW_S),
        CIMD_ALLOW_LOOPBACK: 'true',
        CIMD_MAX_USERS: '1000',
        DYNAMIC_REGISTRATION: 'open',
        RATE_LIMIT_AUTH_FAILURES: '1000',
        RATE_LIMIT_REFRESH_PER_MINUTE_PER_USER: '1000',
      },
      { clock },
    );
    audience = `${server.url}/v2/auth/oauth2/token`;
    makeClient = clientKinds(server, docs);
  });
  afterAll(async () => {
    await server?.close();
    await docs?.close();
  });

  /** A new client of this kind, with its default window in seconds. */
  async function clientOf(kind: KindName): Promise<KindClient & { window: number }> {
    const client = await makeClient(kind);
    return { ...client, window: client.public ? Math.min(PUBLIC_CLIENT_GRACE_SECONDS, WINDOW_S) : WINDOW_S };
  }

  async function refresh(refreshToken: string, auth: Fields) {
    const res = await fetch(audience, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, ...auth }) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }
  const alive = async (body: Record<string, unknown>) => (await getMe(server.url, body.access_token as string)).status;

  it.each(KINDS)('%s: two refreshes racing get one answer, and the grant lives', async (kind) => {
    const client = await clientOf(kind);
    const t0 = await client.tokens();
    const [a, b] = await Promise.all([refresh(t0.refresh_token, client.auth()), refresh(t0.refresh_token, client.auth())]);
    expect([a.status, b.status], JSON.stringify([a.body, b.body])).toEqual([200, 200]);
    expect(b.body).toEqual(a.body);
    expect(await alive(a.body)).toBe(200);
    expect((await refresh(a.body.refresh_token as string, client.auth())).status).toBe(200);
  });

  it.each(KINDS)('%s: a retry within its window gets the same answer; after it, reuse revokes the grant', async (kind) => {
    clock.reset();
    const client = await clientOf(kind);
    const t0 = await client.tokens();
    const first = await refresh(t0.refresh_token, client.auth());
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    clock.advance(client.window * 1000 - 1000);
    const retry = await refresh(t0.refresh_token, client.auth());
    expect(retry, `a retry ${client.window - 1} s later`).toEqual(first);
    expect(await alive(first.body)).toBe(200);

    clock.advance(1500);
    const late = await refresh(t0.refresh_token, client.auth());
    expect(late.body.error).toBe('invalid_grant');
    expect(await alive(first.body)).toBe(401);
  });

  it.each(KINDS)('%s: once the successor was used, the spent token is reuse', async (kind) => {
    clock.reset();
    const client = await clientOf(kind);
    const t0 = await client.tokens();
    const first = await refresh(t0.refresh_token, client.auth());
    const second = await refresh(first.body.refresh_token as string, client.auth());
    expect(second.status).toBe(200);
    expect((await refresh(t0.refresh_token, client.auth())).body.error).toBe('invalid_grant');
    expect(await alive(second.body)).toBe(401);
  });

  it.each(KINDS.filter((k) => k.endsWith('private_key_jwt')))('%s: a retry with a bad assertion, or another client’s, gets no remembered answer', async (kind) => {
    clock.reset();
    const client = await clientOf(kind);
    const other = await clientOf(kind);
    const t0 = await client.tokens();
    const once = client.auth();
    const first = await refresh(t0.refresh_token, once);
    expect(first.status).toBe(200);
    // Signed with a key the client does not have: refused as the client (401), nothing answered.
    const forged = await refresh(t0.refresh_token, client.badAuth!());
    expect([forged.status, forged.body.error]).toEqual([401, 'invalid_client']);
    expect(forged.body.access_token).toBeUndefined();
    // Another client, properly authenticated: the token is not its own.
    const stranger = await refresh(t0.refresh_token, other.auth());
    expect(stranger.status).toBe(400);
    expect(stranger.body.access_token).toBeUndefined();
    // The first presentation's assertion sent again (replayed): no proof either.
    const replayed = await refresh(t0.refresh_token, once);
    expect([replayed.status, replayed.body.error]).toEqual([401, 'invalid_client']);
    expect(replayed.body.access_token).toBeUndefined();
    // The client itself, with a new assertion, still gets its answer, and its grant lives.
    expect(await refresh(t0.refresh_token, client.auth())).toEqual(first);
    expect(await alive(first.body)).toBe(200);
  });
});
