// RFC 8707 resources and RFC 9728 metadata (docs/resources.md): `resource` names the platform API
// or a registered resource server; tokens carry their audience; introspection answers it and shows
// a resource server only the tokens for it; the check and /v2/me refuse tokens for elsewhere; every
// 401 names the platform API's protected-resource metadata. On both stores.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorize, authorizeUrl, getMe, tokenRequest } from './support/oauth.ts';
import { approvedClient, newUser, operator, REDIRECT, type TestClient } from './support/fixtures.ts';
import { clientsCreate, clientsSetStatus, clientsShow } from '../src/admin/commands.ts';
import { admin } from './support/processes.ts';

const MCP = 'https://mcp.example.com/mcp';
const basic = (c: TestClient) => `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}`;

describe('resources and audiences (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let app: TestClient;
  let user: Awaited<ReturnType<typeof newUser>>;
  let mcp: TestClient; // the resource server for MCP
  let platformRs: TestClient; // a resource server without a resource URI: the platform API's
  let platform: string;

  async function resourceServer(name: string, options: { resourceUri?: string; scope?: string[]; approve?: boolean } = {}) {
    const created = await clientsCreate(operator(server), { name, resourceServer: true, ...(options.scope ? { scope: options.scope } : {}), ...(options.resourceUri ? { resourceUri: options.resourceUri } : {}) });
    if (options.approve !== false) await clientsSetStatus(operator(server), created.client_id, 'approved');
    return { client_id: created.client_id, client_secret: created.client_secret! };
  }

  async function introspect(by: TestClient, token: string) {
    const res = await fetch(`${server.url}/v2/auth/oauth2/introspect`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(by) },
      body: new URLSearchParams({ token }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  }

  /** Sign-in and Allow for `scope` with these extra authorization parameters: the code. */
  async function codeWith(scope: string, extra: { resource?: string | string[]; browser?: Browser } = {}): Promise<string> {
    const url = new URL(authorizeUrl(server.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope, state: 's' }));
    for (const resource of [extra.resource ?? []].flat()) url.searchParams.append('resource', resource);
    const back = await authorize(extra.browser ?? new Browser(), server.url, url, user);
    const code = back.searchParams.get('code');
    expect(code, back.href).toBeTruthy();
    return code!;
  }

  /** codeWith, then the code exchange. */
  async function tokensWith(scope: string, extra: { resource?: string | string[]; browser?: Browser } = {}, exchange: Record<string, string> = {}) {
    const code = await codeWith(scope, extra);
    const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...app, ...exchange });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { access_token: string; refresh_token: string; scope: string };
  }

  const check = (token?: string) =>
    fetch(`${server.url}/v2/auth/check`, { headers: { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': '/v2/bookings', ...(token ? { authorization: `Bearer ${token}` } : {}) } });

  beforeAll(async () => {
    server = await startTestServer(storage);
    platform = `${server.url}/v2`;
    app = await approvedClient(server, ['PROFILE_READ', 'BOOKING_READ']);
    user = await newUser(server);
    mcp = await resourceServer('MCP server', { resourceUri: MCP, scope: ['PROFILE_READ'] });
    platformRs = await resourceServer('Bookings API');
  });
  afterAll(() => server?.close());

  it('registers a resource server with its resource URI, shown by clients show, and refuses bad ones', async () => {
    const shown = await clientsShow(operator(server), mcp.client_id);
    expect(shown).toMatchObject({ kind: 'resource_server', resource_uri: MCP });
    expect(await clientsShow(operator(server), platformRs.client_id)).toMatchObject({ resource_uri: null });
    const create = (resourceUri: string, extra: object = {}) => clientsCreate({ ...operator(server), ...extra }, { name: 'RS', resourceServer: true, resourceUri });
    await expect(create('/relative')).rejects.toThrow(/absolute URL/);
    await expect(create('https://api.example.com/x#frag')).rejects.toThrow(/fragment/);
    await expect(create('http://api.example.com/x')).rejects.toThrow(/https/);
    await expect(create('http://127.0.0.1:9/mcp')).rejects.toThrow(/RESOURCE_URI_ALLOW_LOOPBACK/);
    await expect(create('HTTPS://API.example.com/x')).rejects.toThrow(/write the resource URI as "https:\/\/api\.example\.com\/x"/);
    await expect(create(MCP)).rejects.toThrow(/already serves/);
    await expect(clientsCreate(operator(server), { name: 'App', redirectUri: [REDIRECT], scope: ['PROFILE_READ'], resourceUri: 'https://x.example.com/' })).rejects.toThrow(/only a resource server/);
    // The webhooks' loopback setting is not this one (src/http/loopback.ts: one setting per concern).
    await expect(create('http://127.0.0.1:9/mcp', { allowLoopback: true })).rejects.toThrow(/RESOURCE_URI_ALLOW_LOOPBACK/);
    expect(await create('http://127.0.0.1:9/mcp', { resourceUriAllowLoopback: true })).toMatchObject({ resource_uri: 'http://127.0.0.1:9/mcp' });
  });

  it('a loopback resource URI follows RESOURCE_URI_ALLOW_LOOPBACK, its own setting, not WEBHOOK_ALLOW_LOOPBACK (the operator script)', async () => {
    const create = (uri: string, loopback: Record<string, string>) =>
      admin(['--json', 'clients', 'create', '--resource-server', '--name', 'Local MCP', '--scope', 'PROFILE_READ', '--resource-uri', uri], { DATABASE_URL: server.pg.url, ...loopback });
    const byWebhooks = await create(`http://127.0.0.1:9/webhooks-${storage}`, { WEBHOOK_ALLOW_LOOPBACK: 'true' });
    expect(byWebhooks.code, byWebhooks.stdout).not.toBe(0);
    expect(byWebhooks.stderr).toMatch(/the resource URI must use https \(http on localhost only with RESOURCE_URI_ALLOW_LOOPBACK=true\)/);
    const uri = `http://127.0.0.1:9/own-${storage}`;
    const byOwn = await create(uri, { RESOURCE_URI_ALLOW_LOOPBACK: 'true' });
    expect(byOwn.code, byOwn.stderr).toBe(0);
    expect(JSON.parse(byOwn.stdout)).toMatchObject({ kind: 'resource_server', resource_uri: uri });
  });

  it('takes --resource-uri from the operator script, and refuses a bad one with one line, changing nothing', async () => {
    const env = { DATABASE_URL: server.pg.url };
    const uri = `https://cli-${storage}.example.com/mcp`;
    const created = await admin(['--json', 'clients', 'create', '--resource-server', '--name', 'CLI MCP', '--scope', 'PROFILE_READ', '--resource-uri', uri], env);
    expect(created.code, created.stderr).toBe(0);
    const { client_id } = JSON.parse(created.stdout) as { client_id: string };
    expect(JSON.parse(created.stdout)).toMatchObject({ kind: 'resource_server', resource_uri: uri });
    const shown = await admin(['--json', 'clients', 'show', client_id], env);
    expect(JSON.parse(shown.stdout)).toMatchObject({ resource_uri: uri });
    const before = await server.pg.db('oauth_clients').count({ n: '*' }).first();
    const refused = await admin(['--json', 'clients', 'create', '--resource-server', '--name', 'Bad', '--resource-uri', `${uri}#x`], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^error: the resource URI must not have a fragment/)]);
    expect(await server.pg.db('oauth_clients').count({ n: '*' }).first()).toEqual(before);
  });

  it('issues a token for a resource server: its audience, its scopes, seen by it alone, refused by the platform API', async () => {
    const tokens = await tokensWith('PROFILE_READ BOOKING_READ', { resource: MCP });
    // Only the scopes the resource server serves.
    expect(tokens.scope).toBe('PROFILE_READ');
    const stored = await server.system.provider.AccessToken.find(tokens.access_token);
    expect(stored?.aud).toBe(MCP);
    expect(await introspect(app, tokens.access_token)).toMatchObject({ active: true, aud: MCP, scope: 'PROFILE_READ' });
    expect(await introspect(mcp, tokens.access_token)).toMatchObject({ active: true, aud: MCP, client_id: app.client_id });
    expect(await introspect(platformRs, tokens.access_token)).toEqual({ active: false });

    const refused = await check(tokens.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe(
      `Bearer realm="api", error="invalid_token", error_description="the access token is for another resource", resource_metadata="${server.url}/.well-known/oauth-protected-resource/v2"`,
    );
    const me = await getMe(server.url, tokens.access_token);
    expect(me.status).toBe(401);
    expect(me.body.error.code).toBe('invalid_token');
    expect(me.challenge).toMatch(/resource_metadata=/);
  });

  it('issues a token without resource for the platform API as before: no audience stored, aud answered, refused by other resource servers', async () => {
    const tokens = await tokensWith('PROFILE_READ');
    expect((await server.system.provider.AccessToken.find(tokens.access_token))?.aud).toBeUndefined();
    expect(await introspect(app, tokens.access_token)).toMatchObject({ active: true, aud: platform });
    expect(await introspect(platformRs, tokens.access_token)).toMatchObject({ active: true, aud: platform });
    expect(await introspect(mcp, tokens.access_token)).toEqual({ active: false });
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);
    // Refresh tokens carry no audience.
    expect((await introspect(app, tokens.refresh_token)).aud).toBeUndefined();
  });

  it('issues a token for the platform API when it is named, accepted by the check and /v2/me', async () => {
    const tokens = await tokensWith('PROFILE_READ BOOKING_READ', { resource: platform }, { resource: platform });
    expect(tokens.scope).toBe('PROFILE_READ BOOKING_READ');
    expect(await introspect(app, tokens.access_token)).toMatchObject({ aud: platform });
    expect((await check(tokens.access_token)).status).toBe(200);
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);
    expect(await introspect(mcp, tokens.access_token)).toEqual({ active: false });
  });

  it('refreshes within the granted resources: kept without resource, narrowed, never widened (and nothing spent on a refusal)', async () => {
    const both = await tokensWith('PROFILE_READ', { resource: [MCP, platform] }, { resource: MCP });
    // Two resources granted at authorization; the exchange named one.
    expect(await introspect(app, both.access_token)).toMatchObject({ aud: MCP });
    const narrowed = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: both.refresh_token, resource: platform }, { basic: [app.client_id, app.client_secret] });
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    expect(await introspect(app, narrowed.body.access_token as string)).toMatchObject({ aud: platform });

    const mcpOnly = await tokensWith('PROFILE_READ', { resource: MCP });
    let refresh = mcpOnly.refresh_token;
    const kept = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: refresh, ...app });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(await introspect(app, kept.body.access_token as string)).toMatchObject({ aud: MCP });
    refresh = kept.body.refresh_token as string;
    for (const resource of [platform, 'https://elsewhere.example.com/', '/v2', `${MCP}#x`]) {
      const widened = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: refresh, resource, ...app });
      expect(widened.status, resource).toBe(400);
      expect(widened.body.error, resource).toBe('invalid_target');
    }
    // The refusals spent nothing: the same refresh token still works.
    const after = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: refresh, resource: MCP, ...app });
    expect(after.status, JSON.stringify(after.body)).toBe(200);

    // A token issued without resource keeps none: naming one is refused, nothing spent.
    const plain = await tokensWith('PROFILE_READ');
    const named = await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: plain.refresh_token, resource: MCP, ...app });
    expect(named.body.error).toBe('invalid_target');
    expect((await tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: plain.refresh_token, ...app })).status).toBe(200);
  });

  it('refuses a code exchange whose resource is unknown or not granted with invalid_target, spending nothing: the corrected retry gets tokens and the grant lives', async () => {
    const exchange = (code: string, resource?: string) =>
      tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...app, ...(resource === undefined ? {} : { resource }) });
    // Issue 45 item 9: each refusal used to consume the code, and the retry was a replay that revoked the grant.
    const cases: Array<[granted: string | string[] | undefined, refused: string | undefined, corrected: string | undefined, aud: () => string]> = [
      [undefined, 'https://unknown.example.com/mcp', undefined, () => platform], // not registered here
      [MCP, 'https://unknown.example.com/mcp', MCP, () => MCP],
      [MCP, platform, undefined, () => MCP], // registered, but not granted to this code
      [[MCP, platform], undefined, MCP, () => MCP], // two granted and none chosen
    ];
    for (const [granted, refused, corrected, aud] of cases) {
      const code = await codeWith('PROFILE_READ', granted === undefined ? {} : { resource: granted });
      const refusal = await exchange(code, refused);
      expect([refusal.status, refusal.body.error], `${granted} / ${refused}`).toEqual([400, 'invalid_target']);
      const tokens = await exchange(code, corrected);
      expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
      // The grant lives: its tokens are active, and its refresh token refreshes.
      expect(await introspect(app, tokens.body.access_token as string)).toMatchObject({ active: true, aud: aud() });
      const refresh = (resource?: string) => tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token as string, ...app, ...(resource === undefined ? {} : { resource }) });
      // Two granted: a refresh too must choose, and is refused before its token is spent.
      if (Array.isArray(granted)) expect((await refresh()).body.error).toBe('invalid_target');
      const refreshed = await refresh(corrected);
      expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
      // A replay of the code is still one: refused, and the grant revoked.
      expect((await exchange(code, corrected)).body.error).toBe('invalid_grant');
      expect(await introspect(app, refreshed.body.access_token as string)).toMatchObject({ active: false });
    }
  });

  it('asks consent again for a resource the grant does not cover yet, and issues a token for it from the same grant', async () => {
    const browser = new Browser();
    const first = await tokensWith('PROFILE_READ', { browser });
    const second = await tokensWith('PROFILE_READ', { browser, resource: MCP });
    const [a, b] = await Promise.all([first, second].map((t) => server.system.provider.AccessToken.find(t.access_token)));
    expect(b!.grantId).toBe(a!.grantId);
    expect([a!.aud, b!.aud]).toEqual([undefined, MCP]);
    // Both tokens stay good where each belongs.
    expect((await getMe(server.url, first.access_token)).status).toBe(200);
    expect(await introspect(mcp, second.access_token)).toMatchObject({ active: true, aud: MCP });
  });

  it('refuses bad resource values at the authorization endpoint with invalid_target, issuing nothing', async () => {
    const pending = `https://pending-${storage}.example.com/mcp`;
    await resourceServer('Pending RS', { resourceUri: pending, approve: false });
    const bad: Array<string | string[]> = ['/v2', 'mcp.example.com', `${MCP}#fragment`, [MCP, MCP], 'https://unregistered.example.com/', pending];
    for (const resource of bad) {
      const query = new URLSearchParams({ response_type: 'code', client_id: app.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 'st' });
      for (const value of [resource].flat()) query.append('resource', value);
      const page = await new Browser().get(`${server.url}/auth/oauth2/authorize?${query}`);
      expect(page.status, String(resource)).toBe(303);
      const back = new URL(page.location!);
      expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
      expect(back.searchParams.get('error'), String(resource)).toBe('invalid_target');
      expect(back.searchParams.get('code')).toBeNull();
      expect(back.searchParams.get('state')).toBe('st');
    }
    // The URL helper's way, one parameter: a relative value.
    const relative = await new Browser().get(authorizeUrl(server.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', resource: 'relative/path' }));
    expect(new URL(relative.location!).searchParams.get('error')).toBe('invalid_target');
  });

  it('refuses bad resource values at the token endpoint with invalid_target, never a 500', async () => {
    for (const resource of [['https://unregistered.example.com/'], [MCP, MCP], [MCP, platform], ['/v2'], [`${MCP}#x`]]) {
      const back = await authorize(new Browser(), server.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', resource: MCP }, user);
      const body = new URLSearchParams({ grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, ...app });
      for (const value of resource) body.append('resource', value);
      const res = await fetch(`${server.url}/v2/auth/oauth2/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
      expect(res.status, resource.join(' ')).toBe(400);
      const answer = (await res.json()) as Record<string, unknown>;
      expect(answer.error, resource.join(' ')).toBe('invalid_target');
      expect(answer.access_token).toBeUndefined();
    }
  });

  it('serves the protected-resource metadata (RFC 9728) that every 401 names', async () => {
    const res = await fetch(`${server.url}/.well-known/oauth-protected-resource/v2`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const metadata = (await res.json()) as Record<string, unknown>;
    expect(metadata).toEqual({
      resource: platform,
      authorization_servers: [`${server.url}/v2/auth/oauth2`],
      scopes_supported: expect.arrayContaining(['PROFILE_READ', 'BOOKING_WRITE', 'ORG_PROFILE_READ']),
      bearer_methods_supported: ['header'],
    });
    // The authorization server it names publishes its metadata where RFC 8414 says.
    expect((await fetch(`${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`)).status).toBe(200);

    const none = await check();
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer realm="api", resource_metadata="${server.url}/.well-known/oauth-protected-resource/v2"`);
    const me = await getMe(server.url);
    expect(me.challenge).toBe(`Bearer realm="api", resource_metadata="${server.url}/.well-known/oauth-protected-resource/v2"`);
    const bad = await getMe(server.url, 'not-a-token');
    expect(bad.challenge).toMatch(/^Bearer realm="api", error="invalid_token", error_description="[^"]*", resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/v2"$/);
    // 403s name the scope needed (step-up), as before.
    const reader = await tokensWith('PROFILE_READ');
    const write = await fetch(`${server.url}/v2/auth/check`, { headers: { 'X-Forwarded-Method': 'POST', 'X-Forwarded-Uri': '/v2/event-types', authorization: `Bearer ${reader.access_token}` } });
    expect(write.status).toBe(403);
    expect(write.headers.get('www-authenticate')).toBe('Bearer realm="api", error="insufficient_scope", scope="EVENT_TYPE_WRITE"');
  });
});
