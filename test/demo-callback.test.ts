// The demo ends somewhere (src/web/demo-callback.ts): the demo client returns to this server's
// callback page, which shows the code, its lifetime, the state and one command that exchanges it
// and calls /v2/me — and that command works in a real shell, stops plainly without
// $CLIENT_SECRET, and a spent or expired code is said in words. Without the demo the page does not exist.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { getMe, reachConsent } from './support/oauth.ts';
import { loadConfig } from '../src/config.ts';
import { seedDemo } from '../src/demo.ts';
import { exchangeCommand, findDemoClient } from '../src/web/demo-callback.ts';

let server: TestServer;
let output = '';
const pick = (re: RegExp) => re.exec(output)?.[1] ?? '';

beforeAll(async () => {
  server = await startTestServer('sql');
});
afterAll(() => server?.close());

/** Runs a command of the page in a real shell, as a person pasting it would, with this environment. */
function runInShell(command: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { env: { PATH: process.env.PATH, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('the demo callback page', () => {
  it('is a 404 where no demo was set up', async () => {
    const page = await new Browser().get(`${server.url}/demo/callback?code=abc`);
    expect(page.status).toBe(404);
    expect(page.$('h1').text()).toBe('Page not found');
  });

  it('shows the code, its 60 seconds, the state and a curl that exchanges it', async () => {
    output = await seedDemo(server.system, loadConfig({ NODE_ENV: 'test', APP_URL: server.url, DATABASE_URL: server.pg.url }));
    const secret = pick(/client_secret:\s+(\S+)/);
    expect(pick(/redirect_uri:\s+(\S+)/)).toBe(`${server.url}/demo/callback`);
    // The export comes first, before the link to open.
    expect(output).toContain(`export CLIENT_SECRET=${secret}`);
    expect(output.indexOf('export CLIENT_SECRET=')).toBeLessThan(output.indexOf('2. open'));

    const browser = new Browser();
    const consent = await reachConsent(browser, server.url, new URL(pick(/2\. open\s+(\S+)/)), { email: pick(/user:\s+(\S+) \//), password: pick(/\/ password (\S+)/) });
    const allowed = await browser.submit(consent, 'button:contains("Allow")');
    const back = await browser.get(allowed.location!);
    expect(back.location).toMatch(new RegExp(`^${server.url}/demo/callback\\?code=`));
    const code = new URL(back.location!).searchParams.get('code')!;

    const page = await browser.get(back.location!);
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.$('#demo-code').text()).toBe(code);
    expect(page.$('#demo-state').text()).toBe(new URL(pick(/2\. open\s+(\S+)/)).searchParams.get('state'));
    // A warning that counts down (views/assets/demo-countdown.js), the commands only while the code works.
    expect(page.$('#demo-code-state.warning').text()).toMatch(/only for \d+ more seconds \(codes are valid for 60 seconds\)/);
    expect(Number(page.$('#demo-code-state').attr('data-expires-in'))).toBeGreaterThan(50);
    expect(page.$('script[src="/assets/demo-countdown.js"]')).toHaveLength(1);
    expect(page.html).not.toContain(secret);
    expect(page.$('#demo-exchange').text()).toContain('${CLIENT_SECRET:?');
    // Copy buttons for each command (shown by /assets/copy.js).
    for (const id of ['demo-exchange-and-call', 'demo-exchange', 'demo-use-token']) expect(page.$(`button[data-copy-target="${id}"]`)).toHaveLength(1);
    const command = page.$('#demo-exchange-and-call').text();

    // Without the export: the shell stops with a plain sentence, and nothing is sent (the code still works).
    const unset = await runInShell(command, {});
    expect(unset.code).not.toBe(0);
    expect(unset.stderr).toMatch(/CLIENT_SECRET: run the export CLIENT_SECRET=\.\.\. line that npm start printed first/);
    expect(unset.stdout).toBe('');

    // With it: one command exchanges the code and calls /v2/me.
    const ran = await runInShell(command, { CLIENT_SECRET: secret });
    expect(ran.code, ran.stderr).toBe(0);
    const [answer, me] = ran.stdout.trim().split('\n');
    expect(JSON.parse(answer!)).toMatchObject({ token_type: 'bearer', access_token: expect.any(String) });
    expect(JSON.parse(me!).data.email).toBe('demo@example.com');
    expect((await getMe(server.url, JSON.parse(answer!).access_token)).status).toBe(200);

    // The page again (a reload): the code is spent, and the page says so; so does a second exchange.
    const reloaded = await browser.get(back.location!);
    expect(reloaded.$('#demo-code-state').text()).toMatch(/already exchanged/);
    // A dead code leads with the way on, and shows no command that cannot work.
    expect(reloaded.$('a.button').first().text()).toBe('Start the demo again');
    expect(reloaded.$('a.button').first().hasClass('primary')).toBe(true);
    expect(reloaded.$('#demo-exchange-and-call, #demo-exchange, #demo-use-token')).toHaveLength(0);
    const again = await runInShell(page.$('#demo-exchange').text(), { CLIENT_SECRET: secret });
    expect(JSON.parse(again.stdout)).toEqual({ error: 'invalid_grant', error_description: expect.stringMatching(/already used/) });
    const stopped = await runInShell(command, { CLIENT_SECRET: secret });
    expect(stopped.code).not.toBe(0);
    expect(stopped.stderr).toMatch(/ACCESS_TOKEN: the exchange above gave no access_token/);
  });

  it('offers the organization step: the same app asking for the teams\' bookings, installed by the demo user for Demo Organization', async () => {
    const demoUser = { email: pick(/user:\s+(\S+) \//), password: pick(/\/ password (\S+)/) };
    const browser = new Browser();
    const first = await reachConsent(browser, server.url, new URL(pick(/2\. open\s+(\S+)/)), demoUser);
    const callback = await browser.get((await browser.get((await browser.submit(first, 'button:contains("Allow")')).location!)).location!);
    const step = callback.$('a.button:contains("Install the demo app for an organization")');
    expect(callback.$('#demo-organization-step').text()).toBe('Next: the app in an organization');
    const request = new URL(step.attr('href')!, server.url);
    expect(request.searchParams.get('scope')).toBe('PROFILE_READ TEAM_BOOKING_READ');

    // One extra step: the consent page asks for the organization and its teams, and Allow installs.
    const consent = await reachConsent(browser, server.url, request, demoUser);
    expect(consent.$('.consent-org-installs').text()).toContain('Demo app');
    const back = await browser.get((await browser.submit(consent, 'button:contains("Allow")')).location!);
    expect(back.location).toMatch(new RegExp(`^${server.url}/demo/callback\\?code=`));
    const org = await server.system.db('organizations').where({ name: 'Demo Organization' }).first();
    expect(await server.system.db('app_installations').where({ org_id: org.id, status: 'active' }).select('scopes')).toEqual([{ scopes: ['TEAM_BOOKING_READ'] }]);
  });

  it('says in words when the code has expired', async () => {
    const browser = new Browser();
    const consent = await reachConsent(browser, server.url, new URL(pick(/2\. open\s+(\S+)/)), { email: pick(/user:\s+(\S+) \//), password: pick(/\/ password (\S+)/) });
    const back = await browser.get((await browser.submit(consent, 'button:contains("Allow")')).location!);
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    try {
      vi.setSystemTime(Date.now() + 61_000);
      const page = await browser.get(back.location!);
      expect(page.$('#demo-code-state').text()).toMatch(/expired: codes are valid for 60 seconds/);
      expect(page.$('.notice, .warning')).toHaveLength(0);
      expect(page.$('#demo-exchange-and-call')).toHaveLength(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('words other refusals plainly, and a missing response_type as such', async () => {
    const authorize = new URL(pick(/2\. open\s+(\S+)/));
    authorize.searchParams.delete('response_type');
    const browser = new Browser();
    const res = await browser.get(`${server.url}${authorize.pathname}${authorize.search}`);
    const page = await browser.get(res.location!);
    expect(page.$('.alert').text()).toMatch(/authorization request was not valid/);
    expect(page.$('dd').text()).toContain('the response_type parameter is missing');
    expect(page.html).not.toContain('response_mode');

    const scope = await new Browser().get(`${server.url}/demo/callback?error=invalid_scope&error_description=x&state=s`);
    expect(scope.$('.alert').text()).toMatch(/asked for a scope this app may not use/);
  });

  it('shows a refusal nicely, with its state', async () => {
    const browser = new Browser();
    const consent = await reachConsent(browser, server.url, new URL(pick(/2\. open\s+(\S+)/)), { email: pick(/user:\s+(\S+) \//), password: pick(/\/ password (\S+)/) });
    const denied = await browser.submit(consent, 'button:contains("Deny")');
    const page = await browser.follow(denied.location!, server.url);
    expect(page.url).toContain('/demo/callback?error=access_denied');
    expect(page.status).toBe(200);
    expect(page.$('h1').text()).toBe('The demo app was not authorized');
    expect(page.$('.alert').text()).toContain('You clicked Deny');
    expect(page.$('#demo-exchange')).toHaveLength(0);
  });

  it('escapes what the query brings, on the page and in the command', async () => {
    const hostile = `x'; touch /tmp/pwned; echo '<script>alert(1)</script>`;
    const page = await new Browser().get(`${server.url}/demo/callback?code=${encodeURIComponent(hostile)}&state=${encodeURIComponent('<b>s</b>')}`);
    expect(page.html).not.toContain('<script>alert(1)');
    expect(page.html).not.toContain('<b>s</b>');
    expect(page.$('#demo-code').text()).toBe(hostile);
    // A code this server never issued gets no command; where a command is shown, the shell reads
    // the code in it as one literal word.
    expect(page.$('#demo-exchange')).toHaveLength(0);
    const demo = (await findDemoClient(server.system.db))!;
    expect(exchangeCommand(`${server.url}/v2/auth/oauth2/token`, demo, hostile)).toContain(`'code=x'\\''; touch /tmp/pwned; echo '\\''<script>alert(1)</script>'`);
  });
});
