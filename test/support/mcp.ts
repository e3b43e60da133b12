// The MCP TypeScript SDK's pieces the agent tests share (test/mcp-sdk*.test.ts): a small MCP
// server from the SDK's own server classes that accepts our tokens by introspecting them with its
// resource server's credentials, an OAuthClientProvider whose user agent is our scripted browser,
// and the SDK's own connect-authorize-call flow.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { REDIRECT, type TestClient } from './fixtures.ts';

export const TOOL = 'whoami';
/** The scope the MCP server serves (its resource server's scope, and its metadata's scopes_supported). */
export const MCP_SCOPE = 'PROFILE_READ';

/** What the MCP server answered without a valid token: its challenges, in order. */
export interface McpServerUnderTest {
  url: string;
  metadataUrl: string;
  challenges: string[];
  close(): Promise<void>;
}

/**
 * A small MCP server on node:http with one tool, `whoami`, guarded by our introspection endpoint
 * with its resource server's credentials: only a token our server says is active for it passes.
 */
export async function startMcpServer(introspectionEndpoint: string, issuer: string, credentials: () => TestClient): Promise<McpServerUnderTest> {
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
 * presents is whatever `clientInformation` says (a pre-registered client); with none and a
 * `clientMetadataUrl`, the SDK itself uses that URL as client_id (a client ID metadata document).
 */
export class BrowserDrivenProvider implements OAuthClientProvider {
  /** The authorization URLs the SDK built, and the codes our server redirected back with. */
  readonly authorizationUrls: URL[] = [];
  readonly codes: string[] = [];
  private saved: OAuthTokens | undefined;
  private verifier = '';

  constructor(
    private information: OAuthClientInformationMixed | undefined,
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
  /** Called by the SDK when it settles on a client by itself: a metadata document URL as client_id. */
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
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

