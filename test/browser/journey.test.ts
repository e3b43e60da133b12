// The whole journey in a real browser: a developer registers a client, an administrator approves
// it, a user authorizes it through sign-in and consent, sees it under apps with access and revokes
// it; the token then fails. Screenshots of every page, at a desktop and a phone size, go to
// test/artifacts/ for review (see test/support/chromium.ts).
import { describe, expect, it } from 'vitest';
import { getMe, tokenRequest } from '../support/oauth.ts';
import { newUser, operator, REDIRECT } from '../support/fixtures.ts';
import { browserSession, browserTestsEnabled, contrast, person as newPerson, screenshots, signIn as signInAt } from '../support/chromium.ts';
import { usersSetAdmin } from '../../src/admin/commands.ts';

describe.runIf(browserTestsEnabled('browser journey'))('the journey in a browser', () => {
  const session = browserSession();
  const screenshot = screenshots('journey');


  const person = () => newPerson(session.browser);
  const signIn = (page: Parameters<typeof signInAt>[0], user: { email: string; password: string }, next: string) => signInAt(page, session.server.url, user, next);

  it('registers, approves, authorizes, shows and revokes an app', async () => {
    const [dev, admin, user] = await Promise.all([newUser(session.server, 'Dana Developer'), newUser(session.server, 'Ari Admin'), newUser(session.server, 'Uma User')]);
    await usersSetAdmin(operator(session.server), admin.email);

    // 1. The developer registers a client.
    const devSide = await person();
    await devSide.page.goto(`${session.server.url}/login`);
    await screenshot(devSide.page, 'web-sign-in');
    // A wrong password: the form comes back with the email kept and the focus on the password.
    await devSide.page.getByLabel('Email').fill(dev.email);
    await devSide.page.getByLabel('Password').fill('not the password');
    await devSide.page.getByRole('button', { name: 'Sign in' }).click();
    await devSide.page.locator('.alert').waitFor();
    // The answer's page takes the focus as it loads (autofocus): wait for it, then read it.
    await devSide.page.waitForFunction(() => document.activeElement?.id === 'password', undefined, { timeout: 5_000 });
    const focus = await devSide.page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      const style = getComputedStyle(el);
      return { id: el.id, outline: style.outlineColor, border: style.borderTopColor, around: getComputedStyle(el.closest('.card')!).backgroundColor };
    });
    expect(focus.id).toBe('password');
    // Non-text contrast (WCAG 1.4.11): the focus ring and the input's border against the card.
    expect.soft(contrast(focus.outline, focus.around)).toBeGreaterThanOrEqual(3);
    expect.soft(contrast(focus.border, focus.around)).toBeGreaterThanOrEqual(3);
    await screenshot(devSide.page, 'web-sign-in-failed');
    await signIn(devSide.page, dev, '/settings/developer/oauth-clients');
    expect.soft(await devSide.page.getByRole('navigation').getByRole('link', { name: 'Developer settings' }).getAttribute('aria-current')).toBe('page');
    await screenshot(devSide.page, 'developer-clients-empty');
    await devSide.page.getByRole('link', { name: 'Register a client' }).click();
    await devSide.page.getByLabel('Name').fill('Calendar Sync Pro');
    await devSide.page.getByLabel(/Redirect URIs/).fill(REDIRECT);
    await devSide.page.locator('#scope-PROFILE_READ').check();
    await devSide.page.locator('#scope-BOOKING_READ').check();
    await screenshot(devSide.page, 'developer-register');
    await devSide.page.getByRole('button', { name: 'Register' }).click();
    await expect(devSide.page.getByText('you will not see this again')).toBeDefined();
    const secret = await devSide.page.locator('#secret').inputValue();
    expect(secret).toMatch(/^spcs_[0-9A-Za-z]{49}$/); // docs/credentials.md
    await screenshot(devSide.page, 'developer-secret-shown-once');
    await devSide.page.getByRole('link', { name: 'I have stored it safely' }).click();
    const clientId = (await devSide.page.locator('dd code').first().textContent())!.trim();
    await screenshot(devSide.page, 'developer-client-page');
    await devSide.page.getByRole('link', { name: 'Developer settings' }).click();
    await screenshot(devSide.page, 'developer-clients');

    // 2. The administrator approves it.
    const adminSide = await person();
    await signIn(adminSide.page, admin, '/admin/oauth-clients');
    expect.soft(await adminSide.page.getByRole('navigation').getByRole('link', { name: 'Review clients' }).getAttribute('aria-current')).toBe('page');
    await screenshot(adminSide.page, 'admin-review-pending');
    const item = adminSide.page.locator('.item', { hasText: 'Calendar Sync Pro' });
    await item.getByRole('button', { name: 'Approve' }).click();
    await adminSide.page.waitForURL(`${session.server.url}/admin/oauth-clients`);
    expect(await adminSide.page.locator('.notice').textContent()).toContain('approved');
    await screenshot(adminSide.page, 'admin-review-approved');

    // 3. A user authorizes it: sign-in page, consent page, Allow.
    const userSide = await person();
    const authorize = new URL(`${session.server.url}/auth/oauth2/authorize`);
    authorize.search = new URLSearchParams({ client_id: clientId, redirect_uri: REDIRECT, response_type: 'code', scope: 'PROFILE_READ BOOKING_READ', state: 'journey' }).toString();
    await userSide.page.goto(authorize.href);
    await screenshot(userSide.page, 'oauth-sign-in');
    await userSide.page.getByLabel('Email').fill(user.email);
    await userSide.page.getByLabel('Password').fill(user.password);
    await userSide.page.getByRole('button', { name: 'Sign in' }).click();
    await userSide.page.getByRole('button', { name: 'Allow' }).waitFor();
    expect(await userSide.page.locator('h1').textContent()).toContain('Calendar Sync Pro');
    await screenshot(userSide.page, 'oauth-consent');
    await userSide.page.getByRole('button', { name: 'Allow' }).click();
    await userSide.page.waitForURL(`${REDIRECT}**`);
    const back = new URL(userSide.page.url());
    expect(back.searchParams.get('state')).toBe('journey');
    const tokens = await tokenRequest(session.server.url, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, client_id: clientId, client_secret: secret });
    expect(tokens.status).toBe(200);
    expect((await getMe(session.server.url, tokens.body.access_token as string)).status).toBe(200);

    // 4. The user sees the app under apps with access (signed in already: one sign-in across the site), and revokes it.
    await userSide.page.goto(`${session.server.url}/settings/connected-apps`);
    expect(userSide.page.url()).toBe(`${session.server.url}/settings/connected-apps`);
    const app = userSide.page.locator('.item', { hasText: 'Calendar Sync Pro' });
    expect(await app.textContent()).toContain('See your bookings');
    await screenshot(userSide.page, 'connected-apps');
    await app.getByRole('link', { name: /Revoke access/ }).click();
    await userSide.page.getByRole('button', { name: 'Revoke access' }).click(); // on its confirmation page
    await userSide.page.waitForURL(`${session.server.url}/settings/connected-apps`);
    expect(await userSide.page.locator('.notice').textContent()).toContain('Access revoked');
    await screenshot(userSide.page, 'connected-apps-revoked');
    expect((await getMe(session.server.url, tokens.body.access_token as string)).status).toBe(401);

    // 5. An untrusted request shows the error page and goes nowhere.
    await userSide.page.goto(`${session.server.url}/auth/oauth2/authorize?client_id=${clientId}&redirect_uri=https://evil.example/cb&response_type=code&scope=PROFILE_READ`);
    expect(userSide.page.url()).toContain(session.server.url);
    await screenshot(userSide.page, 'error-page');

    for (const side of [devSide, adminSide, userSide]) await side.context.close();
  }, 90_000);
});
