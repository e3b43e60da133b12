// `npm start` with nothing configured: PGlite in an empty DATA_DIR, migrations, a demo user and
// client printed once, and the whole flow served.
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServerProcess, spawnAdmin, type RunningServer } from './support/processes.ts';
import { Browser } from './support/browser.ts';
import { authorize, getMe, tokenRequest } from './support/oauth.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-embedded-'));
let server: RunningServer | undefined;

afterAll(async () => {
  await server?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function demoFrom(output: string) {
  const pick = (re: RegExp) => re.exec(output)?.[1];
  return {
    email: pick(/user:\s+(\S+) \/ password/)!,
    password: pick(/\/ password (\S+)/)!,
    clientId: pick(/client_id:\s+(\S+)/)!,
    clientSecret: pick(/client_secret:\s+(\S+)/)!,
    redirectUri: pick(/redirect_uri:\s+(\S+)/)!,
    authorizeUrl: pick(/1\. open\s+(\S+)/)!,
  };
}

describe('the embedded default', () => {
  it('starts from an empty DATA_DIR, prints a demo, and serves the whole flow', async () => {
    server = await startServerProcess({ DATA_DIR: dataDir });
    const demo = demoFrom(server.output());
    expect(demo.clientSecret, server.output()).toBeTruthy();
    expect((await fetch(`${server.url}/ready`)).status).toBe(200);

    // The printed URL names APP_URL (localhost); drive the same request against the listening address.
    const printed = new URL(demo.authorizeUrl);
    const params = Object.fromEntries(printed.searchParams) as { client_id: string; redirect_uri: string };
    const back = await authorize(new Browser(), server.url, params, { email: demo.email, password: demo.password });
    const code = back.searchParams.get('code')!;
    expect(code).toBeTruthy();
    // The demo ends on this server's own callback page (printed on APP_URL, localhost: asked at the listening address).
    expect(new URL(demo.redirectUri).pathname).toBe('/demo/callback');
    const landing = await new Browser().get(`${server.url}/demo/callback${back.search}`);
    expect(landing.$('#demo-code').text()).toBe(code);
    expect(landing.html).not.toContain(demo.clientSecret);

    const tokens = await tokenRequest(server.url, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: demo.redirectUri,
      client_id: demo.clientId,
      client_secret: demo.clientSecret,
    });
    expect(tokens.status).toBe(200);
    const me = await getMe(server.url, tokens.body.access_token as string);
    expect(me.status).toBe(200);
    expect(me.body.data.email).toBe('demo@example.com');

    // Operator scripts refuse to open the data directory while the server holds it.
    const refused = await spawnAdmin(['clients', 'show', demo.clientId], { DATA_DIR: dataDir });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/stop it|DATABASE_URL/);

    // A graceful stop, then a second start: no new demo, and the issued token still works.
    expect(await server.stop()).toBe(0);
    const shown = await spawnAdmin(['--json', 'clients', 'show', demo.clientId], { DATA_DIR: dataDir });
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ client_id: demo.clientId, status: 'approved' });

    server = await startServerProcess({ DATA_DIR: dataDir });
    expect(server.output()).not.toContain('First start');
    expect((await getMe(server.url, tokens.body.access_token as string)).status).toBe(200);
  }, 90_000);
});
