// Issue 38 point 1: the decision in reach. For the demo's two scopes, the widest request (every
// scope group, many scopes) and a team/organization request, at 1280×800 and 390×844, both
// buttons lie within the viewport as the page opens, without scrolling. What the first screen
// shows goes to test/artifacts/screens/ (or SCREENSHOTS_DIR) as consent-*.png, with the buttons' boxes
// in consent-button-positions.json beside them (the closing note's before/after numbers).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { authorizeUrl, type TestUser } from '../support/oauth.ts';
import { newUser, operator, REDIRECT } from '../support/fixtures.ts';
import { ARTIFACTS, browserSession, browserTestsEnabled, DESKTOP, layoutProblems, person, PHONE } from '../support/chromium.ts';
import { clientsCreate, clientsSetStatus } from '../../src/admin/commands.ts';
import { addOrgMember, addTeamMember, createOrg, createTeam } from '../../src/orgs/store.ts';

// The docs' copies are refreshed with SCREENSHOTS_DIR=docs/screenshots; by default a run leaves the tree clean.
const SHOTS = process.env.SCREENSHOTS_DIR ?? path.join(ARTIFACTS, 'screens');
type Box = { top: number; bottom: number; left: number; right: number };

/** Both buttons' boxes at the top of the page, before any scrolling. */
async function buttonBoxes(page: Page): Promise<{ allow: Box; deny: Box; scrolled: number }> {
  return page.evaluate(() => {
    window.scrollTo(0, 0);
    const box = (name: string) => {
      const button = [...document.querySelectorAll('button')].find((b) => b.textContent?.trim() === name)!;
      const r = button.getBoundingClientRect();
      return { top: Math.round(r.top), bottom: Math.round(r.bottom), left: Math.round(r.left), right: Math.round(r.right) };
    };
    return { allow: box('Allow'), deny: box('Deny'), scrolled: window.scrollY };
  });
}

/** Is the centre of each button the button itself (not covered by something else)? */
async function buttonsOnTop(page: Page): Promise<boolean> {
  return page.evaluate(() =>
    ['Allow', 'Deny'].every((name) => {
      const button = [...document.querySelectorAll('button')].find((b) => b.textContent?.trim() === name)!;
      const r = button.getBoundingClientRect();
      return button.contains(document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2));
    }),
  );
}

describe.runIf(browserTestsEnabled('consent buttons in view'))('the consent page keeps Allow and Deny in view', () => {
  const session = browserSession({ PLATFORM_NAME: 'Acme Scheduling' });
  const positions: Record<string, unknown> = {};
  const db = () => session.server.pg.db;

  beforeAll(() => fs.mkdirSync(SHOTS, { recursive: true }));
  afterAll(() => {
    if (Object.keys(positions).length) fs.writeFileSync(path.join(SHOTS, 'consent-button-positions.json'), `${JSON.stringify(positions, null, 2)}\n`);
  });

  async function approved(name: string, scopes: string[]): Promise<string> {
    const created = await clientsCreate(operator(session.server), { name, redirectUri: [REDIRECT], scope: scopes });
    await clientsSetStatus(operator(session.server), created.client_id, 'approved');
    return created.client_id;
  }

  /** Signs in on the request's own page and waits for consent. */
  async function consentPage(user: TestUser, clientId: string, scope: string): Promise<Page> {
    const { page } = await person(session.browser);
    await page.goto(authorizeUrl(session.server.url, { client_id: clientId, redirect_uri: REDIRECT, scope, state: 's' }));
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    return page;
  }

  /** At both sizes: the first screen's picture, the buttons' boxes, and both within the viewport. */
  async function checkBothSizes(page: Page, name: string): Promise<void> {
    for (const [size, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
      await page.setViewportSize(viewport);
      await page.reload();
      await page.getByRole('button', { name: 'Allow' }).waitFor();
      const boxes = await buttonBoxes(page);
      positions[`${name}-${size}`] = { viewport, allow: boxes.allow, deny: boxes.deny, pageHeight: await page.evaluate(() => document.documentElement.scrollHeight) };
      await page.screenshot({ path: path.join(SHOTS, `${name}-${size}.png`) });
      for (const [button, box] of [['Allow', boxes.allow], ['Deny', boxes.deny]] as const) {
        expect.soft(boxes.scrolled, `${name} ${size}: opened scrolled`).toBe(0);
        expect.soft(box.top, `${name} ${size}: ${button} top`).toBeGreaterThanOrEqual(0);
        expect.soft(box.left, `${name} ${size}: ${button} left`).toBeGreaterThanOrEqual(0);
        expect.soft(box.bottom, `${name} ${size}: ${button} bottom (${JSON.stringify(box)})`).toBeLessThanOrEqual(viewport.height);
        expect.soft(box.right, `${name} ${size}: ${button} right`).toBeLessThanOrEqual(viewport.width);
      }
      expect.soft(await buttonsOnTop(page), `${name} ${size}: a button is covered`).toBe(true);
      expect.soft(await layoutProblems(page), `${name} ${size}: layout`).toEqual([]);
    }
    await page.setViewportSize(DESKTOP);
  }

  it("the demo's two scopes", async () => {
    const user = await newUser(session.server, 'Demo User');
    const clientId = await approved('Demo app', ['PROFILE_READ', 'PROFILE_WRITE', 'BOOKING_READ']);
    const page = await consentPage(user, clientId, 'PROFILE_READ BOOKING_READ');
    await checkBothSizes(page, 'consent');
    await page.context().close();
  });

  it('the widest request: every scope group, sixteen scopes', async () => {
    const scopes = ['PROFILE_READ', 'PROFILE_WRITE', 'BOOKING_READ', 'BOOKING_WRITE', 'SCHEDULE_READ', 'EVENT_TYPE_READ', 'APPS_READ', 'TEAM_BOOKING_READ', 'TEAM_BOOKING_WRITE', 'TEAM_MEMBERSHIP_READ', 'TEAM_SCHEDULE_READ', 'ORG_BOOKING_READ', 'ORG_BOOKING_WRITE', 'ORG_PROFILE_READ', 'ORG_SCHEDULE_READ', 'ORG_EVENT_TYPE_READ'];
    const user = await newUser(session.server, 'Wide Request User');
    const page = await consentPage(user, await approved('Everything Planner', scopes), scopes.join(' '));
    await checkBothSizes(page, 'consent-groups');
    await page.context().close();
  });

  it('a team/organization request: the organization, its teams, the scopes', async () => {
    const user = await newUser(session.server, 'Olga Owner');
    const demoOrg = await createOrg(db(), { name: 'Demo Organization' });
    const other = await createOrg(db(), { name: 'Northwind Traders' });
    await addOrgMember(db(), demoOrg.id, user.id, 'owner');
    await addOrgMember(db(), other.id, user.id, 'member');
    for (const [org, names] of [[demoOrg, ['Sales', 'Support', 'Research']], [other, ['Front desk']]] as const) {
      for (const name of names) await addTeamMember(db(), (await createTeam(db(), { name, orgId: org.id })).id, user.id, 'admin');
    }
    const scopes = ['PROFILE_READ', 'BOOKING_READ', 'TEAM_BOOKING_READ', 'TEAM_MEMBERSHIP_READ', 'ORG_BOOKING_READ'];
    const page = await consentPage(user, await approved('Team Planner', scopes), scopes.join(' '));
    expect(await page.getByRole('radio').count()).toBe(2);
    await checkBothSizes(page, 'consent-org');
    await page.context().close();
  });
});
