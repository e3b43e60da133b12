// The refresh grace window (src/oauth/refresh-grace.ts) for every kind of client (issue 47): the
// registry's confidential and public clients, clients described by a metadata document and
// clients registered openly (RFC 7591), each with `none` or `private_key_jwt`. Two refreshes of
// one token racing, or a retry within the client's window, get the same answer and the grant
// lives; after the window, or once the successor was used, reuse detection revokes the grant.
// A client that signs its requests is the same client only by an assertion the provider
// verified: a bad one, or another client's, gets no remembered answer.
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { authorize, getMe, tokenRequest } from './support/oauth.ts';
import { approvedClient, newUser, operator, REDIRECT, tokensFor } from './support/fixtures.ts';
import { AGENT_REDIRECT, agentCode, startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { Browser } from './support/browser.ts';
import { testClock, type TestClock } from './support/clock.ts';
import { clientsCreate, clientsSetStatus } from '../src/admin/commands.ts';
import { PUBLIC_CLIENT_GRACE_SECONDS } from '../src/oauth/refresh-grace.ts';

// The server's window (REFRESH_GRACE_SECONDS); public kinds get PUBLIC_CLIENT_GRACE_SECONDS.
const WINDOW_S = 5;
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

type Fields = Record<string, string>;
type Tokens = { access_token: string; refresh_token: string };

/** One client of one kind: how it gets tokens and how it authenticates a refresh. */
interface Kind {
  tokens(): Promise<Tokens>;
  /** Its authentication of one request (a fresh assertion each time, for one that signs). */
  auth(): Fields;
  /** Its default window in seconds. */
  window: number;
  /** A client that signs: authentication with another key. */
  badAuth?(): Fields;
}

type KindName = 'registry confidential' | 'registry public' | 'metadata document, none' | 'metadata document, private_key_jwt' | 'registered, none' | 'registered, private_key_jwt';
const KINDS: KindName[] = ['registry confidential', 'registry public', 'metadata document, none', 'metadata document, private_key_jwt', 'registered, none', 'registered, private_key_jwt'];

function newKeys() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' }] } };
}

/** A client assertion (RFC 7523) signed with ES256: header.payload.signature. */
function clientAssertion(privateKey: KeyObject, clientId: string, audience: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const input = `${part({ alg: 'ES256', typ: 'JWT', kid: 'k1' })}.${part({ iss: clientId, sub: clientId, aud: audience, jti: randomUUID(), iat: now, exp: now + 60 })}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

describe.each<Storage>(['redis', 'sql'])('refresh grace window for every kind of client (%s storage)', (storage) => {
  let server: TestServer;
  let docs: DocumentServer;
  let audience: string;
  const clock: TestClock = testClock();
  let made = 0;

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
  });
  afterAll(async () => {
    await server?.close();
    await docs?.close();
  });

  /** Tokens of a client that authorizes with PKCE (the registry's public clients, agents). */
  async function pkceTokens(clientId: string, redirectUri: string, auth: Fields): Promise<Tokens> {
    const user = await newUser(server);
    const { code, verifier } =
      redirectUri === AGENT_REDIRECT
        ? await agentCode(server.url, clientId, user, 'PROFILE_READ')
        : await (async () => {
            const verifier = randomBytes(32).toString('base64url');
            const challenge = createHash('sha256').update(verifier).digest('base64url');
            const back = await authorize(new Browser(), server.url, { client_id: clientId, redirect_uri: redirectUri, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }, user);
            return { code: back.searchParams.get('code')!, verifier };
          })();
    const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier, ...auth });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Tokens;
  }

  async function register(body: Record<string, unknown>): Promise<string> {
    const res = await fetch(`${server.url}/v2/auth/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Agent', redirect_uris: [AGENT_REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], ...body }),
    });
    const registered = (await res.json()) as Record<string, string>;
    expect(res.status, JSON.stringify(registered)).toBe(201);
    return registered.client_id!;
  }

  /** A new client of this kind. */
  async function clientOf(kind: KindName): Promise<Kind> {
    const n = ++made;
    const publicWindow = Math.min(PUBLIC_CLIENT_GRACE_SECONDS, WINDOW_S);
    const signing = (clientId: string, key: KeyObject): Kind => {
      const auth = () => ({ client_assertion_type: ASSERTION_TYPE, client_assertion: clientAssertion(key, clientId, audience) });
      return { tokens: () => pkceTokens(clientId, AGENT_REDIRECT, auth()), auth, window: WINDOW_S, badAuth: () => ({ client_assertion_type: ASSERTION_TYPE, client_assertion: clientAssertion(newKeys().privateKey, clientId, audience) }) };
    };
    const pub = (clientId: string, redirectUri: string): Kind => ({ tokens: () => pkceTokens(clientId, redirectUri, { client_id: clientId }), auth: () => ({ client_id: clientId }), window: publicWindow });
    switch (kind) {
      case 'registry confidential': {
        const client = await approvedClient(server, ['PROFILE_READ'], `App ${n}`);
        return { tokens: async () => tokensFor(server, client, await newUser(server), 'PROFILE_READ'), auth: () => ({ ...client }), window: WINDOW_S };
      }
      case 'registry public': {
        const created = await clientsCreate(operator(server), { name: `Phone App ${n}`, redirectUri: [REDIRECT], scope: ['PROFILE_READ'], public: true });
        await clientsSetStatus(operator(server), created.client_id, 'approved');
        return pub(created.client_id, REDIRECT);
      }
      case 'metadata document, none':
        return pub(docs.agent(`/agent-${n}.json`), AGENT_REDIRECT);
      case 'metadata document, private_key_jwt': {
        const { privateKey, jwks } = newKeys();
        const keys = docs.serve(`/agent-${n}-keys.json`, { body: jwks });
        return signing(docs.agent(`/agent-${n}.json`, { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: keys }), privateKey);
      }
      case 'registered, none':
        return pub(await register({ token_endpoint_auth_method: 'none' }), AGENT_REDIRECT);
      case 'registered, private_key_jwt': {
        const { privateKey, jwks } = newKeys();
        return signing(await register({ token_endpoint_auth_method: 'private_key_jwt', jwks }), privateKey);
      }
    }
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
