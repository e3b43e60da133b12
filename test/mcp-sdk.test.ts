// Issue 36 point 4: software nobody here wrote. The MCP TypeScript SDK's own client auth
// (`@modelcontextprotocol/sdk`: StreamableHTTPClientTransport, its auth() flow with an
// OAuthClientProvider), unmodified, against a small MCP server built with the same SDK's server
// classes (McpServer, StreamableHTTPServerTransport on node:http). The MCP server is a resource
// server of ours (RFC 8707: registered with its own URL as resource URI): it accepts a bearer token
// by introspecting it with its own credentials, and answers anything else with a 401 naming its
// protected-resource metadata (RFC 9728), which names our issuer. The SDK finds us from that 401,
// authorizes with PKCE and `resource` through our sign-in and consent pages (real HTTP), exchanges
// the code, and its tool call succeeds. A token for the MCP server is refused by the platform API,
// and the other way round. On both stores.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorize } from './support/oauth.ts';
import { newUser, operator, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';
import { clientsCreate, clientsSetStatus } from '../src/admin/commands.ts';

const TOOL = 'whoami';
/** The scope the MCP server serves (its resource server's scope, and its metadata's scopes_supported). */
const MCP_SCOPE = 'PROFILE_READ';

/** What the MCP server answered without a valid token: its challenges, in order. */
interface McpServerUnderTest {
  url: string;
  metadataUrl: string;
  challenges: string[];
  close(): Promise<void>;
}

/**
 * A small MCP server on node:http with one tool, `whoami`, guarded by our introspection endpoint
 * with its resource server's credentials: only a token our server says is active for it passes.
 */
async function startMcpServer(introspectionEndpoint: string, issuer: string, credentials: () => TestClient): Promise<McpServerUnderTest> {
  const challenges: string[] = [];
  const listener = http.createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  const url = `${origin}/mcp`;
  const metadataUrl = `${origin}/.well-known/oauth-protected-resource/mcp`;

  async function introspect(token: string): Promise<Record<string, unknown>> {
    const { client_id, client_secret } = credentials();
    const res = await fetch(introspectionEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString('base64')}` },
      body: new URLSearchParams({ token }),
    });
    if (res.status !== 200) throw new Error(`introspection answered ${res.status}`);
    return (await res.json()) as Record<string, unknown>;
  }

  listener.on('request', (req, res) => {
    void (async () => {
      const path = new URL(req.url!, origin).pathname;
      if (req.method === 'GET' && path === '/.well-known/oauth-protected-resource/mcp') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ resource: url, authorization_servers: [issuer], scopes_supported: [MCP_SCOPE], bearer_methods_supported: ['header'] }));
        return;
      }
      if (path !== '/mcp') {
        res.writeHead(404).end();
        return;
      }
      const token = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
      const seen = token ? await introspect(token) : undefined;
      if (!token || seen?.active !== true) {
        const challenge = `Bearer ${token ? 'error="invalid_token", ' : ''}resource_metadata="${metadataUrl}"`;
        challenges.push(challenge);
        req.resume();
        res.writeHead(401, { 'www-authenticate': challenge, 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: token ? 'invalid_token' : 'unauthorized' }));
        return;
      }
      // Stateless: a server and transport per request, the token's facts handed to the tool.
      const auth = { token, clientId: String(seen.client_id), scopes: String(seen.scope ?? '').split(' '), extra: { sub: seen.sub, aud: seen.aud } };
      const server = new McpServer({ name: 'scheduling-mcp-test', version: '1.0.0' });
      server.registerTool(TOOL, { description: 'Who the token is for' }, async (extra) => ({
        content: [{ type: 'text', text: JSON.stringify({ sub: extra.authInfo?.extra?.sub, aud: extra.authInfo?.extra?.aud, client_id: extra.authInfo?.clientId }) }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void Promise.all([transport.close(), server.close()]));
      await server.connect(transport);
      await transport.handleRequest(Object.assign(req, { auth }), res);
    })().catch((err: Error) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err.message));
    });
  });

  return {
    url,
    metadataUrl,
    challenges,
    async close() {
      listener.closeAllConnections();
      await new Promise((resolve) => listener.close(resolve));
    },
  };
}

/**
 * An OAuthClientProvider (the SDK's interface) whose user agent is our scripted browser: it signs
 * in and clicks Allow on our pages, and keeps the code the redirect brings back. The client it
 * presents is whatever `clientInformation` says: a pre-registered client here; a client ID
 * metadata document (issue 36 point 3) is another `clientInformation` (and `clientMetadataUrl`).
 */
export class BrowserDrivenProvider implements OAuthClientProvider {
  /** The authorization URLs the SDK built, and the codes our server redirected back with. */
  readonly authorizationUrls: URL[] = [];
  readonly codes: string[] = [];
  private saved: OAuthTokens | undefined;
  private verifier = '';

  constructor(
    private readonly information: OAuthClientInformationMixed,
    private readonly signIn: (authorizationUrl: URL) => Promise<URL>,
    readonly redirectUrl: string = REDIRECT,
    readonly clientMetadataUrl?: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'MCP SDK test agent', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], scope: MCP_SCOPE };
  }
  clientInformation() {
    return this.information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(authorizationUrl: URL) {
    this.authorizationUrls.push(authorizationUrl);
    const back = await this.signIn(authorizationUrl);
    const code = back.searchParams.get('code');
    if (!code) throw new Error(`no code in the redirect back: ${back.href}`);
    this.codes.push(code);
  }
}

/**
 * The extension point for other kinds of client (the CIMD variant): the SDK's own flow with this
 * provider against the MCP server. The first connection meets the 401, the SDK discovers and
 * authorizes (the provider drives our pages), finishAuth exchanges the code; a second connection
 * with the tokens calls the tool. Returns the tool's text.
 */
export async function connectAndCallTool(provider: OAuthClientProvider & { codes: string[] }, mcpUrl: string): Promise<string> {
  const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  await expect(new Client({ name: 'sdk-test-agent', version: '1.0.0' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.codes).toHaveLength(1);
  await first.finishAuth(provider.codes[0]!);
  await first.close();

  const client = new Client({ name: 'sdk-test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
  try {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([TOOL]);
    const result = await client.callTool({ name: TOOL });
    expect(result.isError).toBeFalsy();
    const [content] = result.content as Array<{ type: string; text: string }>;
    return content!.text;
  } finally {
    await client.close();
  }
}

describe.each<Storage>(['redis', 'sql'])('the MCP SDK’s client auth against an MCP server that introspects our tokens (%s storage)', (storage) => {
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
    const created = await clientsCreate({ ...operator(server), allowLoopback: true }, { name: 'MCP server', resourceServer: true, resourceUri: mcp.url, scope: [MCP_SCOPE] });
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
      expect(JSON.parse(text)).toEqual({ sub: String(user.id), aud: mcp.url, client_id: (await provider.clientInformation()).client_id });

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
