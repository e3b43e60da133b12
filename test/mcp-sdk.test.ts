// Issue 36 point 4: software nobody here wrote. The MCP TypeScript SDK's own client auth
// (`@modelcontextprotocol/sdk`: StreamableHTTPClientTransport, its auth() flow with an
// OAuthClientProvider), unmodified, against a small MCP server built with the same SDK's server
// classes (McpServer, StreamableHTTPServerTransport on node:http). The MCP server is a resource
// server of ours (RFC 8707: registered with its own URL as resource URI): it accepts a bearer token
// by introspecting it with its own credentials, and answers anything else with a 401 naming its
// protected-resource metadata (RFC 9728), which names our issuer. The SDK finds us from that 401,
// authorizes with PKCE and `resource` through our sign-in and consent pages (real HTTP), exchanges
// the code, and its tool call succeeds. A token for the MCP server is refused by the platform API,
// and the other way round. A pre-registered client with keys signs its token requests with the
// SDK's own private_key_jwt helper (auth-extensions); held to the high-trust profile, it is refused
// in words (the SDK neither pushes requests nor proves DPoP keys).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { createPrivateKeyJwtAuth } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { generateKeyPairSync } from 'node:crypto';
import type { OAuthClientInformationMixed } from '@modelcontextprotocol/sdk/shared/auth.js';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorize } from './support/oauth.ts';
import { newUser, operator, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';
import { clientsCreate, clientsSetHighTrust, clientsSetStatus } from '../src/admin/commands.ts';
import { BrowserDrivenProvider, connectAndCallTool, MCP_SCOPE, startMcpServer, TOOL, type McpServerUnderTest } from './support/mcp.ts';

describe('the MCP SDK’s client auth against an MCP server that introspects our tokens (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let mcp: McpServerUnderTest;
  let rs: TestClient;
  let user: Awaited<ReturnType<typeof newUser>>;
  const issuer = () => `${server.url}/v2/auth/oauth2`;

  /** Sign-in and Allow on our pages, in a fresh browser, for the URL the SDK built. */
  const signIn = (authorizationUrl: URL) => authorize(new Browser(), server.url, authorizationUrl, user);

  async function preRegistered(kind: 'confidential' | 'public'): Promise<OAuthClientInformationMixed> {
    const created = await clientsCreate(operator(server), { name: `Agent (${kind})`, redirectUri: [REDIRECT], scope: [MCP_SCOPE, 'BOOKING_READ'], public: kind === 'public' });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    return kind === 'public' ? { client_id: created.client_id } : { client_id: created.client_id, client_secret: created.client_secret! };
  }

  beforeAll(async () => {
    server = await startTestServer(storage);
    user = await newUser(server);
    mcp = await startMcpServer(`${server.url}/v2/auth/oauth2/introspect`, issuer(), () => rs);
    // The MCP server's resource server: its own URL is its resource (loopback allowed, as in development).
    const created = await clientsCreate({ ...operator(server), resourceUriAllowLoopback: true }, { name: 'MCP server', resourceServer: true, resourceUri: mcp.url, scope: [MCP_SCOPE] });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    rs = { client_id: created.client_id, client_secret: created.client_secret! };
  });
  afterAll(async () => {
    await mcp?.close();
    await server?.close();
  });

  for (const kind of ['confidential', 'public'] as const) {
    it(`a pre-registered ${kind} client: 401 with resource_metadata, discovery, PKCE and resource, our pages, the tool call succeeds`, async () => {
      const provider = new BrowserDrivenProvider(await preRegistered(kind), signIn);
      mcp.challenges.length = 0;
      const text = await connectAndCallTool(provider, mcp.url);
      expect(JSON.parse(text)).toEqual({ sub: String(user.id), aud: mcp.url, client_id: (await provider.clientInformation())!.client_id });

      // The SDK met our challenge and found us from it: the authorization request names the
      // MCP server as resource, with PKCE, on our authorization endpoint.
      expect(mcp.challenges[0]).toBe(`Bearer resource_metadata="${mcp.metadataUrl}"`);
      const [asked] = provider.authorizationUrls;
      expect(`${asked!.origin}${asked!.pathname}`).toBe(`${server.url}/auth/oauth2/authorize`);
      expect(asked!.searchParams.get('resource')).toBe(mcp.url);
      expect(asked!.searchParams.get('code_challenge_method')).toBe('S256');
      expect(asked!.searchParams.get('scope')).toBe(MCP_SCOPE);

      // A token for the MCP server is not one for the platform API…
      const mcpToken = provider.tokens()!.access_token;
      const check = await fetch(`${server.url}/v2/auth/check`, { headers: { authorization: `Bearer ${mcpToken}`, 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': '/v2/me' } });
      expect(check.status).toBe(401);
      expect(check.headers.get('www-authenticate')).toMatch(/error="invalid_token".*resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/v2"/);
      expect((await fetch(`${server.url}/v2/me`, { headers: { authorization: `Bearer ${mcpToken}` } })).status).toBe(401);

      // The SDK's refresh (with `resource`, as it sends it): a new token, for the MCP server still.
      const spent = provider.tokens()!.refresh_token;
      expect(await auth(provider, { serverUrl: mcp.url })).toBe('AUTHORIZED');
      expect(provider.tokens()!.refresh_token).not.toBe(spent);
      expect(provider.codes).toHaveLength(1); // no new authorization
      const client = new Client({ name: 'sdk-test-agent', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: provider }));
      const again = await client.callTool({ name: TOOL });
      await client.close();
      expect(JSON.parse((again.content as Array<{ text: string }>)[0]!.text)).toMatchObject({ aud: mcp.url });
    });
  }

  /** A pre-registered client with keys instead of a secret (private_key_jwt), and the SDK's own assertion maker for it. */
  async function keyedAgent(name: string) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwks = JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'agent-key', alg: 'ES256', use: 'sig' }] });
    const created = await clientsCreate(operator(server), { name, redirectUri: [REDIRECT], scope: [MCP_SCOPE], auth: 'private_key_jwt', jwks });
    await clientsSetStatus(operator(server), created.client_id, 'approved');
    const provider = Object.assign(new BrowserDrivenProvider({ client_id: created.client_id }, signIn), {
      // The SDK's helper (auth-extensions), unmodified: its assertion's aud is the issuer from our metadata.
      addClientAuthentication: createPrivateKeyJwtAuth({ issuer: created.client_id, subject: created.client_id, privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, alg: 'ES256' }),
    });
    return { clientId: created.client_id, provider };
  }

  it('a pre-registered client with keys (private_key_jwt): the SDK signs its code exchange and refresh with the assertion it makes; the tool call succeeds', async () => {
    const { clientId, provider } = await keyedAgent('Agent (keys)');
    const text = await connectAndCallTool(provider, mcp.url);
    expect(JSON.parse(text)).toEqual({ sub: String(user.id), aud: mcp.url, client_id: clientId });
    const spent = provider.tokens()!.refresh_token;
    expect(await auth(provider, { serverUrl: mcp.url })).toBe('AUTHORIZED');
    expect(provider.tokens()!.refresh_token).not.toBe(spent);
    // Without its keys the same client is nobody: the SDK's exchange without an assertion is refused.
    const bare = await fetch(`${issuer()}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: provider.tokens()!.refresh_token!, client_id: clientId }) });
    expect(bare.status).toBe(401);
  });

  it('held to the high-trust profile, the same SDK client is refused at authorization, naming what it lacks: the SDK pushes no requests (PAR) and proves no DPoP key', async () => {
    const { clientId, provider } = await keyedAgent('Agent (held to high trust)');
    await clientsSetHighTrust(operator(server), clientId, 'on');
    const refusals: URL[] = [];
    const held = Object.assign(provider, {
      redirectToAuthorization: async (authorizationUrl: URL) => {
        refusals.push(new URL((await fetch(authorizationUrl, { redirect: 'manual' })).headers.get('location')!));
      },
    });
    const transport = new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: held });
    await expect(new Client({ name: 'sdk-test-agent', version: '1.0.0' }).connect(transport)).rejects.toThrow();
    await transport.close();
    expect(refusals).toHaveLength(1);
    expect(refusals[0]!.searchParams.get('error')).toBe('invalid_request');
    expect(refusals[0]!.searchParams.get('error_description')).toContain('held to the high-trust profile (FAPI 2.0 Security Profile): its authorization requests must be pushed first (PAR, RFC 9126)');
  });

  it('a token for the platform API is refused by the MCP server: its introspection says inactive', async () => {
    const info = (await preRegistered('confidential')) as TestClient;
    const platformToken = (await tokensFor(server, info, user, MCP_SCOPE)).access_token;
    expect((await fetch(`${server.url}/v2/me`, { headers: { authorization: `Bearer ${platformToken}` } })).status).toBe(200);
    mcp.challenges.length = 0;
    const res = await fetch(mcp.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${platformToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", resource_metadata="${mcp.metadataUrl}"`);
  });
});
