// DPoP proofs (RFC 9449) as a client makes them — and, for the refusals, as it must not: each
// field may be overridden. ES256 keys from node:crypto; the thumbprint as RFC 7638 computes it.
import { createHash, randomBytes, randomUUID, sign } from 'node:crypto';
import type { DpopKey } from './dpop-key.ts';
import { Browser } from './browser.ts';
import { authorize } from './oauth.ts';
import { REDIRECT } from './fixtures.ts';
import type { TestServer } from './server.ts';

export { dpopKey, type DpopKey } from './dpop-key.ts';

const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

export const athOf = (accessToken: string) => createHash('sha256').update(accessToken).digest('base64url');

/** A proof for `htm` `htu` (and `accessToken`'s ath); `header` and `claims` override or remove (undefined) fields. */
export function proof(key: DpopKey, htm: string, htu: string, accessToken?: string, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): string {
  const head = { typ: 'dpop+jwt', alg: 'ES256', jwk: key.jwk, ...header };
  const body = { jti: randomUUID(), htm, htu, iat: Math.floor(Date.now() / 1000), ...(accessToken ? { ath: athOf(accessToken) } : {}), ...claims };
  const input = `${part(head)}.${part(body)}`;
  if (head.alg === 'none') return `${input}.`;
  if (head.alg === 'HS256') return `${input}.${createHash('sha256').update(input).digest('base64url')}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

export interface Answer {
  status: number;
  body: Record<string, any>;
  headers: Headers;
}

/** A POST of `fields` to the token endpoint with `headers` (a DPoP proof among them). */
export async function tokenPost(server: TestServer, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${server.url}/v2/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(fields).toString() });
  return { status: res.status, body: (await res.json()) as Record<string, any>, headers: res.headers };
}

export const tokenUrl = (server: TestServer) => `${server.url}/v2/auth/oauth2/token`;

/** A registry public client's code and verifier (PKCE), through sign-in and Allow. */
export async function pkceCode(server: TestServer, clientId: string, user: { email: string; password: string }, scope = 'PROFILE_READ') {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const back = await authorize(new Browser(), server.url, { client_id: clientId, redirect_uri: REDIRECT, scope, state: 's', code_challenge: challenge, code_challenge_method: 'S256' }, user);
  return { code: back.searchParams.get('code')!, verifier };
}

/** A GET with an Authorization header and, if given, a DPoP proof. */
export async function getWith(url: string, authorization: string, dpop?: string, extra: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url, { headers: { authorization, ...(dpop !== undefined ? { dpop } : {}), ...extra } });
  return { status: res.status, body: (await res.json()) as Record<string, any>, headers: res.headers };
}
