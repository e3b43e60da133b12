// `npm start` with nothing configured: PGlite in an empty DATA_DIR, migrations, a demo user and
// client printed once, and the whole flow served; the data directory's files the owner's only.
// (The server and the scripts run bundled, test/support/processes.ts; `npm start` itself is run by
// test/config.test.ts.)
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runServerToExit, startServerProcess, spawnAdmin, type CliResult, type RunningServer } from './support/processes.ts';
import { Browser } from './support/browser.ts';
import { authorize, getMe, tokenRequest } from './support/oauth.ts';
import { eventually } from './support/eventually.ts';
import { copyMigratedDataDir } from './support/embedded-template.ts';

const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-embedded-'));
const dataDir = path.join(parent, 'data'); // created by the server
let server: RunningServer | undefined;

afterAll(async () => {
  await server?.stop();
  fs.rmSync(parent, { recursive: true, force: true });
});

function demoFrom(output: string) {
  const pick = (re: RegExp) => re.exec(output)?.[1];
  return {
    email: pick(/user:\s+(\S+) \/ password/)!,
    password: pick(/\/ password (\S+)/)!,
    clientId: pick(/client_id:\s+(\S+)/)!,
    clientSecret: pick(/client_secret:\s+(\S+)/)!,
    redirectUri: pick(/redirect_uri:\s+(\S+)/)!,
    authorizeUrl: pick(/2\. open\s+(\S+)/)!,
  };
}

/** A refusal at the command line: non-zero, one line (no stack trace), matching `reason`. */
function expectOneLine(result: CliResult, reason: RegExp) {
  expect(result.code).not.toBe(0);
  const lines = `${result.stdout}${result.stderr}`.split('\n').filter((l) => l.trim() && !l.startsWith('oidc-provider WARNING'));
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(reason);
  expect(result.stderr).not.toMatch(/^\s+at /m);
}

describe('the embedded default', () => {
  it('starts from an empty DATA_DIR, prints a demo, and serves the whole flow', async () => {
    // Under a permissive umask (000), as some operators' sessions have: the files PGlite's first
    // start creates, the lock and the admin socket are the owner's only all the same.
    server = await startServerProcess({ DATA_DIR: dataDir }, 60_000, '000');
    const demo = demoFrom(server.output());
    expect(demo.clientSecret, server.output()).toBeTruthy();
    expect((await fetch(`${server.url}/ready`)).status).toBe(200);
    expect(fs.lstatSync(path.join(dataDir, 'admin.sock')).isSocket()).toBe(true);
    expect(fs.existsSync(path.join(dataDir, 'server.pid'))).toBe(true);
    expect(looseModes(dataDir)).toEqual([]);

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

    // While it runs (these processes, independent of each other, at once): read-only scripts work
    // through the server's channel; a change is refused at once, in one line that says what to do,
    // and changes nothing; a second npm start on the same data directory says, in one line, what to
    // do, and so does one on another data directory and the same port (naming PORT=).
    const port = new URL(server.url).port;
    const otherDir = path.join(parent, 'other');
    const [shownWhileRunning, listed, orgs, refused, second, samePort] = await Promise.all([
      spawnAdmin(['--json', 'clients', 'show', demo.clientId], { DATA_DIR: dataDir }),
      spawnAdmin(['clients', 'list'], { DATA_DIR: dataDir }),
      spawnAdmin(['--json', 'orgs', 'show', '1'], { DATA_DIR: dataDir }),
      spawnAdmin(['users', 'set-password', demo.email, '--password', 'another-password-1'], { DATA_DIR: dataDir }),
      runServerToExit({ DATA_DIR: dataDir }),
      runServerToExit({ DATA_DIR: otherDir, PORT: port }),
    ]);
    expect(shownWhileRunning.code, shownWhileRunning.stderr).toBe(0);
    expect(JSON.parse(shownWhileRunning.stdout)).toMatchObject({ client_id: demo.clientId, status: 'approved' });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^${demo.clientId} +approved +confidential`, 'm'));
    expect(JSON.parse(orgs.stdout)).toMatchObject({ name: 'Demo Organization', members: [{ email: 'demo@example.com', role: 'owner' }] });
    expectOneLine(refused, /the server \(pid \d+\) is using the embedded database .*stop it \(Ctrl-C\) to make changes, or run both on PostgreSQL \(DATABASE_URL\)/);
    expectOneLine(second, /in use by process \d+.*stop that process/);
    expectOneLine(samePort, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use.*PORT=${Number(port) + 1} npm start`));

    // A graceful stop: now changes work; a lost demo password is reset.
    expect(await server.stop()).toBe(0);
    const shown = await spawnAdmin(['--json', 'clients', 'show', demo.clientId], { DATA_DIR: dataDir });
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ client_id: demo.clientId, status: 'approved' });
    const reset = await spawnAdmin(['users', 'set-password', demo.email, '--password-stdin'], { DATA_DIR: dataDir }, 'a-new-demo-password\n');
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toMatch(/^password_set: true$/m);

    // The second start: no new demo, a reminder of where the credentials were and how to reset
    // them; the issued token still works, and the new password signs in.
    // (With LOG_LEVEL=debug: the development console reads as lines, request lines at debug.)
    server = await startServerProcess({ DATA_DIR: dataDir, LOG_LEVEL: 'debug' });
    expect(server.output()).not.toContain('First start');
    expect(server.output()).toContain(`Demo: sign in as demo@example.com`);
    // The form that keeps the password out of shell history and `ps` (the one used just above).
    expect(server.output()).toContain('npm run --silent admin -- users set-password demo@example.com --password-stdin (type the new password, then Enter)');
    expect(server.output()).not.toMatch(/--password (?!-)/);
    expect(server.output()).toContain(`npm run --silent admin -- secrets rotate ${demo.clientId} --overlap 0s`);
    expect((await getMe(server.url, tokens.body.access_token as string)).status).toBe(200);
    const again = await authorize(new Browser(), server.url, params, { email: demo.email, password: 'a-new-demo-password' });
    expect(again.searchParams.get('code')).toBeTruthy();
    await fetch(`${server.url}/health`);
    await eventually(() => expect(server!.output()).toMatch(/^\[\d\d:\d\d:\d\d\] DEBUG: request .*"path":"\/health"/m));
    expect(server.output()).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: using the embedded PostgreSQL \(PGlite\)/m);
    expect(server.output()).not.toMatch(/^\{"level"/m);
  }, 150_000);
});

