// The operator scripts reach the store the servers keep tokens in (src/storage/store-record.ts):
// without the servers' Redis, a status change or a secret revocation is refused and changes
// nothing; a repeated suspension still sweeps; reinstating brings no old token back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startInstance, startTestServer, type AppInstance, type TestServer } from './support/server.ts';
import { createTestDatabase, type TestDatabase } from './support/services.ts';
import { startOwnRedis, type OwnRedis } from './support/redis-server.ts';
import { admin } from './support/processes.ts';
import { eventually } from './support/eventually.ts';
import { expectRefusal } from './support/admin-cli.ts';
import { approvedClient, newUser, tokensFor, type TestClient } from './support/fixtures.ts';
import { getMe, tokenRequest, type TestUser } from './support/oauth.ts';

const statusOf = async (server: TestServer, id: string) => (await server.pg.db('oauth_clients').where('id', id).first()).status as string;
const clientKeys = async (server: TestServer, id: string) => server.redis!.redis.scard(`${server.redis!.prefix}client:${id}`);

async function refreshWith(server: TestServer, client: TestClient, refreshToken: string) {
  return tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: refreshToken, ...client });
}

describe('operator scripts and a server on Redis', () => {
  let server: TestServer;
  let user: TestUser;
  let withoutRedis: Record<string, string>;
  let withRedis: Record<string, string>;

  beforeAll(async () => {
    server = await startTestServer('redis');
    user = await newUser(server);
    withoutRedis = { DATABASE_URL: server.pg.url };
    withRedis = { DATABASE_URL: server.pg.url, REDIS_URL: server.redis!.url };
  });
  afterAll(() => server?.close());

  it('records that the artifacts live in Redis: the mode, never a URL or password', async () => {
    const row = await server.pg.db('artifact_store').first();
    expect(row).toMatchObject({ kind: 'redis', redis_mode: 'single', redis_prefix: server.redis!.prefix, redis_mark: expect.any(String) });
    expect(JSON.stringify(row)).not.toContain('redis://');
    expect(await server.redis!.redis.get(`${server.redis!.prefix}store-mark`)).toBe(row.redis_mark);
  });

  it('refuses a suspension without REDIS_URL; with it, sweeps Redis; approving brings no old token back', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');

    for (const command of ['suspend', 'reject', 'approve']) {
      expectRefusal(await admin(['--json', 'clients', command, client.client_id], withoutRedis), /^error: the servers keep tokens in Redis \(single\) and REDIS_URL is not set here.*nothing was changed$/);
    }
    expect(await statusOf(server, client.client_id)).toBe('approved');
    expect(await server.pg.db('audit_events').where({ client_id: client.client_id, action: 'client.suspended' })).toHaveLength(0);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);

    const suspended = await admin(['--json', 'clients', 'suspend', client.client_id], withRedis);
    expect(suspended.code, suspended.stderr).toBe(0);
    expect(await statusOf(server, client.client_id)).toBe('suspended');
    expect(await clientKeys(server, client.client_id)).toBe(0);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(401);

    expect((await admin(['--json', 'clients', 'approve', client.client_id], withRedis)).code).toBe(0);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
    const again = await refreshWith(server, client, tokens.refresh_token);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
  });

  it('refuses a Redis that is not the servers\' (another database number): no mark there, and says what to check', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const elsewhere = { ...withRedis, REDIS_URL: `${server.redis!.url}/7` };
    expectRefusal(
      await admin(['--json', 'clients', 'suspend', client.client_id], elsewhere),
      /^error: the servers keep tokens in Redis \(single\), and the Redis of REDIS_URL here is not theirs or has lost their mark: check that REDIS_URL is the servers' \(same host, port and database number\), that a server is running \(it puts the mark back within 5 seconds of Redis returning from a restart\), then try again; nothing was changed$/,
    );
    expect(await statusOf(server, client.client_id)).toBe('approved');
  });

  it('refuses a Redis holding another mark (another deployment\'s), naming both settings to check', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const elsewhere = { ...withRedis, REDIS_URL: `${server.redis!.url}/7` };
    const key = `${server.redis!.prefix}store-mark`;
    const other = new Redis(elsewhere.REDIS_URL);
    try {
      await other.set(key, 'another-deployment', 'EX', 60);
      expectRefusal(
        await admin(['--json', 'clients', 'suspend', client.client_id], elsewhere),
        /^error: the servers keep tokens in Redis \(single\), and the Redis of REDIS_URL here is not theirs \(it holds another mark\): check that REDIS_URL and the database here \(DATABASE_URL or DATA_DIR\) are those of the same servers, then try again in a few seconds; nothing was changed$/,
      );
    } finally {
      await other.del(key);
      other.disconnect();
    }
    expect(await statusOf(server, client.client_id)).toBe('approved');
  });

  it('refuses a secret revocation without REDIS_URL: the secret keeps working until it can be revoked everywhere', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    const [secret] = JSON.parse((await admin(['--json', 'secrets', 'list', client.client_id], withoutRedis)).stdout).secrets;
    expectRefusal(await admin(['--json', 'secrets', 'revoke', client.client_id, String(secret.id)], withoutRedis), /REDIS_URL is not set here/);
    const refreshed = await refreshWith(server, client, tokens.refresh_token);
    expect(refreshed.status).toBe(200);

    // The secret was just used: the revocation is confirmed (--force), as an operator would.
    expect((await admin(['--json', 'secrets', 'revoke', client.client_id, String(secret.id), '--force'], withRedis)).code).toBe(0);
    expect((await refreshWith(server, client, String(refreshed.body.refresh_token))).body.error).toBe('invalid_client');
  });

  it('sweeps again on a repeated suspension (no audit row): tokens left by a suspension that did not reach Redis go', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    // A suspension that reached only the database, as the scripts did before they checked.
    await server.pg.db('oauth_clients').where('id', client.client_id).update({ status: 'suspended' });
    expect(await clientKeys(server, client.client_id)).toBeGreaterThan(0);

    const repeated = await admin(['--json', 'clients', 'suspend', client.client_id], withRedis);
    expect(repeated.code, repeated.stderr).toBe(0);
    expect(JSON.parse(repeated.stdout).status).toBe('suspended');
    expect(await clientKeys(server, client.client_id)).toBe(0);
    expect(await server.pg.db('audit_events').where({ client_id: client.client_id, action: 'client.suspended' })).toHaveLength(0);

    expect((await admin(['--json', 'clients', 'approve', client.client_id], withRedis)).code).toBe(0);
    expect((await refreshWith(server, client, tokens.refresh_token)).body.error).toBe('invalid_grant');
  });

  it('reinstating sweeps first: a client suspended in the table directly gets no old token back', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    await server.pg.db('oauth_clients').where('id', client.client_id).update({ status: 'suspended' });
    expect((await admin(['--json', 'clients', 'approve', client.client_id], withRedis)).code).toBe(0);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
    expect((await refreshWith(server, client, tokens.refresh_token)).body.error).toBe('invalid_grant');
  });
});

