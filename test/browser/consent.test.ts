// The consent page in a real browser, at a desktop and a phone size (screenshots in
// test/artifacts/consent-*.png): a plain request, an organization-wide request that changes data,
// and a legacy full-access request. Each must fit the phone width with its heading visible.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { authorizeUrl, type TestUser } from '../support/oauth.ts';
import { newUser, operator, REDIRECT } from '../support/fixtures.ts';
import { browserSession, browserTestsEnabled, person, screenshots } from '../support/chromium.ts';
import { clientsCreate, clientsSetStatus, type ClientsCreateOptions } from '../../src/admin/commands.ts';
import { usersCreate } from '../../src/admin/commands.ts';

describe.runIf(browserTestsEnabled('consent page in a browser'))('the consent page in a browser', () => {
  const session = browserSession({ PLATFORM_NAME: 'Acme Scheduling' });
  let user: TestUser;
  const screenshot = screenshots('consent');

  beforeAll(async () => {
    user = await newUser(session.server, 'Uma User');
  });

  async function approved(options: ClientsCreateOptions): Promise<string> {
    const created = await clientsCreate(operator(session.server), options);
    await clientsSetStatus(operator(session.server), created.client_id, 'approved');
    return created.client_id;
  }

  /** A fresh person signs in on the authorization request's own page and lands on consent. */
  async function consentPage(clientId: string, scope?: string): Promise<Page> {
    const { page } = await person(session.browser);
    await page.goto(authorizeUrl(session.server.url, { client_id: clientId, redirect_uri: REDIRECT, ...(scope ? { scope } : {}), state: 's' }));
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    return page;
  }

  it('a plain request from a developer’s app, with its policies', async () => {
    const dev = await usersCreate(session.server.system, { email: 'dana.developer.with.a.long.address@calendar-sync-pro.example', password: 'a long password', name: 'Dana Developer' });
    const created = await clientsCreate(operator(session.server), {
      name: 'Calendar Sync Pro',
      redirectUri: [REDIRECT],
      scope: ['PROFILE_READ', 'BOOKING_READ', 'SCHEDULE_READ'],
      policyUri: 'https://calendar-sync-pro.example/legal/privacy-policy-for-every-user-of-the-app',
      tosUri: 'https://calendar-sync-pro.example/terms',
    });
    // Registered in the developer settings: the owner is the developer.
    await session.server.pg.db('oauth_clients').where('id', created.client_id).update({ owner_user_id: dev.id });
    await clientsSetStatus(operator(session.server), created.client_id, 'approved');
    const page = await consentPage(created.client_id, 'PROFILE_READ BOOKING_READ SCHEDULE_READ');
    expect(await page.locator('.consent-developer').textContent()).toContain('Dana Developer');
    await expect.poll(() => page.getByText('Approved by Acme Scheduling').isVisible()).toBe(true);
    await screenshot(page, 'plain');
    // The raw codes open from their fold.
    await page.getByText('Scope codes, for developers').click();
    expect(await page.locator('details.consent-codes code').first().isVisible()).toBe(true);
    await screenshot(page, 'plain-codes-open');
    await page.context().close();
  });

  it('an organization-wide request that changes data', async () => {
    const scopes = ['PROFILE_READ', 'BOOKING_READ', 'BOOKING_WRITE', 'TEAM_MEMBERSHIP_READ', 'TEAM_BOOKING_WRITE', 'ORG_BOOKING_READ', 'ORG_BOOKING_WRITE', 'ORG_PROFILE_WRITE'];
    const page = await consentPage(await approved({ name: 'Org Planner', redirectUri: [REDIRECT], scope: scopes }), scopes.join(' '));
    expect(await page.locator('.consent-group-org .consent-mark-org').isVisible()).toBe(true);
    // One "Can change" heading per group that changes (yours, the team's, the organization's), its scopes under it.
    expect(await page.locator('.consent-mark-change').count()).toBe(3);
    expect(await page.locator('h3:has(.consent-mark-change) + .consent-changes li').count()).toBe(4);
    await screenshot(page, 'org-wide-changes');
    await page.context().close();
  });

  it('a legacy full-access request: a real warning, and Deny as strong as Allow', async () => {
    const page = await consentPage(await approved({ name: 'Old Sync', redirectUri: [REDIRECT], legacy: true }));
    expect(await page.locator('.consent-full-access').textContent()).toContain('changing and deleting any of it');
    const weight = (name: string) =>
      page.getByRole('button', { name, exact: true }).evaluate((b) => {
        const style = getComputedStyle(b);
        return { width: b.getBoundingClientRect().width, filled: style.backgroundColor !== 'rgb(255, 255, 255)', weight: Number(style.fontWeight) };
      });
    const [allow, deny] = [await weight('Allow'), await weight('Deny')];
    expect(deny.width).toBeGreaterThanOrEqual(allow.width - 1);
    expect(deny.weight).toBeGreaterThanOrEqual(allow.weight);
    expect(deny.filled || !allow.filled).toBe(true);
    await screenshot(page, 'legacy-full-access');
    await page.context().close();
  });
});