/** Entries under `dir` (and `dir`) that are not the owner's only: directories 0700, files and sockets 0600. */
function looseModes(dir: string): string[] {
  const loose: string[] = [];
  const visit = (entry: string) => {
    const stat = fs.lstatSync(entry);
    const mode = stat.mode & 0o777;
    if (mode !== (stat.isDirectory() ? 0o700 : 0o600)) loose.push(`${path.relative(dir, entry) || '.'} ${mode.toString(8)}`);
    if (stat.isDirectory()) for (const name of fs.readdirSync(entry)) visit(path.join(entry, name));
  };
  visit(dir);
  return loose;
}

describe("the embedded database's files, under a permissive umask (000)", () => {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-embedded-modes-'));
  afterAll(() => fs.rmSync(parent, { recursive: true, force: true }));

  // An empty DATA_DIR's first start under umask 000 is the test above; here a data directory that
  // exists already (a copy of a migrated one), left open to everyone, as an earlier version, or
  // PGlite's own first files (0666), left it.
  it("an existing data directory open to everyone is made the owner's only on start, and stays so while the server runs, after it stops and after a script's change", async () => {
    const dir = path.join(parent, 'loose');
    await copyMigratedDataDir(dir);
    const open = (entry: string) => {
      const isDir = fs.statSync(entry).isDirectory();
      fs.chmodSync(entry, isDir ? 0o777 : 0o666);
      if (isDir) for (const name of fs.readdirSync(entry)) open(path.join(entry, name));
    };
    open(dir);
    expect(looseModes(dir)).not.toEqual([]); // what the start has to tighten

    const running = await startServerProcess({ DATA_DIR: dir }, 60_000, '000');
    try {
      // A read-only script through the admin socket, which is there now.
      const listed = await spawnAdmin(['clients', 'list'], { DATA_DIR: dir }, '', '000');
      expect(listed.code, listed.stderr).toBe(0);
      expect(fs.lstatSync(path.join(dir, 'admin.sock')).isSocket()).toBe(true);
      expect(fs.existsSync(path.join(dir, 'server.pid'))).toBe(true);
      expect(looseModes(dir)).toEqual([]);
    } finally {
      expect(await running.stop()).toBe(0);
    }
    expect(looseModes(dir)).toEqual([]);
    const created = await spawnAdmin(['users', 'create', '--email', 'modes@example.com', '--password-stdin'], { DATA_DIR: dir }, 'a-password-for-modes\n', '000');
    expect(created.code, created.stderr).toBe(0);
    expect(looseModes(dir)).toEqual([]);
  }, 120_000);
});
