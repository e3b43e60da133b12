// `clients delete ID --force` (issue 38 point 9) on both stores: what the developer page's delete
// does — the client, its secrets, its users' grants and every token it holds stop at once —
// including a client installed for an organization.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { getMe, tokenRequest } from './support/oauth.ts';
import { approvedClient, newUser, operator, tokensFor } from './support/fixtures.ts';
import { clientsDelete, orgsCreate } from '../src/admin/commands.ts';
import { installationsCreate } from '../src/admin/installation-commands.ts';

describe('clients delete (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(storage);
  });
  afterAll(() => server?.close());

  it('without force: refused, nothing changed; with it: tokens, grants, secrets and installations gone', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const user = await newUser(server);
    const tokens = await tokensFor(server, client, user, 'PROFILE_READ');
    const org = await orgsCreate(operator(server), { name: 'Deleting Org' });
    await installationsCreate(operator(server), { org: String(org.id), client: client.client_id, allTeams: true });

    await expect(clientsDelete(operator(server), client.client_id)).rejects.toThrow(/the access of 1 user, 1 installation and every token it holds: run again with --force/);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);

    expect(await clientsDelete(operator(server), client.client_id, { force: true })).toEqual({ client_id: client.client_id, name: 'Test App', deleted: true, secrets_removed: 1, users_with_access_removed: 1 });
    expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
    const refreshed = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client });
    expect(refreshed.status).toBe(401); // the client itself is gone: invalid_client
    expect(await server.pg.db('user_grants').where('client_id', client.client_id)).toEqual([]);
    expect(await server.pg.db('oauth_client_secrets').where('client_id', client.client_id)).toEqual([]);
  });
});
