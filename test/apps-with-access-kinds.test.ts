// "Apps with access" for every kind of client (issue 47): the registry's, described by a metadata
// document or registered openly. The app is listed, by its name, and the user can revoke its
// access there; a refresh token reported as leaked (POST /v2/auth/credentials/revoke,
// src/leak-reports/leaks.ts) is revoked with its grant, and the user sees the notice there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { newUser } from './support/fixtures.ts';
import { Browser } from './support/browser.ts';
import { startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { clientKinds, KINDS } from './support/client-kinds.ts';

describe.each<Storage>(['redis', 'sql'])('Apps with access and leak notices for every kind of client (%s storage)', (storage) => {
  let server: TestServer;
  let docs: DocumentServer;
  let makeClient: ReturnType<typeof clientKinds>;
  let address = 0;

  beforeAll(async () => {
    docs = await startDocumentServer();
    server = await startTestServer(storage, { CIMD_ALLOW_LOOPBACK: 'true', CIMD_MAX_USERS: '1000', DYNAMIC_REGISTRATION: 'open', TRUST_PROXY: '1' });
    makeClient = clientKinds(server, docs);
  });
  afterAll(async () => {
    await server?.close();
    await docs?.close();
  });

  const report = async (credentials: string[]) => {
    // Each report from its own address: the endpoint's per-address limit is not what is tested.
    const res = await fetch(`${server.url}/v2/auth/credentials/revoke`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${++address}` }, body: JSON.stringify({ credentials }) });
    return res.status;
  };

  /** A client of `kind`, tokens it holds for a new user, and that user signed in on Apps with access. */
  async function signedInWithTokensOf(kind: (typeof KINDS)[number]) {
    const client = await makeClient(kind);
    const user = await newUser(server);
    const tokens = await client.tokens(user);
    const browser = new Browser();
    await browser.submit(await browser.get(`${server.url}/login?next=${encodeURIComponent('/settings/connected-apps')}`), 'form[action="/login"]', { email: user.email, password: user.password });
    return { client, tokens, browser, listed: await browser.get(`${server.url}/settings/connected-apps`) };
  }

  it.each(KINDS)('%s: a leaked refresh token is revoked with its grant, and its user sees the notice', async (kind) => {
    const { client, tokens, browser, listed } = await signedInWithTokensOf(kind);
    expect(listed.html).toContain(client.name);
    expect(await report([tokens.refresh_token])).toBe(202);

    const refreshed = await fetch(`${server.url}/v2/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client.auth() }) });
    expect(((await refreshed.json()) as { error?: string }).error).toBe('invalid_grant');
    expect((await fetch(`${server.url}/v2/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(401);

    const page = await browser.get(`${server.url}/settings/connected-apps`);
    const notices = page.$('.leak-notice').map((_, el) => page.$(el).text().replace(/\s+/g, ' ').trim()).get();
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(new RegExp(`^A credential for ${client.name} was reported as leaked and revoked on \\S`));
  });
  it.each(KINDS)('%s: listed on Apps with access, where the user revokes its access', async (kind) => {
    const { client, tokens, browser, listed } = await signedInWithTokensOf(kind);
    expect(listed.$(`a[href="/settings/connected-apps/${encodeURIComponent(client.clientId)}/revoke"]`).text()).toContain(client.name);
    const confirm = await browser.get(`${server.url}/settings/connected-apps/${encodeURIComponent(client.clientId)}/revoke`);
    expect(confirm.$('h1').text()).toBe(`Revoke access of ${client.name}?`);
    expect((await browser.submit(confirm, 'form[action$="/revoke"]', {})).status).toBe(303);
    const after = await browser.get(`${server.url}/settings/connected-apps`);
    expect(after.html).toContain(`Access revoked for ${client.name}`);
    expect(after.html).not.toContain(`Revoke access of ${client.name}`);
    expect((await fetch(`${server.url}/v2/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(401);
  });
});
