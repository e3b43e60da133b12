// Error pages and the pages that end a journey, in a real browser: the unregistered redirect URI,
// the unknown app, the expired sign-in step, Back after sign-in and after Allow (page.goBack()),
// and the demo's callback page. Screenshots at both sizes go to test/artifacts/errors-*.png.
import { beforeAll, describe, expect, it } from 'vitest';
import { approvedClient, newUser, REDIRECT, type TestClient } from '../support/fixtures.ts';
import { authorizeUrl, type TestUser } from '../support/oauth.ts';
import { browserSession, browserTestsEnabled, DESKTOP, person, PHONE, screenshots } from '../support/chromium.ts';
import { loadConfig } from '../../src/config.ts';
import { seedDemo } from '../../src/demo.ts';

describe.runIf(browserTestsEnabled('browser error pages'))('error pages in a browser', () => {
  const session = browserSession();
  let client: TestClient;
  let user: TestUser;
  const screenshot = screenshots('errors');

  beforeAll(async () => {
    client = await approvedClient(session.server, ['PROFILE_READ', 'BOOKING_READ'], 'Calendar Sync Pro');
    user = await newUser(session.server);
  });

  const authorize = (params: Record<string, string> = {}) =>
    authorizeUrl(session.server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ BOOKING_READ', state: 'errors', ...params });

  it('explains untrusted requests in plain words and goes nowhere', async () => {
    const { context, page } = await person(session.browser);
    await page.goto(authorize({ redirect_uri: 'https://evil.example/cb' }));
    expect(page.url()).toContain(session.server.url);
    expect(await page.locator('h1').textContent()).toBe('This app is set up incorrectly');
    await page.locator('details.error-technical summary').click();
    expect(await page.locator('details.error-technical').textContent()).toContain('invalid_redirect_uri');
    await screenshot(page, 'unregistered-redirect-uri');

    await page.goto(authorize({ client_id: 'no-such-app' }));
    expect(page.url()).toContain(session.server.url);
    expect(await page.locator('h1').textContent()).toBe('This app is not available');
    await screenshot(page, 'unknown-app');
    await context.close();
  });

  it('explains a sign-in step opened in another browser', async () => {
    const first = await person(session.browser);
    await first.page.goto(authorize());
    await first.page.getByLabel('Password').waitFor();
    const other = await person(session.browser);
    await other.page.goto(first.page.url());
    expect(await other.page.locator('h1').textContent()).toBe('This sign-in has expired');
    await screenshot(other.page, 'sign-in-expired');
    await first.context.close();
    await other.context.close();
  });

  it('Back after sign-in and after Allow finds the step finished, and continues', async () => {
    const { context, page } = await person(session.browser);
    await page.goto(authorize());
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();

    await page.goBack();
    expect(await page.locator('h1').textContent()).toBe('This step is finished');
    expect(await page.locator('.notice').textContent()).toContain('You already signed in');
    await screenshot(page, 'back-after-sign-in');
    await page.getByRole('link', { name: 'Continue to Calendar Sync Pro' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${REDIRECT}**`);

    await page.goBack();
    expect(await page.locator('h1').textContent()).toBe('This step is finished');
    expect(await page.locator('.notice').textContent()).toContain('You already allowed Calendar Sync Pro');
    await screenshot(page, 'back-after-allow');
    await page.getByRole('link', { name: 'Continue to Calendar Sync Pro' }).click();
    await page.waitForURL(`${REDIRECT}**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    await context.close();
  });

  it('ends the demo on its callback page', async () => {
    const output = await seedDemo(session.server.system, loadConfig({ NODE_ENV: 'test', APP_URL: session.server.url, DATABASE_URL: session.server.pg.url }));
    const pick = (re: RegExp) => re.exec(output)![1]!;
    const { context, page } = await person(session.browser);
    // The page's clock, moved past the code's 60 seconds below (the countdown's subject).
    await page.clock.install();
    await page.goto(pick(/2\. open\s+(\S+)/));
    await page.getByLabel('Email').fill(pick(/user:\s+(\S+) \//));
    await page.getByLabel('Password').fill(pick(/\/ password (\S+)/));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${session.server.url}/demo/callback?**`);
    expect(await page.locator('#demo-code').textContent()).toBe(new URL(page.url()).searchParams.get('code'));
    expect(await page.locator('#demo-exchange').textContent()).toContain('CLIENT_SECRET');
    // While the code works: the warning counts down, the one command first, the steps folded; on a
    // phone the command starts on the first screen.
    expect(await page.locator('#demo-code-state.warning').isVisible()).toBe(true);
    expect(await page.locator('#demo-exchange-and-call').isVisible()).toBe(true);
    expect(await page.locator('#demo-exchange').isVisible()).toBe(false);
    await page.setViewportSize(PHONE);
    expect((await page.locator('#demo-exchange-and-call').boundingBox())!.y).toBeLessThan(PHONE.height);
    await page.setViewportSize(DESKTOP);
    await screenshot(page, 'demo-callback');
    const before = Number(await page.locator('#demo-countdown').textContent());
    await page.clock.fastForward(5_000);
    expect(Number(await page.locator('#demo-countdown').textContent())).toBeLessThan(before);
    // Past its 60 seconds: the commands go, and the page leads with starting again.
    await page.clock.fastForward(61_000);
    await page.locator('#demo-code-expired').waitFor();
    expect(await page.locator('#demo-live').isVisible()).toBe(false);
    expect(await page.locator('#demo-code-state').isVisible()).toBe(false);
    expect(await page.locator('#demo-start-again-now a.button.primary').isVisible()).toBe(true);
    expect(await page.locator('#demo-start-again-later').isVisible()).toBe(false);
    await screenshot(page, 'demo-callback-expired');
    await context.close();
  });
});
