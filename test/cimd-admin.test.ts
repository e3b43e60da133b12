// Administrators and operators decide on client ID metadata document clients (docs/agents.md):
// the review page lists them with their host (approve, reject, block the host, unblock) and the
// operator scripts do the same (clients approve|reject|show URL, clients list-documents, hosts
// block|unblock|list), each change reaching the running server at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser, signedIn, type Page } from './support/browser.ts';
import { authorizeUrl, getMe, type TestUser } from './support/oauth.ts';
import { newUser, operator } from './support/fixtures.ts';
import { admin as runAdmin } from './support/processes.ts';
import { expectRefusal } from './support/admin-cli.ts';
import { AGENT_REDIRECT, agentTokens, pkcePair, startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { usersSetAdmin } from '../src/admin/commands.ts';

let server: TestServer;
let docs: DocumentServer;
let blockable: DocumentServer;
let admin: TestUser & { id: number };

beforeAll(async () => {
  [server, docs, blockable] = await Promise.all([startTestServer('redis', { CIMD_ALLOW_LOOPBACK: 'true', RATE_LIMIT_AUTH_FAILURES: '1000' }), startDocumentServer(), startDocumentServer()]);
  admin = await newUser(server, 'Admin');
  await usersSetAdmin(operator(server), admin.email);
});
afterAll(async () => {
  await Promise.all([server?.close(), docs?.close(), blockable?.close()]);
});

/** The scripts against the server's database and Redis, as an operator runs them. */
const cli = (...args: string[]) => runAdmin(['--json', ...args], { DATABASE_URL: server.pg.url, REDIS_URL: server.redis!.url });
const authorizationStatus = async (clientId: string) => {
  const { challenge } = pkcePair();
  const page = await new Browser().get(authorizeUrl(server.url, { client_id: clientId, redirect_uri: AGENT_REDIRECT, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }));
  return page.status;
};

describe('operator scripts', () => {
  it('list-documents and show a seen client with its host; approve and reject it by its URL; suspend is refused', async () => {
    const clientId = docs.agent('/cli-agent.json', { scope: 'PROFILE_READ ORG_BOOKING_READ' });
    await agentTokens(server.url, clientId, await newUser(server), 'PROFILE_READ');
    const host = new URL(docs.url).host;
    const listed = await cli('clients', 'list-documents', '--status', 'unreviewed');
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).clients).toContainEqual(expect.objectContaining({ client_id: clientId, host, status: 'unreviewed', users: 1, scopes: ['PROFILE_READ', 'ORG_BOOKING_READ'] }));
    expect(JSON.parse((await cli('clients', 'show', clientId)).stdout)).toMatchObject({ client_id: clientId, kind: 'metadata_document', host, redirect_uris: [AGENT_REDIRECT] });
    const approved = await cli('clients', 'approve', clientId);
    expect(JSON.parse(approved.stdout)).toMatchObject({ client_id: clientId, status: 'approved' });
    // The full tier at once on the running server: its ORG_ scope may be asked for now.
    expect((await agentTokens(server.url, clientId, await newUser(server), 'ORG_BOOKING_READ')).scope).toBe('ORG_BOOKING_READ');
    expectRefusal(await cli('clients', 'suspend', clientId), /approved or rejected/);
    const rejected = await cli('--reason', 'not what it says', 'clients', 'reject', clientId);
    expect(JSON.parse(rejected.stdout)).toMatchObject({ status: 'rejected', users: 0 });
    expect(await authorizationStatus(clientId)).toBe(400);
    const audit = await server.system.db('audit_events').where('client_id', clientId).orderBy('id').pluck('action');
    expect(audit).toEqual(['consent.given', 'cimd.approved', 'consent.given', 'cimd.rejected']);
  });

  it('hosts block, list and unblock; refusals for an unseen client, a malformed host and a public suffix change nothing', async () => {
    const clientId = blockable.agent('/blocked-agent.json');
    const tokens = await agentTokens(server.url, clientId, await newUser(server), 'PROFILE_READ');
    // Given as in the URL, port included: the block is of the address, on every port.
    const host = '127.0.0.1';
    const blocked = await cli('--reason', 'flood', 'hosts', 'block', new URL(blockable.url).host);
    expect(JSON.parse(blocked.stdout)).toMatchObject({ host, blocked: true, clients: expect.arrayContaining([clientId]) });
    expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
    expect(await authorizationStatus(blockable.agent('/new-agent.json'))).toBe(400);
    expect(JSON.parse((await cli('hosts', 'list')).stdout).hosts).toEqual([expect.objectContaining({ host, covers: '127.0.0.1 on any port', reason: 'flood', blocked_by: expect.stringMatching(/^operator:/) })]);
    expect(JSON.parse((await cli('hosts', 'unblock', host)).stdout)).toEqual({ host, blocked: false });
    expect(await authorizationStatus(blockable.agent('/new-agent.json'))).toBe(303);
    expectRefusal(await cli('hosts', 'unblock', host), /is not blocked/);
    expectRefusal(await cli('hosts', 'block', 'not a host'), /not a host name/);
    expectRefusal(await cli('hosts', 'block', 'github.io'), /public suffix/);
    expectRefusal(await cli('clients', 'approve', `${docs.url}/never-seen.json`), /no client with id .* has been seen/);
    expect(JSON.parse((await cli('hosts', 'list')).stdout).hosts).toEqual([]);
  });
});

