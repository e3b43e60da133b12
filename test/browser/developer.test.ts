// Developer settings in a real browser: the scope grid, refusals beside their fields, the client
// page with how to connect and the client id's copy button, the delete confirmation. Screenshots
// (series 'developer') at a desktop and a phone size go to test/artifacts/.
import { describe, expect, it } from 'vitest';
import { CPU_BOUND_TEST_MS } from '../support/timeouts.ts';
import { newUser, REDIRECT } from '../support/fixtures.ts';
import { browserSession, browserTestsEnabled, person, screenshots, signIn } from '../support/chromium.ts';

describe.runIf(browserTestsEnabled('developer settings in a browser'))('developer settings in a browser', () => {
  const session = browserSession();
  const screenshot = screenshots('developer');


  it('registers with the grid, shows refusals beside their fields, connects, copies, rotates and deletes', async () => {
    const dev = await newUser(session.server, 'Dana Developer');
    const { context, page } = await person(session.browser);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: session.server.url });
    await signIn(page, session.server.url, dev, '/settings/developer/oauth-clients/new');

    // The grid: each box is reachable by its accessible name (a real label).
    await page.getByRole('checkbox', { name: /^PROFILE_READ/ }).check();
    await page.getByRole('checkbox', { name: /^TEAM_BOOKING_WRITE/ }).check();
    await expect.poll(() => page.locator('#scope-TEAM_BOOKING_WRITE').isChecked()).toBe(true);
    await screenshot(page, 'register-grid');

    // Refused: no name, a plain-http redirect URI. Each field says why; the ticks stay.
    await page.getByLabel(/Redirect URIs/).fill('http://plain.example/cb');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.locator('.field-error').first().waitFor();
    expect(await page.locator('#name').getAttribute('aria-invalid')).toBe('true');
    await expect.poll(() => page.getByRole('textbox', { name: /Redirect URIs/ }).evaluate((el) => (el as HTMLTextAreaElement).value)).toBe('http://plain.example/cb');
    const description = await page.locator('#redirect_uris').evaluate((el) => document.getElementById(el.getAttribute('aria-describedby')!)!.textContent);
    expect(description).toMatch(/must use https/);
    expect(await page.locator('#scope-TEAM_BOOKING_WRITE').isChecked()).toBe(true);
    await screenshot(page, 'register-field-errors');

    await page.getByLabel('Name').fill('Calendar Sync Pro');
    await page.getByLabel(/Redirect URIs/).fill(REDIRECT);
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('link', { name: 'I have stored it safely' }).click();

    // The client page: how to connect, and the client id copied by its button.
    await page.getByRole('heading', { name: 'How to connect' }).waitFor();
    const clientId = (await page.locator('#client-id').textContent())!.trim();
    await page.getByRole('button', { name: 'Copy the client id' }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(clientId);
    expect(await page.locator('.connect').textContent()).toContain(`${session.server.url}/auth/oauth2/authorize`);
    await screenshot(page, 'client-connect');

    // Rotation: a second secret, then the confirmation page for revoking the first.
    await page.getByRole('button', { name: 'Generate new secret' }).click();
    await page.getByRole('link', { name: 'I have stored it safely' }).click();
    await page.getByRole('link', { name: 'Revoke…' }).first().click();
    await page.getByRole('button', { name: 'Revoke the secret' }).waitFor();
    await screenshot(page, 'secret-revoke-confirmation');
    await page.getByRole('button', { name: 'Revoke the secret' }).click();
    await page.getByRole('heading', { name: 'How to connect' }).waitFor();
    expect(await page.getByRole('link', { name: 'Revoke…' }).count()).toBe(0); // the one left is kept

    // Delete: a wrong name is refused beside the field; the right one removes the client.
    await page.getByRole('link', { name: 'Delete this client…' }).click();
    await page.getByLabel(/type the client's name/).fill('calendar sync');
    await page.getByRole('button', { name: 'Delete the client' }).click();
    await page.locator('#confirm_name[aria-invalid="true"]').waitFor();
    await screenshot(page, 'delete-confirmation');
    await page.getByLabel(/type the client's name/).fill('Calendar Sync Pro');
    await page.getByRole('button', { name: 'Delete the client' }).click();
    await page.getByText('“Calendar Sync Pro” is deleted').waitFor();
    expect(await session.server.pg.db('oauth_clients').where('id', clientId).first()).toBeUndefined();
    await context.close();
  }, CPU_BOUND_TEST_MS);
});
