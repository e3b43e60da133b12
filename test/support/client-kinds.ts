// One client of each kind (issue 47: one client directory), for tests that hold a rule for every
// kind: the registry's confidential and public clients, clients described by a metadata document
// (test/support/cimd.ts serves it) and clients registered openly (RFC 7591), each of the last two
// with `none` or `private_key_jwt`. The server runs with CIMD_ALLOW_LOOPBACK=true and
// DYNAMIC_REGISTRATION=open.
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign, type KeyObject } from 'node:crypto';
import { expect } from 'vitest';
import type { TestServer } from './server.ts';
import { authorize, tokenRequest, type TestUser } from './oauth.ts';
import { approvedClient, newUser, operator, REDIRECT, tokensFor } from './fixtures.ts';
import { AGENT_REDIRECT, agentCode, type DocumentServer } from './cimd.ts';
import { Browser } from './browser.ts';
import { clientsCreate, clientsSetStatus } from '../../src/admin/commands.ts';

export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export type Fields = Record<string, string>;
export type Tokens = { access_token: string; refresh_token: string };

export type KindName = 'registry confidential' | 'registry public' | 'metadata document, none' | 'metadata document, private_key_jwt' | 'registered, none' | 'registered, private_key_jwt';
export const KINDS: KindName[] = ['registry confidential', 'registry public', 'metadata document, none', 'metadata document, private_key_jwt', 'registered, none', 'registered, private_key_jwt'];

/** One client of one kind: its id and name, how it gets tokens and how it authenticates a request. */
export interface KindClient {
  clientId: string;
  name: string;
  /** Tokens for a new user (or `user`), through sign-in, Allow and the code exchange. */
  tokens(user?: TestUser): Promise<Tokens>;
  /** Its authentication of one request (a fresh assertion each time, for one that signs). */
  auth(): Fields;
  /** Whether it is public (`none`). */
  public: boolean;
  /** A client that signs: an assertion signed with another key. */
  badAuth?(): Fields;
}

export function newKeys() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' }] } };
}

/** A client assertion (RFC 7523) signed with ES256: header.payload.signature. */
export function clientAssertion(privateKey: KeyObject, clientId: string, audience: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const input = `${part({ alg: 'ES256', typ: 'JWT', kid: 'k1' })}.${part({ iss: clientId, sub: clientId, aud: audience, jti: randomUUID(), iat: now, exp: now + 60 })}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

/** Registers a client openly (RFC 7591) with a code flow's grant and response types; answers its id. */
export async function registerClient(server: TestServer, body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${server.url}/v2/auth/oauth2/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [AGENT_REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], ...body }),
  });
  const registered = (await res.json()) as Record<string, string>;
  expect(res.status, JSON.stringify(registered)).toBe(201);
  return registered.client_id!;
}

/** Makes clients of every kind on `server`, their documents served by `docs`. */
export function clientKinds(server: TestServer, docs: DocumentServer) {
  const audience = `${server.url}/v2/auth/oauth2/token`;
  let made = 0;

  /** Tokens of a client that authorizes with PKCE (the registry's public clients, agents). */
  async function pkceTokens(clientId: string, redirectUri: string, auth: Fields, user: TestUser): Promise<Tokens> {
    let code: string;
    let verifier: string;
    if (redirectUri === AGENT_REDIRECT) ({ code, verifier } = await agentCode(server.url, clientId, user, 'PROFILE_READ'));
    else {
      verifier = randomBytes(32).toString('base64url');
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      const back = await authorize(new Browser(), server.url, { client_id: clientId, redirect_uri: redirectUri, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }, user);
      code = back.searchParams.get('code')!;
    }
    const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier, ...auth });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Tokens;
  }

  const register = (body: Record<string, unknown>) => registerClient(server, body);

  const signing = (clientId: string, name: string, key: KeyObject): KindClient => {
    const auth = () => ({ client_assertion_type: ASSERTION_TYPE, client_assertion: clientAssertion(key, clientId, audience) });
    return {
      clientId,
      name,
      tokens: async (user) => pkceTokens(clientId, AGENT_REDIRECT, auth(), user ?? (await newUser(server))),
      auth,
      public: false,
      badAuth: () => ({ client_assertion_type: ASSERTION_TYPE, client_assertion: clientAssertion(newKeys().privateKey, clientId, audience) }),
    };
  };
  const pub = (clientId: string, name: string, redirectUri: string): KindClient => ({
    clientId,
    name,
    tokens: async (user) => pkceTokens(clientId, redirectUri, { client_id: clientId }, user ?? (await newUser(server))),
    auth: () => ({ client_id: clientId }),
    public: true,
  });

  /** A new client of this kind. */
  return async function clientOf(kind: KindName): Promise<KindClient> {
    const n = ++made;
    const name = `App ${n} ${kind.replace(/[^a-z]+/g, ' ')}`;
    switch (kind) {
      case 'registry confidential': {
        const client = await approvedClient(server, ['PROFILE_READ'], name);
        return { clientId: client.client_id, name, tokens: async (user) => tokensFor(server, client, user ?? (await newUser(server)), 'PROFILE_READ'), auth: () => ({ ...client }), public: false };
      }
      case 'registry public': {
        const created = await clientsCreate(operator(server), { name, redirectUri: [REDIRECT], scope: ['PROFILE_READ'], public: true });
        await clientsSetStatus(operator(server), created.client_id, 'approved');
        return pub(created.client_id, name, REDIRECT);
      }
      case 'metadata document, none':
        return pub(docs.agent(`/agent-${n}.json`, { client_name: name }), name, AGENT_REDIRECT);
      case 'metadata document, private_key_jwt': {
        const { privateKey, jwks } = newKeys();
        const keys = docs.serve(`/agent-${n}-keys.json`, { body: jwks });
        return signing(docs.agent(`/agent-${n}.json`, { client_name: name, token_endpoint_auth_method: 'private_key_jwt', jwks_uri: keys }), name, privateKey);
      }
      case 'registered, none':
        return pub(await register({ client_name: name, token_endpoint_auth_method: 'none' }), name, AGENT_REDIRECT);
      case 'registered, private_key_jwt': {
        const { privateKey, jwks } = newKeys();
        return signing(await register({ client_name: name, token_endpoint_auth_method: 'private_key_jwt', jwks }), name, privateKey);
      }
    }
  };
}
