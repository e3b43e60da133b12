// The MCP project's conformance suite (@modelcontextprotocol/conformance), its `authorization` mode,
// run unmodified against our server (issue 47 item 3): its scenarios `authorization-server-metadata-endpoint`
// and `authorization-code-grant`, as a client known only by its metadata document URL, for the
// platform API (`--resource $BASE_URL/v2`). The suite sends no `scope`: the document's is asked for.
//
// The suite prints the authorization URL and waits for its callback on 127.0.0.1; a person would
// open it in a browser. Here the scripted browser is that person: it signs in as a test user and
// clicks Allow on the consent page, then delivers the redirect to the suite's callback. Nothing in
// the server consents by itself.
//
// Not in `npm test`: run by `npm run test:conformance` (vitest.conformance.config.ts) under Node 22
// or later, which the suite needs, with the suite installed (MCP_CONFORMANCE_CLI names its
// dist/index.js, else it is resolved from node_modules); .ci/run does both.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { newUser } from '../support/fixtures.ts';
import { Browser } from '../support/browser.ts';
import { authorize } from '../support/oauth.ts';
import { startDocumentServer, type DocumentServer } from '../support/cimd.ts';
import { freePort } from '../support/processes.ts';
import { eventually } from '../support/eventually.ts';

/** The suite's command line entry point. */
function conformanceCli(): string {
  if (process.env.MCP_CONFORMANCE_CLI) return path.resolve(process.env.MCP_CONFORMANCE_CLI);
  const manifest = createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json');
  return path.join(path.dirname(manifest), 'dist', 'index.js');
}

interface Run {
  output: () => string;
  exited: Promise<number | null>;
}

function runSuite(args: string[]): Run {
  let output = '';
  const child = spawn(process.execPath, [conformanceCli(), 'authorization', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return { output: () => output, exited };
}

describe('MCP conformance suite, authorization mode, against our server', () => {
  let server: TestServer;
  let docs: DocumentServer;
  beforeAll(async () => {
    expect(Number(process.versions.node.split('.')[0]), 'the conformance suite needs Node 22 or later').toBeGreaterThanOrEqual(22);
    [server, docs] = await Promise.all([startTestServer('redis', { CIMD_ALLOW_LOOPBACK: 'true' }), startDocumentServer()]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), docs?.close()]);
  });

  it('authorization-server-metadata-endpoint and authorization-code-grant pass, the client known only by its document URL', { timeout: 120_000 }, async () => {
    const port = await freePort();
    const clientId = docs.serve('/conformance-client.json', (url) => ({
      body: { client_id: url, client_name: 'MCP conformance suite', redirect_uris: [`http://127.0.0.1:${port}/callback`], token_endpoint_auth_method: 'none', scope: 'PROFILE_READ' },
    }));
    const user = await newUser(server, 'Conformance User');
    const issuer = `${server.url}/v2/auth/oauth2`;
    // Both scenarios in one run, the metadata's first: the grant reads the endpoints it found.
    const run = runSuite(['--url', issuer, '--client-id', clientId, '--resource', `${server.url}/v2`, '--port', String(port)]);
    // The person at the browser: the URL the suite prints, then sign-in and Allow.
    const printed = await eventually(() => {
      const url = run.output().split('\n').find((line) => line.startsWith(`${server.url}/auth/oauth2/authorize?`));
      expect(url, run.output()).toBeDefined();
      return url!;
    }, { timeout: 30_000 });
    expect(new URL(printed).searchParams.has('scope')).toBe(false);
    const back = await authorize(new Browser(), server.url, new URL(printed), user);
    expect(back.origin, back.href).toBe(`http://127.0.0.1:${port}`);
    expect(back.searchParams.get('code'), back.href).toBeTruthy();
    // The browser's last step: the redirect reaches the suite's callback server.
    expect((await fetch(back)).status).toBe(200);
    expect(await run.exited, run.output()).toBe(0);
    for (const scenario of ['authorization-server-metadata-endpoint', 'authorization-code-grant']) {
      expect(run.output()).toMatch(new RegExp(`✓ ${scenario}: [1-9]\\d* passed, 0 failed`));
    }
  });
});
