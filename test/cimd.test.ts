// Client ID metadata documents (issue 36 point 3; docs/agents.md): a client_id that is a URL is
// fetched under the address rule and used in a limited tier until an administrator reviews it.
// The documents are served by a real HTTP server on 127.0.0.1 (CIMD_ALLOW_LOOPBACK=true).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { newUser } from './support/fixtures.ts';
import { Browser } from './support/browser.ts';
import { authorizeUrl, getMe, reachConsent, tokenRequest } from './support/oauth.ts';
import { AGENT_REDIRECT, agentCode, agentTokens, pkcePair, startDocumentServer, type DocumentServer } from './support/cimd.ts';

const LOOPBACK = { CIMD_ALLOW_LOOPBACK: 'true' };

describe.each<Storage>(['sql', 'redis'])('client ID metadata documents (%s)', (storage) => {
  let server: TestServer;
  let docs: DocumentServer;
  beforeAll(async () => {
    [server, docs] = await Promise.all([startTestServer(storage, LOOPBACK), startDocumentServer()]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), docs?.close()]);
  });

  it('metadata says client_id_metadata_document_supported', async () => {
    const res = await fetch(`${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`);
    expect((await res.json()) as object).toMatchObject({ client_id_metadata_document_supported: true });
  });

  it('an agent authorizes with its document URL as client_id, gets user-scoped tokens and refreshes them', async () => {
    const clientId = docs.agent('/agent-basic.json');
    const user = await newUser(server);
    const tokens = await agentTokens(server.url, clientId, user, 'PROFILE_READ');
    expect(tokens.scope).toBe('PROFILE_READ');
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);
    const refreshed = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    const row = await server.system.db('cimd_clients').where('client_id', clientId).first();
    expect(row).toMatchObject({ host: new URL(docs.url).host, status: 'unreviewed', name: 'Helpful Agent', redirect_uris: [AGENT_REDIRECT] });
  });
});
