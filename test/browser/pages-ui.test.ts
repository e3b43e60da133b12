// Issue 38 points 3 and 9 (the visual ones) in a real browser: the start page; the developer
// client page with its scope grid folded behind "Change scopes" and the one-time secret shown
// whole; admin review showing what users see (plain words, links, one reason box only when
// rejecting) with headings in order; empty lists without bare table headers; and a signed-out
// error page whose button leads somewhere a signed-out person can go. Screenshots of the first
// screen go to test/artifacts/screens/ (or SCREENSHOTS_DIR, e.g. docs/screenshots).
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { newUser, operator, REDIRECT } from '../support/fixtures.ts';
import { authorizeUrl } from '../support/oauth.ts';
import { ARTIFACTS, browserSession, browserTestsEnabled, DESKTOP, layoutProblems, person, PHONE, signIn } from '../support/chromium.ts';
import { usersSetAdmin } from '../../src/admin/commands.ts';
import { createClient } from '../../src/clients/service.ts';
import { loadConfig } from '../../src/config.ts';
import { seedDemo } from '../../src/demo.ts';

const SHOTS = process.env.SCREENSHOTS_DIR ?? path.join(ARTIFACTS, 'screens');

/** Headings that skip a level on the way down (axe's heading-order rule): h1 → h3, h2 → h4… */
function headingOrderProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    let previous = 0;
    for (const h of document.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
      const level = Number(h.tagName[1]);
      if (level > previous + 1) problems.push(`h${previous || '(none)'} then ${h.tagName.toLowerCase()} "${h.textContent?.trim()}"`);
      previous = level;
    }
    return problems;
  });
}

