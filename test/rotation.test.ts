// The two-secret rotation (spec 5.7) through the token endpoint, on two app instances sharing
// PostgreSQL and Redis; and the database guarantee that concurrent generation stays within 2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstance, startTestServer, type AppInstance, type TestServer } from './support/server.ts';
import { getMe, tokenRequest } from './support/oauth.ts';
import { approvedClient, codeFor, newUser, operator, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';
import { clientsShow, secretsGenerate, secretsRevoke } from '../src/admin/commands.ts';
import { InputError } from '../src/errors.ts';

let server: TestServer;
let other: AppInstance;
let user: Awaited<ReturnType<typeof newUser>>;

beforeAll(async () => {
  server = await startTestServer('redis');
  // A second instance of the app on the same PostgreSQL database and Redis prefix.
  other = await startInstance({ DATABASE_URL: server.pg.url, REDIS_URL: server.redis!.url }, { db: server.pg.db, redis: server.redis!.redis, redisPrefix: server.redis!.prefix });
  user = await newUser(server);
});
afterAll(async () => {
  await other?.close();
  await server?.close();
});

const exchange = (base: string, code: string, client: TestClient) =>
  tokenRequest(base, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...client });
const refresh = (base: string, refreshToken: string, client: TestClient) =>
  tokenRequest(base, { grant_type: 'refresh_token', refresh_token: refreshToken, ...client });

describe('client secret rotation', () => {
  it('keeps the old secret working beside the new one, revokes at once everywhere, and never touches issued tokens', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const before = await tokensFor(server, client, user, 'PROFILE_READ');
    const oldSecretId = (await clientsShow(operator(server), client.client_id)).secrets[0]!.id;

    // 1. Generate: both secrets authenticate, on either instance.
    const fresh = await secretsGenerate(operator(server), client.client_id);
    const withNew = { client_id: client.client_id, client_secret: fresh.client_secret };
    expect((await exchange(server.url, await codeFor(server, client, user, 'PROFILE_READ'), client)).status).toBe(200);
    expect((await exchange(other.url, await codeFor(server, withNew, user, 'PROFILE_READ'), withNew)).status).toBe(200);
    await expect(secretsGenerate(operator(server), client.client_id)).rejects.toThrow(InputError);

    // last_used_at records that the secrets are in use (written after the answers, in a batch).
    const usedAt = async () => (await clientsShow(operator(server), client.client_id)).secrets.map((s) => s.last_used_at);
    await expect.poll(usedAt).toEqual([expect.any(String), expect.any(String)]);

    // 2. Revoke the old one — used seconds ago, so only when confirmed (--force) — refused at once
    // on both instances; the new one keeps working.
    await expect(secretsRevoke(operator(server), client.client_id, String(oldSecretId))).rejects.toThrow(/last used .*--force/);
    await secretsRevoke(operator(server), client.client_id, String(oldSecretId), { force: true });
    for (const base of [server.url, other.url]) {
      const refused = await exchange(base, await codeFor(server, withNew, user, 'PROFILE_READ'), client);
      expect(refused.status).toBe(401);
      expect(refused.body.error).toBe('invalid_client');
    }
    expect((await exchange(other.url, await codeFor(server, withNew, user, 'PROFILE_READ'), withNew)).status).toBe(200);

    // 3. Tokens issued before the rotation still work, and refresh with the new secret.
    expect((await getMe(server.url, before.access_token)).status).toBe(200);
    expect((await refresh(other.url, before.refresh_token, client)).status).toBe(401);
    const refreshed = await refresh(other.url, before.refresh_token, withNew);
    expect(refreshed.status).toBe(200);
    expect((await getMe(other.url, refreshed.body.access_token as string)).status).toBe(200);
  });

  it('never leaves more than 2 active secrets, however many generate at once', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => secretsGenerate(operator(server), client.client_id)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(InputError);
    expect((await clientsShow(operator(server), client.client_id)).secrets).toHaveLength(2);
  });
});