describe('the review page', () => {
  const section = (page: Page) => page.$('#metadata-documents');

  it('lists metadata-document clients with their host; approve, reject (a reason required), block the host and unblock it', async () => {
    const clientId = docs.agent('/page-agent.json');
    await agentTokens(server.url, clientId, await newUser(server), 'PROFILE_READ');
    const browser = await signedIn(server.url, admin);
    let page = await browser.get(`${server.url}/admin/oauth-clients`);
    const row = () => section(page).find('tr').filter((_, tr) => page.$(tr).text().includes(clientId));
    expect(row().text()).toContain(new URL(docs.url).host);
    expect(row().find('.status').text()).toBe('unreviewed');

    const submit = async (action: string, fields: Record<string, string> = {}) => {
      const res = await browser.submit(page, `tr:contains("${clientId}") button[value="${action}"]`, fields);
      expect(res.status).toBe(303);
      page = await browser.get(new URL(res.location!).href);
    };
    await submit('approve');
    expect(row().find('.status').text()).toBe('approved');
    await submit('reject');
    expect(page.$('.alert, [role=alert]').text()).toContain('Give a reason for the rejection');
    expect(row().find('.status').text()).toBe('approved');
    await submit('reject', { reason: 'misleading name' });
    expect(row().find('.status').text()).toBe('rejected');
    await submit('block_host');
    expect(section(page).text()).toContain('Blocked hosts');
    expect(await authorizationStatus(docs.agent('/page-other.json'))).toBe(400);
    const unblock = await browser.submit(page, `#metadata-documents li:contains("127.0.0.1") button[value="unblock_host"]`);
    expect(unblock.status).toBe(303);
    expect(await authorizationStatus(docs.agent('/page-other.json'))).toBe(303);
  });

  it('is for administrators only', async () => {
    const browser = await signedIn(server.url, await newUser(server));
    const res = await browser.request(`${server.url}/admin/oauth-clients/documents`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'action=approve&client_id=x' });
    expect([403, 404]).toContain(res.status);
  });
});

describe('blocks made before blocks covered every port (migration 028)', () => {
  it('a host:port block becomes a block of the host, listed and matched as such', async () => {
    const { up } = await import('../migrations/028_host_blocks_by_name.ts');
    await server.system.db('cimd_blocked_hosts').insert([
      { host: 'legacy.example.com:8443', blocked_by: 'operator:old' },
      { host: 'legacy.example.com:9443', blocked_by: 'operator:old' },
      { host: 'other.example.org', blocked_by: 'operator:old' },
    ]);
    await up(server.system.db);
    const hosts = JSON.parse((await cli('hosts', 'list')).stdout).hosts.map((h: { host: string }) => h.host);
    expect(hosts).toEqual(['legacy.example.com', 'other.example.org']);
    expect(JSON.parse((await cli('hosts', 'list')).stdout).hosts[0].covers).toBe('legacy.example.com and every name under it (*.legacy.example.com), on any port');
    expect(JSON.parse((await cli('hosts', 'unblock', 'legacy.example.com:8443')).stdout)).toEqual({ host: 'legacy.example.com', blocked: false });
    await cli('hosts', 'unblock', 'other.example.org');
  });
});
