// Issue 45 item 2: the token endpoint's limits take the verifier's word on who authenticated, for
// every method — a client assertion (private_key_jwt) as much as a secret — and never replace an
// answer the provider fulfilled. Agents described by a metadata document or registered openly
// used to have each successful request counted as a failed authentication, in one counter shared
// by every such id from an address: from the 11th within 15 minutes, tokens already issued (and
// the refresh token already spent) were answered 429, and the agent's retry revoked the grant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { newUser } from './support/fixtures.ts';
import { getMe } from './support/oauth.ts';
import { AGENT_REDIRECT, agentCode, startDocumentServer, type DocumentServer } from './support/cimd.ts';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const AUTH_FAILURES = 10; // the default limit per (client id, address)
const AUTH_FAILURES_PER_IP = 40;

/** A client assertion (RFC 7523) signed with ES256: header.payload.signature. */
function clientAssertion(privateKey: KeyObject, clientId: string, audience: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const input = `${part({ alg: 'ES256', typ: 'JWT', kid: 'k1' })}.${part({ iss: clientId, sub: clientId, aud: audience, jti: randomUUID(), iat: now, exp: now + 60 })}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

interface Agent {
  clientId: string;
  key: KeyObject;
}

function newKeys() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' }] } };
}

describe('token endpoint limits for agents that sign (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let docs: DocumentServer;
  let audience: string;

  beforeAll(async () => {
    docs = await startDocumentServer();
    server = await startTestServer(storage, {
      TRUST_PROXY: 'true', // the tests speak from several addresses
      CIMD_ALLOW_LOOPBACK: 'true',
      CIMD_MAX_USERS: '100',
      DYNAMIC_REGISTRATION: 'open',
      RATE_LIMIT_AUTH_FAILURES: String(AUTH_FAILURES),
      RATE_LIMIT_AUTH_FAILURES_PER_IP: String(AUTH_FAILURES_PER_IP),
      // Not what this file is about: a user's refreshes are many here.
      RATE_LIMIT_REFRESH_PER_MINUTE_PER_USER: '1000',
    });
    audience = `${server.url}/v2/auth/oauth2/token`;
  });
  afterAll(async () => {
    await server?.close();
    await docs?.close();
  });

  async function post(ip: string, fields: Record<string, string>) {
    const res = await fetch(audience, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
      body: new URLSearchParams(fields),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, string> };
  }

  /** A metadata-document agent that authenticates with private_key_jwt (its keys at its jwks_uri). */
  function documentAgent(name: string): Agent {
    const { privateKey, jwks } = newKeys();
    const keys = docs.serve(`/${name}-keys.json`, { body: jwks });
    return { clientId: docs.agent(`/${name}.json`, { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: keys }), key: privateKey };
  }

  /** An agent registered with DYNAMIC_REGISTRATION=open, private_key_jwt with its keys inline. */
  async function registeredAgent(): Promise<Agent> {
    const { privateKey, jwks } = newKeys();
    const res = await fetch(`${server.url}/v2/auth/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Signing Agent', redirect_uris: [AGENT_REDIRECT], token_endpoint_auth_method: 'private_key_jwt', jwks, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] }),
    });
    const body = (await res.json()) as Record<string, string>;
    expect(res.status, JSON.stringify(body)).toBe(201);
    return { clientId: body.client_id!, key: privateKey };
  }

  const signed = (agent: Agent, key = agent.key) => ({ client_assertion_type: ASSERTION_TYPE, client_assertion: clientAssertion(key, agent.clientId, audience) });

  async function exchange(ip: string, agent: Agent, user: Awaited<ReturnType<typeof newUser>>) {
    const { code, verifier } = await agentCode(server.url, agent.clientId, user, 'PROFILE_READ');
    return post(ip, { grant_type: 'authorization_code', code, redirect_uri: AGENT_REDIRECT, code_verifier: verifier, ...signed(agent) });
  }
  const refresh = (ip: string, agent: Agent, refreshToken: string, key?: KeyObject) => post(ip, { grant_type: 'refresh_token', refresh_token: refreshToken, ...signed(agent, key) });

  /** Two code exchanges and 13 refreshes from one address: every one answered with tokens, and the grant lives. */
  async function fifteenSuccesses(ip: string, agent: Agent) {
    let answered = 0;
    const expectTokens = (res: Awaited<ReturnType<typeof post>>) => {
      answered++;
      expect([res.status, res.body.error], `token request ${answered}`).toEqual([200, undefined]);
      return res.body;
    };
    let tokens: Record<string, string> = {};
    for (const [user, refreshes] of [[await newUser(server), 6], [await newUser(server), 7]] as const) {
      tokens = expectTokens(await exchange(ip, agent, user));
      for (let i = 0; i < refreshes; i++) tokens = expectTokens(await refresh(ip, agent, tokens.refresh_token!));
    }
    expect(answered).toBe(15);
    // Its refreshes keep working, and its grant lives.
    const last = await refresh(ip, agent, tokens.refresh_token!);
    expect(last.status, JSON.stringify(last.body)).toBe(200);
    expect((await getMe(server.url, last.body.access_token)).status).toBe(200);
  }

  it('a metadata-document agent with private_key_jwt: 15 successful token requests from one address within the window, all answered with tokens', async () => {
    await fifteenSuccesses('198.51.100.10', documentAgent('agent-many'));
  });

  it('an openly registered agent with private_key_jwt: 15 successful token requests from one address, all answered with tokens', async () => {
    await fifteenSuccesses('198.51.100.11', await registeredAgent());
  });

  it("failures naming made-up ids from an address do not hold back another agent's requests from it: each id has its own count", async () => {
    const ip = '198.51.100.12';
    const made = `${docs.url}/made-up.json`;
    const refused = [];
    for (let i = 0; i < AUTH_FAILURES + 2; i++) refused.push(await post(ip, { grant_type: 'refresh_token', refresh_token: 'x', client_id: made }));
    // Refused as a client that is not there (no document at that address).
    expect(refused.slice(0, AUTH_FAILURES).map((r) => [r.status, r.body.error])).toEqual(Array(AUTH_FAILURES).fill([400, 'invalid_client']));
    expect(refused.slice(AUTH_FAILURES).map((r) => [r.status, r.body.error])).toEqual([[429, 'slow_down'], [429, 'slow_down']]);
    // Another agent from the same address: its own failure is its first (401, not 429)…
    const agent = documentAgent('agent-neighbour');
    const { body: tokens } = await exchange(ip, agent, await newUser(server));
    expect(tokens.refresh_token).toBeTruthy();
    const wrong = await refresh(ip, agent, tokens.refresh_token!, generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);
    expect([wrong.status, wrong.body.error]).toEqual([401, 'invalid_client']);
    // …and its authenticated requests are answered.
    expect((await refresh(ip, agent, tokens.refresh_token!)).status).toBe(200);
  });

  it('a made-up id per request escapes nothing: the address counts every failure', async () => {
    const ip = '198.51.100.13';
    const statuses = [];
    for (let i = 0; i < AUTH_FAILURES_PER_IP + 2; i++) statuses.push((await post(ip, { grant_type: 'refresh_token', refresh_token: 'x', client_id: `${docs.url}/made-up-${i}.json` })).status);
    expect(statuses.slice(0, AUTH_FAILURES_PER_IP)).toEqual(Array(AUTH_FAILURES_PER_IP).fill(400));
    expect(statuses.slice(AUTH_FAILURES_PER_IP)).toEqual([429, 429]);
  });

  it('an agent whose assertions fail is held back past the limit (slow_down with Retry-After); a replayed assertion is a failure', async () => {
    const ip = '198.51.100.14';
    const agent = documentAgent('agent-failing');
    const { body: tokens } = await exchange(ip, agent, await newUser(server));
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const answers = [];
    for (let i = 0; i < AUTH_FAILURES - 1; i++) answers.push(await refresh(ip, agent, tokens.refresh_token!, other));
    // A valid assertion sent again: its signature verifies, and the library refuses it as replayed.
    const once = signed(agent);
    const first = await post(ip, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, ...once });
    expect(first.status).toBe(200);
    answers.push(await post(ip, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token!, ...once }));
    expect(answers.map((r) => r.status)).toEqual(Array(AUTH_FAILURES).fill(401));
    const held = await refresh(ip, agent, first.body.refresh_token!, other);
    expect([held.status, held.body.error, held.retryAfter]).toEqual([429, 'slow_down', '1']);
  });

  it('a 429 is never answered for a request the provider fulfilled: over the limit, a refresh that authenticates is answered, and one that does not spends nothing', async () => {
    const ip = '198.51.100.15';
    const agent = documentAgent('agent-held');
    const { body: tokens } = await exchange(ip, agent, await newUser(server));
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    for (let i = 0; i < AUTH_FAILURES; i++) expect((await refresh(ip, agent, tokens.refresh_token!, other)).status).toBe(401);
    // Over the limit: the refresh token presented with a failing assertion is answered 429…
    const held = await refresh(ip, agent, tokens.refresh_token!, other);
    expect([held.status, held.body.error]).toEqual([429, 'slow_down']);
    // …and was not spent: the same token, with the agent's key, gets tokens, which work.
    const answered = await refresh(ip, agent, tokens.refresh_token!);
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    expect((await getMe(server.url, answered.body.access_token)).status).toBe(200);
    const again = await refresh(ip, agent, answered.body.refresh_token!);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect((await getMe(server.url, again.body.access_token)).status).toBe(200);
  });
});
