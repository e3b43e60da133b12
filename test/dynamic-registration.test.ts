// Open dynamic client registration (RFC 7591; docs/agents.md): off unless DYNAMIC_REGISTRATION=open;
// when open, registered clients are unreviewed like metadata-document clients (the limited tier),
// keep no secret, and those with no token after an hour are removed by the sweep.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { newUser, operator } from './support/fixtures.ts';
import { usersSetAdmin } from '../src/admin/commands.ts';
import { Browser } from './support/browser.ts';
import { authorizeUrl, reachConsent, tokenRequest } from './support/oauth.ts';
import { AGENT_REDIRECT, agentCode, pkcePair } from './support/cimd.ts';
import { admin as runAdmin } from './support/processes.ts';

/** The rows of docs/endpoints.md's "Deliberately not supported" table: the feature and the metadata that would advertise it. */
function notSupportedRows(): Array<{ feature: string; advertisedBy: string[] }> {
  const doc = readFileSync(new URL('../docs/endpoints.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('### Deliberately not supported'));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| not supported'))
    .map((line) => line.split(' | ').map((cell) => cell.replace(/^\| | \|$/g, '')))
    .map(([feature, , advertisedBy]) => ({ feature: feature!, advertisedBy: (advertisedBy ?? '').split(/, (?=`)/).filter(Boolean) }));
}

const register = (server: TestServer, body: unknown) =>
  fetch(`${server.url}/v2/auth/oauth2/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const AGENT = { client_name: 'Registered Agent', redirect_uris: [AGENT_REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] };

describe('dynamic registration is off unless an operator opens it', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sql');
  });
  afterAll(() => server?.close());

  it('no registration endpoint in the metadata, and registering is a 404 that stores nothing', async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`)).json()) as Record<string, unknown>;
    expect(metadata.registration_endpoint).toBeUndefined();
    const res = await register(server, AGENT);
    expect(res.status).toBe(404);
    expect(await server.system.db('cimd_clients')).toEqual([]);
  });
});

describe('DYNAMIC_REGISTRATION=open (redis)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(storage, { DYNAMIC_REGISTRATION: 'open' });
  });
  afterAll(() => server?.close());

  async function registered(): Promise<string> {
    const res = await register(server, AGENT);
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status, JSON.stringify(body)).toBe(201);
    expect(body).not.toHaveProperty('client_secret');
    expect(body).not.toHaveProperty('registration_access_token');
    return body.client_id as string;
  }

  it("docs/endpoints.md's \"Deliberately not supported\" names nothing the metadata advertises, with every optional feature on", async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`)).json()) as Record<string, unknown>;
    const rows = notSupportedRows();
    expect(rows.length).toBeGreaterThan(5);
    for (const { feature, advertisedBy } of rows) {
      expect(advertisedBy.length, feature).toBeGreaterThan(0);
      for (const sign of advertisedBy) {
        const inList = /^`([^`]+)` in `([a-z_]+)`$/.exec(sign);
        const field = /^`([a-z_]+)`$/.exec(sign);
        if (inList) expect(metadata[inList[2]!] ?? [], `${feature}: ${sign}`).not.toContain(inList[1]);
        else if (field) expect(metadata[field[1]!], `${feature}: ${sign}`).toBeUndefined();
        else throw new Error(`${feature}: cannot read "${sign}" (write \`field\` or \`value\` in \`field\`)`);
      }
    }
    // What the server offers is in the "Supported" part, never the other: a sample that would drift.
    const names = rows.map((r) => r.feature).join(' | ');
    for (const offered of ['private_key_jwt', 'registration', 'resource indicators']) expect(names, offered).not.toContain(offered);
  });

  it('the metadata names the endpoint; a registered client is unreviewed: the notice says it registered itself, user scopes only, and its first token recorded', async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`)).json()) as Record<string, unknown>;
    expect(metadata.registration_endpoint).toBe(`${server.url}/v2/auth/oauth2/register`);
    const clientId = await registered();
    expect(await server.system.db('cimd_clients').where('client_id', clientId).first()).toMatchObject({ registered: true, status: 'unreviewed', host: 'agent.example.com', first_token_at: null });

    const { challenge } = pkcePair();
    const request = { client_id: clientId, redirect_uri: AGENT_REDIRECT, state: 's', code_challenge: challenge, code_challenge_method: 'S256' };
    const org = await new Browser().get(authorizeUrl(server.url, { ...request, scope: 'ORG_BOOKING_READ' }));
    expect(new URL(org.location!).searchParams.get('error')).toBe('invalid_scope');
    const consent = await reachConsent(new Browser(), server.url, { ...request, scope: 'PROFILE_READ' }, await newUser(server));
    expect(consent.$('.consent-unreviewed').text()).toContain('registered by itself, not reviewed');
    expect(consent.$('.consent-unreviewed').text()).not.toContain('agent.example.com');

    const { code, verifier } = await agentCode(server.url, clientId, await newUser(server), 'PROFILE_READ');
    const tokens = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: AGENT_REDIRECT, client_id: clientId, code_verifier: verifier });
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    await expect.poll(async () => (await server.system.db('cimd_clients').where('client_id', clientId).first()).first_token_at).not.toBeNull();

    // Reviewed as metadata-document clients are, by its id: approved, the full tier at once.
    const env = { DATABASE_URL: server.pg.url, ...(server.redis ? { REDIS_URL: server.redis.url } : {}) };
    const approved = await runAdmin(['--json', 'clients', 'approve', clientId], env);
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({ client_id: clientId, kind: 'registered', status: 'approved', host: null });
    expect((await new Browser().get(authorizeUrl(server.url, { ...request, scope: 'PROFILE_READ' }))).status).toBe(303);
  });

  it('a registrant naming another site (calendar.google.com) is shown as what it is, registered by itself and not reviewed, never as that site; a block of the site it sends users to refuses it', async () => {
    const redirect = 'https://calendar.google.com/callback';
    const res = await register(server, { ...AGENT, client_name: 'Google Calendar', redirect_uris: [redirect] });
    expect(res.status).toBe(201);
    const clientId = ((await res.json()) as { client_id: string }).client_id;
    const { challenge } = pkcePair();
    const request = { client_id: clientId, redirect_uri: redirect, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' };
    const consent = await reachConsent(new Browser(), server.url, request, await newUser(server));
    const developer = consent.$('.consent-developer').text().replace(/\s+/g, ' ').trim();
    const notice = consent.$('.consent-unreviewed').text();
    expect(developer).toBe('Unknown: the app registered itself, not reviewed');
    expect(notice).toContain('registered by itself, not reviewed');
    for (const text of [developer, notice]) expect(text).not.toMatch(/google\.com/);
    // The operators' list says the same: no host of its own.
    const env = { DATABASE_URL: server.pg.url, ...(server.redis ? { REDIS_URL: server.redis.url } : {}) };
    const shown = await runAdmin(['--json', 'clients', 'show', clientId], env);
    expect(JSON.parse(shown.stdout)).toMatchObject({ client_id: clientId, kind: 'registered', host: null, redirect_uris: [redirect] });
    // So does the administrators' review page: no host, no "Block HOST" for it.
    const admin = await newUser(server, 'Admin');
    await usersSetAdmin(operator(server), admin.email);
    const browser = new Browser();
    const login = await browser.get(`${server.url}/login`);
    expect((await browser.submit(login, 'form[action="/login"]', { email: admin.email, password: admin.password })).status).toBe(303);
    const review = await browser.get(`${server.url}/admin/oauth-clients`);
    const row = review.$('#metadata-documents tr').filter((_, tr) => review.$(tr).text().includes(clientId));
    expect(row.find('td[data-label="Host"]').text().trim()).toBe('registered by itself, not reviewed');
    expect(row.find('button[value="block_host"]').length).toBe(0);
    expect(row.find('td[data-label="Host"]').text()).not.toMatch(/google\.com/);
    // Blocking the site its users would be sent to refuses it, whatever subdomain.
    expect(JSON.parse((await runAdmin(['--json', 'hosts', 'block', 'google.com'], env)).stdout)).toMatchObject({ host: 'google.com', clients: expect.arrayContaining([clientId]) });
    const refused = await new Browser().get(authorizeUrl(server.url, request));
    expect(refused.status).toBe(400);
    expect(refused.$('body').text()).toMatch(/apps sending users back to google\.com are blocked/);
    await runAdmin(['--json', 'hosts', 'unblock', 'google.com'], env);
  });

  it('a request without scope asks for the scope the registration declared (RFC 6749 3.3), as an explicit request; a registration declaring none is refused as before', async () => {
    const declared = (await (await register(server, { ...AGENT, scope: 'PROFILE_READ BOOKING_READ' })).json()) as { client_id: string };
    const tokens = async (scope: string | undefined) => {
      const { code, verifier } = await agentCode(server.url, declared.client_id, await newUser(server), scope);
      const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: AGENT_REDIRECT, client_id: declared.client_id, code_verifier: verifier });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    };
    expect((await tokens(undefined)).scope).toBe('PROFILE_READ BOOKING_READ');
    expect((await tokens('PROFILE_READ BOOKING_READ')).scope).toBe('PROFILE_READ BOOKING_READ');

    const undeclared = await registered();
    const { challenge } = pkcePair();
    const page = await new Browser().get(authorizeUrl(server.url, { client_id: undeclared, redirect_uri: AGENT_REDIRECT, state: 's', code_challenge: challenge, code_challenge_method: 'S256' }));
    const back = new URL(page.location!);
    expect([back.searchParams.get('error'), back.searchParams.get('error_description')]).toEqual(['invalid_scope', 'the scope parameter is required']);
  });

  it('a registration with a shared secret, or without usable redirect URIs, is invalid_client_metadata, and nothing is stored', async () => {
    const before = (await server.system.db('cimd_clients')).length;
    for (const body of [{ ...AGENT, token_endpoint_auth_method: 'client_secret_basic' }, { ...AGENT, redirect_uris: ['http://agent.example.com/cb'] }, { ...AGENT, redirect_uris: [] }, { ...AGENT, client_name: 'Agent \u202Eevil' }]) {
      const res = await register(server, body);
      const answer = (await res.json()) as Record<string, unknown>;
      expect(res.status, JSON.stringify(answer)).toBe(400);
      expect(String(answer.error)).toMatch(/^invalid_(client_metadata|redirect_uri)$/);
    }
    expect((await server.system.db('cimd_clients')).length).toBe(before);
  });

  it("a registered client's id never begins with '-', which the operator scripts would read as an option", async () => {
    // The library's ids are base64url: one in 64 began with '-', and `clients approve <id>` failed
    // with "unknown option" (CI, 2026-11-26). 150 registrations met one nine times in ten.
    const ids = await Promise.all(Array.from({ length: 150 }, () => registered()));
    expect(ids.filter((id) => id.startsWith('-'))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => /^[A-Za-z0-9_-]{22}$/.test(id))).toBe(true);
  });

  it('the sweep removes registrations with no token after an hour, and keeps those with one', async () => {
    const unused = await registered();
    const used = await registered();
    const { code, verifier } = await agentCode(server.url, used, await newUser(server), 'PROFILE_READ');
    expect((await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: AGENT_REDIRECT, client_id: used, code_verifier: verifier })).status).toBe(200);
    await expect.poll(async () => (await server.system.db('cimd_clients').where('client_id', used).first()).first_token_at).not.toBeNull();
    const fresh = await registered();
    await server.system.db('cimd_clients').whereIn('client_id', [unused, used]).update({ first_seen_at: server.system.db.raw("now() - interval '2 hours'") });

    expect(await server.system.sweepRegistrations()).toBe(1);
    expect((await server.system.db('cimd_clients').whereIn('client_id', [unused, used, fresh]).pluck('client_id')).sort()).toEqual([used, fresh].sort());
    // Removed: an unknown client from then on.
    const { challenge } = pkcePair();
    const page = await new Browser().get(authorizeUrl(server.url, { client_id: unused, redirect_uri: AGENT_REDIRECT, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }));
    expect(page.status).toBe(400);
    expect(page.location).toBeUndefined();
  });
});
