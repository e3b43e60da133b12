// The demo ends somewhere (src/web/demo-callback.ts): the demo client returns to this server's
// callback page, which shows the code, its lifetime, the state and the curl that exchanges it —
// and that curl works. Without the demo the page does not exist.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { getMe, reachConsent } from './support/oauth.ts';
import { loadConfig } from '../src/config.ts';
import { seedDemo } from '../src/demo.ts';

let server: TestServer;
let output = '';
const pick = (re: RegExp) => re.exec(output)?.[1] ?? '';

beforeAll(async () => {
  server = await startTestServer('sql');
});
afterAll(() => server?.close());

/** Runs the page's curl as curl would: its URL and its --data-urlencode fields, with $CLIENT_SECRET set. */
async function runCurl(command: string, env: Record<string, string>) {
  const words = [...command.matchAll(/'((?:[^']|'\\'')*)'|"([^"]*)"|(\S+)/g)]
    .map(([, single, double, bare]) => single?.replaceAll(`'\\''`, "'") ?? double?.replace(/\$([A-Z_]+)/g, (_, name: string) => env[name] ?? '') ?? bare!)
    .filter((word) => word !== '\\');
  expect(words.slice(0, 2)).toEqual(['curl', '-s']);
  const body = new URLSearchParams();
  for (let i = 3; i < words.length; i += 2) {
    expect(words[i]).toBe('--data-urlencode');
    const [name, ...value] = words[i + 1]!.split('=');
    body.append(name!, value.join('='));
  }
  const res = await fetch(words[2]!, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
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
    expect(output).toContain(`export CLIENT_SECRET=${secret}`);

    const browser = new Browser();
    const consent = await reachConsent(browser, server.url, new URL(pick(/1\. open\s+(\S+)/)), { email: pick(/user:\s+(\S+) \//), password: pick(/\/ password (\S+)/) });
    const allowed = await browser.submit(consent, 'button:contains("Allow")');
    const back = await browser.get(allowed.location!);
    expect(back.location).toMatch(new RegExp(`^${server.url}/demo/callback\\?code=`));
    const code = new URL(back.location!).searchParams.get('code')!;

    const page = await browser.get(back.location!);
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.$('#demo-code').text()).toBe(code);
    expect(page.$('#demo-state').text()).toBe(new URL(pick(/1\. open\s+(\S+)/)).searchParams.get('state'));
    expect(page.$('.notice').text()).toContain('60 seconds');
    expect(page.html).not.toContain(secret);
    const curl = page.$('#demo-exchange').text();
    expect(curl).toContain('$CLIENT_SECRET');

    const tokens = await runCurl(curl, { CLIENT_SECRET: secret });
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect((await getMe(server.url, tokens.body.access_token)).body.data.email).toBe('demo@example.com');
  });

  it('shows a refusal nicely, with its state', async () => {
    const browser = new Browser();
    const consent = await reachConsent(browser, server.url, new URL(pick(/1\. open\s+(\S+)/)), { email: pick(/user:\s+(\S+) \//), password: pick(/\/ password (\S+)/) });
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
    // The shell reads the code as one literal word.
    expect(page.$('#demo-exchange').text()).toContain(`'code=x'\\''; touch /tmp/pwned; echo '\\''<script>alert(1)</script>'`);
  });
});