describe('operator scripts and a server on SQL only', () => {
  let server: TestServer;
  let user: TestUser;

  beforeAll(async () => {
    server = await startTestServer('sql');
    user = await newUser(server);
  });
  afterAll(() => server?.close());

  it('work as before without Redis; a repeated suspension sweeps the table', async () => {
    expect(await server.pg.db('artifact_store').first()).toMatchObject({ kind: 'sql', redis_mode: null, redis_mark: null });
    const client = await approvedClient(server, ['PROFILE_READ']);
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    const env = { DATABASE_URL: server.pg.url };
    await server.pg.db('oauth_clients').where('id', client.client_id).update({ status: 'suspended' });
    expect(await server.pg.db('oidc_models').where('client_id', client.client_id)).not.toHaveLength(0);
    expect((await admin(['--json', 'clients', 'suspend', client.client_id], env)).code).toBe(0);
    expect(await server.pg.db('oidc_models').where('client_id', client.client_id)).toHaveLength(0);
    expect((await admin(['--json', 'clients', 'approve', client.client_id], env)).code).toBe(0);
    expect((await refreshWith(server, client, tokens.refresh_token)).body.error).toBe('invalid_grant');
  });

  it('with REDIS_URL set by mistake, still sweeps the table the servers use', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    await tokensFor(server, client, user, 'PROFILE_READ');
    const suspended = await admin(['--json', 'clients', 'suspend', client.client_id], { DATABASE_URL: server.pg.url, REDIS_URL: 'redis://127.0.0.1:6379' });
    expect(suspended.code, suspended.stderr).toBe(0);
    expect(await server.pg.db('oidc_models').where('client_id', client.client_id)).toHaveLength(0);
  });
});

// A cache node replaced, or Redis restarted without persistence: the servers recover by
// themselves, and put their mark back so that the scripts do too (src/storage/store-record.ts).
describe('operator scripts after the servers\' Redis lost its data', () => {
  let own: OwnRedis;
  let pg: TestDatabase;
  let instance: AppInstance;
  let env: Record<string, string>;

  beforeAll(async () => {
    [own, pg] = await Promise.all([startOwnRedis(), createTestDatabase()]);
    env = { DATABASE_URL: pg.url, REDIS_URL: own.url };
    instance = await startInstance(env, { db: pg.db });
  });
  afterAll(async () => {
    await instance?.close();
    await Promise.all([own?.stop(), pg?.drop()]);
  });

  async function pendingClient(): Promise<string> {
    const created = await admin(['--json', 'clients', 'create', '--name', 'Lost mark', '--redirect-uri', 'https://app.example/cb', '--scope', 'PROFILE_READ'], env);
    expect(created.code, created.stderr).toBe(0);
    return JSON.parse(created.stdout).client_id as string;
  }

  /** Tries `clients approve` until it succeeds (its result) or the deadline passes (the last attempt's error). */
  const approveWithin = (id: string, ms: number) =>
    eventually(async () => {
      const result = await admin(['--json', 'clients', 'approve', id], env);
      expect(result.code, result.stderr).toBe(0);
      return result;
    }, { timeout: ms, interval: 200 });

  it('a restarted, empty Redis: the server puts its mark back on reconnecting, and a change succeeds within seconds', async () => {
    const id = await pendingClient();
    await own.restart();
    const approved = await approveWithin(id, 8000);
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout).status).toBe('approved');
  });

  it('a Redis emptied without a reconnection (FLUSHALL): the mark is back within the 5-second check', async () => {
    const id = await pendingClient();
    const flush = new Redis(own.url);
    try {
      await flush.flushall();
    } finally {
      flush.disconnect();
    }
    const approved = await approveWithin(id, 10_000);
    expect(approved.code, approved.stderr).toBe(0);
    const row = await pg.db('artifact_store').first();
    expect(await instance.system.redis!.get('oauth:store-mark')).toBe(row.redis_mark);
  });
});