describe.runIf(browserTestsEnabled('pages in a browser'))('the start page, developer and admin pages in a browser', () => {
  const session = browserSession({ PLATFORM_NAME: 'Acme Scheduling' });
  const url = (p: string) => `${session.server.url}${p}`;

  beforeAll(() => fs.mkdirSync(SHOTS, { recursive: true }));

  /** The first screen (or the whole page) at both sizes as `<name>-desktop.png` / `<name>-phone.png` (or `<name>.png` for desktop only); fits the phone. */
  async function shoot(page: Page, name: string, { phone = true, desktopName = `${name}-desktop`, fullPage = false } = {}) {
    await page.setViewportSize(DESKTOP);
    await page.screenshot({ path: path.join(SHOTS, `${desktopName}.png`), fullPage });
    if (phone) {
      await page.setViewportSize(PHONE);
      await page.screenshot({ path: path.join(SHOTS, `${name}-phone.png`) });
      expect.soft(await layoutProblems(page), `${name} at ${PHONE.width}px`).toEqual([]);
      await page.setViewportSize(DESKTOP);
    }
    expect.soft(await headingOrderProblems(page), `${name}: heading order`).toEqual([]);
  }

  it('the start page: what this is and the ways in, for a visitor and for an administrator', async () => {
    await seedDemo(session.server.system, loadConfig({ NODE_ENV: 'test', APP_URL: session.server.url, DATABASE_URL: session.server.pg.url }));
    const { context, page } = await person(session.browser);
    await page.goto(url('/'));
    expect(await page.locator('h1').textContent()).toBe('Sign-in and app access');
    for (const name of ['Apps with access', 'Developer settings', 'Try the demo', 'Discovery document']) expect(await page.getByRole('link', { name }).isVisible(), name).toBe(true);
    expect(await page.getByRole('link', { name: 'Review queue' }).count()).toBe(0);
    await shoot(page, 'start-page', { desktopName: 'start-page' });

    const admin = await newUser(session.server, 'Ari Admin');
    await usersSetAdmin(operator(session.server), admin.email);
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByLabel('Email').fill(admin.email);
    await page.getByLabel('Password').fill(admin.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(url('/'));
    await page.getByRole('link', { name: 'Review queue' }).waitFor();
    await shoot(page, 'start-page-admin');
    // The demo's link starts its authorization request: signed in already (one sign-in across the site), its consent page.
    await page.getByRole('link', { name: 'Try the demo' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    expect(page.url()).toContain('/auth/oauth2/interaction/');
    await context.close();
  });

  it('the developer client page folds the scope grid behind "Change scopes"; the one-time secret is shown whole', async () => {
    const dev = await newUser(session.server, 'Dana Developer');
    const { context, page } = await person(session.browser);
    await signIn(page, session.server.url, dev, '/settings/developer/oauth-clients');
    // No clients yet: a sentence, not a table of bare headers.
    expect(await page.getByText('You have not registered a client yet.').isVisible()).toBe(true);
    expect(await page.locator('table').count()).toBe(0);

    await page.getByRole('link', { name: 'Register a client' }).click();
    await page.getByLabel('Name').fill('Calendar Sync Pro');
    await page.getByLabel(/Redirect URIs/).fill(REDIRECT);
    await page.locator('#scope-PROFILE_READ').check();
    await page.locator('#scope-BOOKING_READ').check();
    await page.getByRole('button', { name: 'Register' }).click();
    const secret = page.locator('#secret');
    await secret.waitFor();
    // Measured once the stylesheet applies: the element is there before it (seen under load).
    await page.waitForLoadState('load');
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      const fit = await secret.evaluate((el: HTMLTextAreaElement) => ({ value: el.value, overflowX: el.scrollWidth - el.clientWidth, overflowY: el.scrollHeight - el.clientHeight }));
      expect(fit.value.length, 'the whole secret is there').toBeGreaterThan(20);
      expect(fit.overflowX, `secret cut off sideways at ${viewport.width}px`).toBeLessThanOrEqual(0);
      expect(fit.overflowY, `secret cut off below at ${viewport.width}px`).toBeLessThanOrEqual(0);
    }
    await shoot(page, 'developer-secret');

    await page.getByRole('link', { name: 'I have stored it safely' }).click();
    await page.getByRole('heading', { name: 'How to connect' }).waitFor();
    expect(await page.locator('.scopes-now code').allTextContents()).toEqual(['BOOKING_READ', 'PROFILE_READ']);
    expect(await page.locator('#scope-PROFILE_READ').isVisible()).toBe(false);
    await shoot(page, 'developer-client', { fullPage: true });
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    await page.getByText('Change scopes').click();
    expect(await page.locator('#scope-PROFILE_READ').isVisible()).toBe(true);
    // Folded, the grid takes no room (open, about 770 px at 1280×800); the page's other sections
    // (DPoP, pushed requests, keys, webhook) grow with the features, so the fold is measured, not the page.
    const opened = await page.evaluate(() => document.documentElement.scrollHeight);
    expect(opened - height, `the scope grid folded saves its height (${height} px folded, ${opened} px open)`).toBeGreaterThan(500);
    expect(await page.locator('#scope-PROFILE_READ').isChecked()).toBe(true);
    await context.close();
  });

  it('admin review shows what users see, one reason box only when rejecting, headings in order; an empty tab has no table', async () => {
    const [admin, dev] = [await newUser(session.server, 'Rita Reviewer'), await newUser(session.server, 'Dev Eloper')];
    await usersSetAdmin(operator(session.server), admin.email);
    for (const [name, scopes, policyUri] of [['Meeting Notes Helper', ['PROFILE_READ', 'BOOKING_WRITE'], 'https://notes.example.com/privacy'], ['Org Reporter', ['ORG_BOOKING_READ'], null]] as const) {
      await createClient(session.server.system, { name, kind: 'confidential', legacy: false, scopes: [...scopes], redirectUris: [REDIRECT], ownerUserId: dev.id, ...(policyUri ? { policyUri } : {}) }, { actor: 'test' });
    }
    const { context, page } = await person(session.browser);
    await signIn(page, session.server.url, admin, '/admin/oauth-clients');
    const notes = page.locator('tr.item', { hasText: 'Meeting Notes Helper' });
    expect(await notes.getByText('See your profile, including your e-mail address').isVisible()).toBe(true);
    expect(await notes.locator('.consent-mark-change').textContent()).toBe('Can change');
    expect(await notes.locator('.review-links').textContent()).toContain('Privacy policy: https://notes.example.com/privacy');
    expect(await notes.getByRole('link', { name: 'https://notes.example.com/privacy' }).getAttribute('href')).toBe('https://notes.example.com/privacy');
    expect(await page.locator('tr.item', { hasText: 'Org Reporter' }).locator('.consent-mark-org').isVisible()).toBe(true);
    // No reason box in sight until the administrator chooses to reject.
    expect(await page.locator('input[name=reason]:visible').count()).toBe(0);
    await shoot(page, 'admin-review');
    await notes.getByText('Reject…').click();
    expect(await page.locator('input[name=reason]:visible').count()).toBe(1);
    await notes.getByLabel(/Reason/).fill('The privacy policy link does not load');
    await notes.getByRole('button', { name: 'Reject', exact: true }).click();
    await page.locator('.notice').waitFor();
    expect(await page.locator('.notice').textContent()).toContain('Meeting Notes Helper: rejected');

    await page.goto(url('/admin/oauth-clients?status=suspended'));
    expect(await page.getByText('No clients here.').isVisible()).toBe(true);
    expect(await page.locator('table, thead').count()).toBe(0);
    expect(await headingOrderProblems(page)).toEqual([]);
    await context.close();
  });

  it('a signed-out error page leads to the start page', async () => {
    const { context, page } = await person(session.browser);
    await page.goto(authorizeUrl(session.server.url, { client_id: 'no-such-app', redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }));
    expect(await page.locator('h1').textContent()).toBe('This app is not available');
    await shoot(page, 'error-signed-out');
    await page.locator('.error-way-on a').first().click();
    await page.waitForURL(url('/'));
    expect(await page.locator('h1').textContent()).toBe('Sign-in and app access');
    await context.close();
  });
});
