// Users, approved clients and tokens, made through the operator scripts' code path and the real flow.
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { TestServer } from './server.ts';
import { Browser } from './browser.ts';
import { authorize, tokenRequest, type TestUser } from './oauth.ts';
import { clientsCreate, clientsSetStatus, usersCreate, type AdminContext } from '../../src/admin/commands.ts';

export const REDIRECT = 'https://app.example.com/callback';

/** The operator scripts' context for a test server. */
export function operator(server: TestServer): AdminContext {
  return { db: server.system.db, artifacts: server.system.artifacts, outbox: server.system.outbox, records: server.system.records, by: { actor: 'operator:test' } };
}

export interface TestClient {
  client_id: string;
  client_secret: string;
}

export async function newUser(server: TestServer, name = 'Test User'): Promise<TestUser & { id: number }> {
  const email = `user-${randomBytes(4).toString('hex')}@example.com`;
  const password = randomBytes(12).toString('base64url');
  const user = await usersCreate(server.system, { email, password, name });
  return { email, password, id: user.id };
}

export async function approvedClient(server: TestServer, scopes: string[], name = 'Test App'): Promise<TestClient> {
  const created = await clientsCreate(operator(server), { name, redirectUri: [REDIRECT], scope: scopes });
  await clientsSetStatus(operator(server), created.client_id, 'approved');
  return { client_id: created.client_id, client_secret: created.client_secret! };
}

/** A code for `scope`, through sign-in and Allow, in a fresh browser unless one is given. */
export async function codeFor(server: TestServer, client: TestClient, user: TestUser, scope: string, browser = new Browser()): Promise<string> {
  const back = await authorize(browser, server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope, state: 's' }, user);
  const code = back.searchParams.get('code');
  expect(code, back.href).toBeTruthy();
  return code!;
}

/** The token response for `scope`, through the whole flow. */
export async function tokensFor(server: TestServer, client: TestClient, user: TestUser, scope: string) {
  const code = await codeFor(server, client, user, scope);
  const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...client });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { access_token: string; refresh_token: string; scope: string };
}
