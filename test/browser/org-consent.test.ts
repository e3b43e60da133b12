// The consent page in an organization's context, in a real browser at desktop and phone sizes
// (screenshots in test/artifacts/org-consent-*.png): a member of two organizations choosing one,
// with an installation's line and optional scopes; an admin installing for chosen teams; a member
// of an organization that needs approval, and the "request sent" page.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { authorizeUrl, type TestUser } from '../support/oauth.ts';
import { newUser, operator, REDIRECT } from '../support/fixtures.ts';
import { browserSession, browserTestsEnabled, person, screenshots } from '../support/chromium.ts';
import { clientsCreate, clientsSetStatus } from '../../src/admin/commands.ts';
import { addOrgMember, addTeamMember, createOrg, createTeam, saveInstallation } from '../../src/orgs/store.ts';
import type { AppPolicy } from '../../src/orgs/model.ts';

const LOGO = '<svg xmlns="http://www.w3.org/2000/svg" width="48" height="48"><rect width="48" height="48" rx="8" fill="#1d4ed8"/><text x="24" y="32" font-size="22" text-anchor="middle" fill="#fff" font-family="sans-serif">N</text></svg>';
const SCOPES = ['PROFILE_READ', 'BOOKING_READ', 'TEAM_BOOKING_READ', 'TEAM_MEMBERSHIP_READ', 'ORG_BOOKING_READ'];

describe.runIf(browserTestsEnabled('org consent page in a browser'))('the consent page in an organization, in a browser', () => {
  const session = browserSession({ PLATFORM_NAME: 'Acme Scheduling' });
  const screenshot = screenshots('org-consent');
  let clientId: string;
  const db = () => session.server.pg.db;

  beforeAll(async () => {
    const created = await clientsCreate(operator(session.server), { name: 'Team Planner', redirectUri: [REDIRECT], scope: SCOPES });
    await clientsSetStatus(operator(session.server), created.client_id, 'approved');
    clientId = created.client_id;
    await db()('oauth_clients').where('id', clientId).update({ optional_scopes: JSON.stringify(['BOOKING_READ']) });
  });

  async function org(name: string, policy: AppPolicy, teams: string[]) {
    const o = await createOrg(db(), { name, appPolicy: policy });
    return { ...o, teams: await Promise.all(teams.map((t) => createTeam(db(), { name: t, orgId: o.id }))) };
  }

  async function consentPage(user: TestUser, scope: string): Promise<Page> {
    const { context, page } = await person(session.browser);
    // The organizations' logos, served here (the page allows their origin: src/web/org-consent.ts).
    await context.route('https://logos.example/**', (route) => route.fulfill({ status: 200, contentType: 'image/svg+xml', body: LOGO }));
    await page.goto(authorizeUrl(session.server.url, { client_id: clientId, redirect_uri: REDIRECT, scope, state: 's' }));
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    return page;
  }

  it('a member of two organizations chooses one; an installation’s line; optional scopes to untick', async () => {
    const [admin, member] = await Promise.all([newUser(session.server, 'Ada Administrator'), newUser(session.server, 'Mia Member')]);
    const north = await org('Northwind Traders International Scheduling Division', 'allow', ['Sales', 'Customer Support Europe', 'Research']);
    const south = await org('Southside Clinic', 'allow', ['Front desk']);
    await db()('organizations').where('id', north.id).update({ logo_url: 'https://logos.example/northwind.svg' });
    await addOrgMember(db(), north.id, admin.id, 'admin');
    await addOrgMember(db(), north.id, member.id, 'member');
    await addOrgMember(db(), south.id, member.id, 'member');
    for (const t of [north.teams[0]!, north.teams[1]!, south.teams[0]!]) await addTeamMember(db(), t.id, member.id);
    await saveInstallation(db(), { clientId, orgId: north.id, allTeams: false, teamIds: [north.teams[0]!.id, north.teams[1]!.id], scopes: ['TEAM_BOOKING_READ', 'TEAM_MEMBERSHIP_READ', 'ORG_BOOKING_READ'], installedBy: admin.id });

    const page = await consentPage(member, SCOPES.join(' '));
    expect(await page.getByRole('radio').count()).toBe(2);
    await expect.poll(() => page.getByText('Installed by Ada Administrator for Customer Support Europe, Sales.').isVisible()).toBe(true);
    expect(await page.getByRole('checkbox', { name: /See your bookings/ }).isChecked()).toBe(true);
    await expect.poll(() => page.locator('.consent-org-logo').evaluate((img: HTMLImageElement) => img.naturalWidth)).toBeGreaterThan(0);
    await screenshot(page, 'member-two-organizations');

    // Southside chosen, the optional scope unticked: the app gets the rest, for the front desk.
    await page.getByRole('radio', { name: 'Southside Clinic' }).check();
    await page.getByRole('checkbox', { name: /See your bookings/ }).uncheck();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${REDIRECT}**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    const consent = await db()('audit_events').where({ action: 'consent.given', user_id: member.id }).first();
    expect(consent.details).toMatchObject({ org_id: south.id, team_ids: [south.teams[0]!.id] });
    expect(consent.details.scopes).not.toContain('BOOKING_READ');
    await page.context().close();
  });

  it('an admin installs the app for the teams they choose', async () => {
    const admin = await newUser(session.server, 'Olga Owner');
    const o = await org('Harbor Dental Group', 'approval', ['Reception', 'Hygienists', 'Billing', 'Surgeons']);
    await addOrgMember(db(), o.id, admin.id, 'owner');
    const page = await consentPage(admin, 'TEAM_BOOKING_READ TEAM_MEMBERSHIP_READ ORG_BOOKING_READ');
    await expect.poll(() => page.getByText('All teams, including teams added later').isVisible()).toBe(true);
    await screenshot(page, 'admin-installs');
    await page.getByRole('checkbox', { name: 'Billing' }).uncheck();
    await page.getByRole('checkbox', { name: 'Surgeons' }).uncheck();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${REDIRECT}**`);
    const installation = await db()('app_installations').where({ org_id: o.id, status: 'active' }).first();
    expect(installation).toMatchObject({ all_teams: false, installed_by: admin.id });
    expect([...installation.team_ids].sort()).toEqual([o.teams[0]!.id, o.teams[1]!.id].sort());
    await page.context().close();
  });

  it('a member of an organization that needs approval: the request, and the way back to the app', async () => {
    const member = await newUser(session.server, 'Rui Requester');
    const o = await org('Lakeside Veterinary', 'approval', ['Clinic']);
    await addOrgMember(db(), o.id, member.id, 'member');
    await addTeamMember(db(), o.teams[0]!.id, member.id);
    const page = await consentPage(member, 'PROFILE_READ TEAM_BOOKING_READ');
    await expect.poll(() => page.getByText("This will request approval from your organization's admins").isVisible()).toBe(true);
    await screenshot(page, 'member-approval');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.getByRole('heading', { name: "Request sent to Lakeside Veterinary's admins" }).waitFor();
    await screenshot(page, 'request-sent');
    await page.getByRole('button', { name: 'Back to Team Planner' }).click();
    await page.waitForURL(`${REDIRECT}**`);
    expect(new URL(page.url()).searchParams.get('error')).toBe('access_denied');
    expect(await db()('installation_requests').where({ org_id: o.id, user_id: member.id, status: 'pending' })).toHaveLength(1);
    await page.context().close();
  });
});
