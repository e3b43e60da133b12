// Issue 36 point 4, the second client: the MCP TypeScript SDK's own auth() flow, unmodified, with
// no registration at all. The SDK is given only a `clientMetadataUrl` (an https URL: the SDK takes
// nothing else); it reads `client_id_metadata_document_supported` in our metadata and uses that URL
// as its client_id, and our server fetches the document the test serves there. The server runs as
// its own process (as `npm start` does) trusting the test's certificate authority through
// NODE_EXTRA_CA_CERTS, as an operator would trust a private one, with CIMD_ALLOW_LOOPBACK=true so the
// document may live on 127.0.0.1 (CONTRACT 8). The agent lands in the unreviewed tier, its tool call
// succeeds, and its token is refused by the platform API.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser } from './support/browser.ts';
import { authorize, type TestUser } from './support/oauth.ts';
import { REDIRECT, type TestClient } from './support/fixtures.ts';
import { createTestDatabase, type TestDatabase } from './support/services.ts';
import { freePort, spawnAdmin, startServerProcess, type RunningServer } from './support/processes.ts';
import { BrowserDrivenProvider, connectAndCallTool, MCP_SCOPE, startMcpServer, type McpServerUnderTest } from './support/mcp.ts';


/** A self-signed certificate for 127.0.0.1 (openssl, as an operator would make a private CA's). */
function selfSignedCertificate(dir: string): { key: string; cert: string; certPath: string } {
  const keyPath = path.join(dir, 'key.pem');
  const certPath = path.join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyPath, '-out', certPath, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  return { key: fs.readFileSync(keyPath, 'utf8'), cert: fs.readFileSync(certPath, 'utf8'), certPath };
}

describe('the MCP SDK’s client auth with a client ID metadata document (no registration)', () => {
  let db: TestDatabase;
  let dir: string;
  let base: string;
  let env: Record<string, string>;
  let server: RunningServer;
  let mcp: McpServerUnderTest;
  let documents: https.Server;
  let documentUrl: string;
  let documentHits = 0;
  let rs: TestClient;
  const user: TestUser = { email: 'agent-user@example.com', password: 'correct horse battery staple' };

  async function cli(args: string[]): Promise<Record<string, unknown>> {
    const result = await spawnAdmin([...args, '--json'], env);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as Record<string, unknown>;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-cimd-'));
    const tls = selfSignedCertificate(dir);
    base = `http://127.0.0.1:${await freePort()}`;
    env = {
      DATABASE_URL: db.url,
      PORT: new URL(base).port,
      APP_URL: base,
      BASE_URL: base,
      CIMD_ALLOW_LOOPBACK: 'true',
      RESOURCE_URI_ALLOW_LOOPBACK: 'true',
      NODE_EXTRA_CA_CERTS: tls.certPath,
    };

    // The agent's document, over https on 127.0.0.1.
    documents = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
      if (req.url !== '/agents/scheduler/client.json') return void res.writeHead(404).end();
      documentHits++;
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' });
      res.end(JSON.stringify({ client_id: documentUrl, client_name: 'Scheduling Agent', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] }));
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    documentUrl = `https://127.0.0.1:${(documents.address() as net.AddressInfo).port}/agents/scheduler/client.json`;

    // The MCP server and its resource server (its own URL as resource), made by the operator scripts.
    mcp = await startMcpServer(`${base}/v2/auth/oauth2/introspect`, `${base}/v2/auth/oauth2`, () => rs);
    await cli(['users', 'create', '--email', user.email, '--password', user.password]);
    const created = await cli(['clients', 'create', '--resource-server', '--name', 'MCP server', '--scope', MCP_SCOPE, '--resource-uri', mcp.url]);
    await cli(['clients', 'approve', String(created.client_id)]);
    rs = { client_id: String(created.client_id), client_secret: String(created.client_secret) };

    server = await startServerProcess(env, 60_000);
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await mcp?.close();
    documents?.closeAllConnections();
    await new Promise((resolve) => (documents ? documents.close(resolve) : resolve(undefined)));
    await db?.drop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the SDK uses its document URL as client_id: discovery, PKCE and resource, our pages, the tool call succeeds; unreviewed, and refused by the platform API', async () => {
    const metadata = (await (await fetch(`${base}/.well-known/oauth-authorization-server/v2/auth/oauth2`)).json()) as Record<string, unknown>;
    expect(metadata.client_id_metadata_document_supported).toBe(true);

    const provider = new BrowserDrivenProvider(undefined, (url) => authorize(new Browser(), base, url, user), REDIRECT, documentUrl);
    const text = await connectAndCallTool(provider, mcp.url);
    expect(JSON.parse(text)).toMatchObject({ aud: mcp.url, client_id: documentUrl });

    // The SDK settled on the URL itself, and asked us for the MCP server with PKCE.
    expect((await provider.clientInformation())!.client_id).toBe(documentUrl);
    const [asked] = provider.authorizationUrls;
    expect(asked!.searchParams.get('client_id')).toBe(documentUrl);
    expect(asked!.searchParams.get('resource')).toBe(mcp.url);
    expect(asked!.searchParams.get('code_challenge_method')).toBe('S256');
    expect(documentHits).toBeGreaterThan(0);

    // Known to the administrators as an unreviewed app from its host.
    const { clients } = (await cli(['clients', 'list-documents'])) as { clients: Array<Record<string, unknown>> };
    expect(clients.find((c) => c.client_id === documentUrl)).toMatchObject({ host: new URL(documentUrl).host, status: 'unreviewed', users: 1 });

    // A token for the MCP server is not one for the platform API.
    const token = provider.tokens()!.access_token;
    expect((await fetch(`${base}/v2/me`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
  }, 60_000);
});
