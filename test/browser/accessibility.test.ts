// Issue 38: axe-core (WCAG 2.0/2.1 A and AA, and best practices) over every page a person meets,
// in Chromium at 1280×800 and at 390×844: the start page, both sign-in pages, consent (the demo's
// scopes, every scope group, an organization request, an admin installing, a request needing
// approval, an unreviewed metadata-document client), "request sent", apps with access and its
// revoke confirmation, developer settings (list, form with refusals, secret, client, webhook
// secret, secret revoke and delete confirmations), admin review and suspend, organizations and an
// organization's apps, error pages signed out and signed in, "Administrators only", the finished
// step and the demo callback. Every violation is listed (rule id, help, nodes) in the failure.
// Where part of a page sticks to the screen, no control reached with Tab may hide behind it.
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { approvedClient, newUser, operator, REDIRECT, tokensFor } from '../support/fixtures.ts';
import { authorizeUrl, type TestUser } from '../support/oauth.ts';
import { AGENT_REDIRECT, pkcePair, startDocumentServer, type DocumentServer } from '../support/cimd.ts';
import { browserSession, browserTestsEnabled, DESKTOP, oneLayoutProblems, PHONE, signIn } from '../support/chromium.ts';
import { createClient } from '../../src/clients/service.ts';
import { clientsCreate, clientsSetStatus, usersSetAdmin } from '../../src/admin/commands.ts';
import { addOrgMember, addTeamMember, createOrg, createTeam, saveInstallation } from '../../src/orgs/store.ts';
import { loadConfig } from '../../src/config.ts';
import { seedDemo } from '../../src/demo.ts';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const RULES = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'];
const SCOPES_ALL = ['PROFILE_READ', 'PROFILE_WRITE', 'BOOKING_READ', 'BOOKING_WRITE', 'SCHEDULE_READ', 'EVENT_TYPE_READ', 'APPS_READ', 'TEAM_BOOKING_READ', 'TEAM_BOOKING_WRITE', 'TEAM_MEMBERSHIP_READ', 'TEAM_SCHEDULE_READ', 'ORG_BOOKING_READ', 'ORG_BOOKING_WRITE', 'ORG_PROFILE_READ', 'ORG_SCHEDULE_READ', 'ORG_EVENT_TYPE_READ'];
const ORG_SCOPES = ['PROFILE_READ', 'BOOKING_READ', 'TEAM_BOOKING_READ', 'TEAM_MEMBERSHIP_READ', 'ORG_BOOKING_READ'];

/**
 * Rules switched off on one page only, each with its reason (none so far): `{ 'page name': ['rule-id'] }`.
 * A rule belongs here only when the page cannot sensibly satisfy it.
 */
const DISABLED: Record<string, string[]> = {};

interface Finding {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** axe's violations on the page as it is now (axe injected once per document). */
async function violations(page: Page, name: string): Promise<Finding[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE });
  const rules = Object.fromEntries((DISABLED[name] ?? []).map((id) => [id, { enabled: false }]));
  return page.evaluate(async ({ runOnly, rules }) => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
    const result = await axe.run(document, { runOnly, rules, resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.map(String).join(' ')) }));
  }, { runOnly: RULES, rules });
}

/**
 * Where something sticks to the screen (the consent page's decision bar), tabs through the page
 * and lists each focused control whose centre that covers (WCAG 2.2 SC 2.4.11, which axe does not check).
 */
async function focusBehindStickyParts(page: Page): Promise<string[]> {
  const sticky = await page.evaluate(() => [...document.querySelectorAll('body *')].some((el) => ['sticky', 'fixed'].includes(getComputedStyle(el).position)));
  if (!sticky) return [];
  await page.evaluate(() => {
    window.scrollTo(0, 0);
    (document.activeElement as HTMLElement | null)?.blur();
  });
  const covered: string[] = [];
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press('Tab');
    const problem = await page.evaluate(() => {
      const el = document.activeElement as HTMLInputElement | null;
      if (!el || el === document.body) return null;
      const box = el.getBoundingClientRect();
      const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
      const seen = hit && (el.contains(hit) || hit.contains(el) || el.labels?.[0]?.contains(hit));
      return seen ? '' : `<${el.tagName.toLowerCase()} name="${el.name ?? ''}"> "${(el.textContent ?? '').trim().slice(0, 40)}" at y=${Math.round(box.top)} is behind <${hit?.tagName.toLowerCase()} class="${hit?.className}">`;
    });
    if (problem === null) break;
    if (problem) covered.push(problem);
  }
  await page.evaluate(() => window.scrollTo(0, 0));
  return covered;
}

function describeFindings(findings: Finding[]): string {
  return findings.map((f) => `  ${f.id} (${f.impact}): ${f.help}\n${f.nodes.map((n) => `      ${n}`).join('\n')}`).join('\n');
}

describe.runIf(browserTestsEnabled('accessibility (axe) in a browser'))('every page passes axe at desktop and phone size', { timeout: 60_000 }, () => {
  // Each test walks many pages at two sizes: on a busy machine that takes longer than a single page's test.
  const session = browserSession({ PLATFORM_NAME: 'Acme Scheduling', CIMD_ALLOW_LOOPBACK: 'true', WEBHOOK_ALLOW_LOOPBACK: 'true' });
  const url = (p: string) => `${session.server.url}${p}`;
  const db = () => session.server.pg.db;
  const checked: string[] = [];
  let docs: DocumentServer;

  beforeAll(async () => {
    docs = await startDocumentServer();
  });
  afterAll(async () => {
    await docs?.close();
    if (checked.length) console.info(`axe checked ${checked.length} pages at ${DESKTOP.width}×${DESKTOP.height} and ${PHONE.width}×${PHONE.height}: ${checked.join(', ')}`);
  });

  /** axe at both sizes on the page as it stands (the document is not reloaded); soft, so one run lists every page's findings. */
  async function check(page: Page, name: string): Promise<void> {
    for (const [size, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
      await page.setViewportSize(viewport);
      const found = await violations(page, name);
      expect.soft(found, `${name} (${size}, ${page.url()}) has axe violations:\n${describeFindings(found)}`).toEqual([]);
      expect.soft(await focusBehindStickyParts(page), `${name} (${size}): keyboard focus hidden behind a sticky part`).toEqual([]);
      // One product: the same card widths, brand line and components on every page (issue 50 item 8).
      expect.soft(await oneLayoutProblems(page, name.startsWith('demo callback') ? 'Demo app' : 'Acme Scheduling'), `${name} (${size}): out of the one layout`).toEqual([]);
    }
    await page.setViewportSize(DESKTOP);
    checked.push(name);
  }

  /** A person whose context lets axe's script in past the pages' Content-Security-Policy. */
  async function person(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await session.browser.newContext({ viewport: DESKTOP, bypassCSP: true });
    for (const redirect of [REDIRECT, AGENT_REDIRECT]) await context.route(`${redirect}**`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><html lang="en"><title>App</title><main><h1>Back at the app</h1></main></html>' }));
    return { context, page: await context.newPage() };
  }

  /** The authorization request's own sign-in (checked once), then its consent page. */
  async function consentPage(user: TestUser, params: { client_id: string; scope: string }, checkSignIn = false): Promise<{ context: BrowserContext; page: Page }> {
    const { context, page } = await person();
    await page.goto(authorizeUrl(session.server.url, { redirect_uri: REDIRECT, state: 's', ...params }));
    await page.getByLabel('Password').waitFor();
    if (checkSignIn) await check(page, 'sign-in (authorization request)');
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    return { context, page };
  }

  async function approved(name: string, scopes: string[]): Promise<string> {
    const created = await clientsCreate(operator(session.server), { name, redirectUri: [REDIRECT], scope: scopes });
    await clientsSetStatus(operator(session.server), created.client_id, 'approved');
    return created.client_id;
  }

  let demoOutput = '';

  it('the check can fail: a sign-in page spoiled on purpose shows its violations', async () => {
    const { context, page } = await person();
    await page.goto(url('/login'));
    await page.evaluate(() => {
      document.querySelector('label[for=email]')!.remove();
      const h1 = document.querySelector('h1')!;
      h1.outerHTML = `<h3 style="color:#ccc">${h1.textContent}</h3>`;
    });
    const ids = (await violations(page, 'spoiled sign-in')).map((f) => f.id).sort();
    expect(ids).toEqual(expect.arrayContaining(['color-contrast', 'label', 'page-has-heading-one']));
    await context.close();
  });

  it('the start page, signed out and as an administrator; the web sign-in page', async () => {
    demoOutput = await seedDemo(session.server.system, loadConfig({ NODE_ENV: 'test', APP_URL: session.server.url, DATABASE_URL: session.server.pg.url }));
    const admin = await newUser(session.server, 'Ari Admin');
    await usersSetAdmin(operator(session.server), admin.email);
    const { context, page } = await person();
    await page.goto(url('/'));
    await check(page, 'start page');
    await page.goto(url('/login'));
    await check(page, 'sign-in');
    await page.getByLabel('Email').fill(admin.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('.alert').waitFor();
    await check(page, 'sign-in refused');
    await signIn(page, session.server.url, admin, '/');
    await check(page, 'start page (administrator)');
    await context.close();
  });

  it('consent: the demo scopes, every scope group, a finished step', async () => {
    const user = await newUser(session.server, 'Uma User');
    const small = await consentPage(user, { client_id: await approved('Calendar Sync Pro', ['PROFILE_READ', 'PROFILE_WRITE', 'BOOKING_READ']), scope: 'PROFILE_READ BOOKING_READ' }, true);
    await check(small.page, 'consent (demo scopes)');
    await small.page.goBack();
    await small.page.getByRole('heading', { name: 'This step is finished' }).waitFor();
    await check(small.page, 'step finished');
    await small.context.close();

    const wide = await consentPage(user, { client_id: await approved('Everything Planner', SCOPES_ALL), scope: SCOPES_ALL.join(' ') });
    await check(wide.page, 'consent (every scope group)');
    await wide.context.close();
  });

  it('consent in organizations: two to choose from, an admin installing, approval needed, "request sent", the organization pages', async () => {
    const clientId = await approved('Team Planner', ORG_SCOPES);
    await db()('oauth_clients').where('id', clientId).update({ optional_scopes: JSON.stringify(['BOOKING_READ']) });
    const [owner, member] = [await newUser(session.server, 'Olga Owner'), await newUser(session.server, 'Mia Member')];
    const north = await createOrg(db(), { name: 'Northwind Traders', appPolicy: 'allow' });
    const lake = await createOrg(db(), { name: 'Lakeside Veterinary', appPolicy: 'approval' });
    const teams = await Promise.all(['Sales', 'Support'].map((name) => createTeam(db(), { name, orgId: north.id })));
    const clinic = await createTeam(db(), { name: 'Clinic', orgId: lake.id });
    await addOrgMember(db(), north.id, owner.id, 'owner');
    await addOrgMember(db(), lake.id, owner.id, 'owner');
    await addOrgMember(db(), north.id, member.id, 'member');
    await addOrgMember(db(), lake.id, member.id, 'member');
    for (const team of [...teams, clinic]) await addTeamMember(db(), team.id, member.id);
    await saveInstallation(db(), { clientId, orgId: north.id, allTeams: false, teamIds: [teams[0]!.id], scopes: ['TEAM_BOOKING_READ', 'TEAM_MEMBERSHIP_READ', 'ORG_BOOKING_READ'], installedBy: owner.id });

    const choose = await consentPage(member, { client_id: clientId, scope: ORG_SCOPES.join(' ') });
    await check(choose.page, 'consent (member of two organizations)');
    await choose.page.getByRole('radio', { name: 'Lakeside Veterinary' }).check();
    await choose.page.getByText("This will request approval from your organization's admins").waitFor();
    await check(choose.page, 'consent (approval needed)');
    await choose.page.getByRole('button', { name: 'Allow' }).click();
    await choose.page.getByRole('heading', { name: /Request sent to/ }).waitFor();
    await check(choose.page, 'request sent');
    await choose.context.close();

    const install = await consentPage(owner, { client_id: clientId, scope: 'TEAM_BOOKING_READ TEAM_MEMBERSHIP_READ ORG_BOOKING_READ' });
    await check(install.page, 'consent (admin installs for teams)');
    await install.context.close();

    const { context, page } = await person();
    await signIn(page, session.server.url, owner, '/settings/organizations');
    await check(page, 'organizations');
    await page.goto(url(`/settings/organizations/${lake.id}/apps`));
    await check(page, 'organization apps (a pending request)');
    await page.goto(url(`/settings/organizations/${north.id}/apps`));
    await check(page, 'organization apps (an installation)');
    await context.close();
  });

  it('consent for an unreviewed metadata-document client', async () => {
    const user = await newUser(session.server, 'Agnes Agent-User');
    const clientId = docs.agent('/axe-agent.json');
    const { challenge } = pkcePair();
    const { context, page } = await person();
    await page.goto(authorizeUrl(session.server.url, { client_id: clientId, redirect_uri: AGENT_REDIRECT, scope: 'PROFILE_READ', state: 's', code_challenge: challenge, code_challenge_method: 'S256' }));
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    await check(page, 'consent (unreviewed metadata document)');
    await context.close();
  });

  it('apps with access and its revoke confirmation', async () => {
    const user = await newUser(session.server, 'Ravi Revoker');
    const client = await approvedClient(session.server, ['PROFILE_READ', 'BOOKING_READ'], 'Room Booker');
    await tokensFor(session.server, client, user, 'PROFILE_READ BOOKING_READ');
    const { context, page } = await person();
    await signIn(page, session.server.url, user, '/settings/connected-apps');
    await check(page, 'apps with access');
    await page.getByRole('link', { name: /Revoke access of Room Booker/ }).click();
    await page.getByRole('heading', { name: 'Revoke access of Room Booker?' }).waitFor();
    await check(page, 'revoke access confirmation');
    await page.getByRole('button', { name: 'Revoke access' }).click();
    await page.locator('.notice').waitFor();
    await check(page, 'apps with access (none left, a notice)');
    await context.close();
  });

  it('developer settings: the list, the form and its refusals, the secret, the client page, the webhook secret, the confirmations', async () => {
    const dev = await newUser(session.server, 'Dana Developer');
    const { context, page } = await person();
    await signIn(page, session.server.url, dev, '/settings/developer/oauth-clients');
    await check(page, 'developer clients (empty)');
    await page.getByRole('link', { name: 'Register a client' }).click();
    await page.getByLabel('Name').waitFor();
    await check(page, 'new client form');
    await page.getByLabel(/Redirect URIs/).fill('http://plain.example/cb');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.locator('.field-error').first().waitFor();
    await check(page, 'new client form (refused)');
    await page.getByLabel('Name').fill('Calendar Sync Pro');
    await page.getByLabel(/Redirect URIs/).fill(REDIRECT);
    await page.locator('#scope-PROFILE_READ').check();
    await page.getByRole('button', { name: 'Register' }).click();
    await page.locator('#secret').waitFor();
    await check(page, 'client secret (shown once)');
    await page.getByRole('link', { name: 'I have stored it safely' }).click();
    await page.getByRole('heading', { name: 'How to connect' }).waitFor();
    await check(page, 'client page');
    await page.getByText('Change scopes').click();
    await check(page, 'client page (scopes unfolded)');

    await page.getByLabel('Webhook URL').fill('http://127.0.0.1:9/hooks');
    await page.getByRole('button', { name: 'Save webhook URL' }).click();
    await page.getByRole('heading', { name: 'Your webhook signing secret' }).waitFor();
    await check(page, 'webhook signing secret');
    await page.getByRole('link', { name: 'I have stored it safely' }).click();
    await page.getByRole('heading', { name: 'How to connect' }).waitFor();
    await check(page, 'client page (with a webhook)');

    await page.getByRole('button', { name: 'Generate new secret' }).click();
    await page.getByRole('link', { name: 'I have stored it safely' }).click();
    await page.getByRole('link', { name: 'Revoke…' }).first().click();
    await page.getByRole('button', { name: 'Revoke the secret' }).waitFor();
    await check(page, 'secret revoke confirmation');
    await page.goBack();
    await page.getByRole('link', { name: 'Delete this client…' }).click();
    await page.getByRole('button', { name: 'Delete the client' }).waitFor();
    await check(page, 'delete confirmation');
    await page.getByLabel(/type the client's name/).fill('wrong name');
    await page.getByRole('button', { name: 'Delete the client' }).click();
    await page.locator('#confirm_name[aria-invalid="true"]').waitFor();
    await check(page, 'delete confirmation (refused)');
    await page.goto(url('/settings/developer/oauth-clients'));
    await check(page, 'developer clients');
    await context.close();
  });

  it('admin review (tabs, a pending client, an empty tab) and the suspend confirmation; "Administrators only"', async () => {
    const [admin, dev, plain] = [await newUser(session.server, 'Rita Reviewer'), await newUser(session.server, 'Dev Eloper'), await newUser(session.server, 'Nora Nobody')];
    await usersSetAdmin(operator(session.server), admin.email);
    await createClient(session.server.system, { name: 'Meeting Notes Helper', kind: 'confidential', legacy: false, scopes: ['PROFILE_READ', 'BOOKING_WRITE'], redirectUris: [REDIRECT], ownerUserId: dev.id, policyUri: 'https://notes.example.com/privacy' }, { actor: 'test' });
    await approvedClient(session.server, ['PROFILE_READ'], 'Approved Helper');

    const { context, page } = await person();
    await signIn(page, session.server.url, admin, '/admin/oauth-clients');
    await check(page, 'admin review (pending)');
    await page.locator('tr.item', { hasText: 'Meeting Notes Helper' }).getByText('Reject…').click();
    await check(page, 'admin review (reject opened)');
    await page.goto(url('/admin/oauth-clients?status=approved'));
    await check(page, 'admin review (approved)');
    await page.locator('tr.item', { hasText: 'Approved Helper' }).getByRole('link', { name: 'Suspend…' }).click();
    await page.getByRole('heading', { name: 'Suspend Approved Helper?' }).waitFor();
    await check(page, 'admin suspend');
    await page.goto(url('/admin/oauth-clients?status=suspended'));
    await check(page, 'admin review (empty tab)');
    await context.close();

    const other = await person();
    await signIn(other.page, session.server.url, plain, '/settings/connected-apps');
    await check(other.page, 'apps with access (none)');
    await other.page.goto(url('/admin/oauth-clients'));
    await other.page.getByRole('heading', { name: 'Administrators only' }).waitFor();
    await check(other.page, 'Administrators only');
    await other.page.goto(url('/settings/no-such-page'));
    await check(other.page, 'not found (signed in)');
    await other.page.goto(authorizeUrl(session.server.url, { client_id: 'no-such-app', redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }));
    await check(other.page, 'unknown app (signed in)');
    await other.context.close();
  });

  it('error pages signed out: unknown app, wrong redirect URI, an expired sign-in step, not found', async () => {
    const client = await approvedClient(session.server, ['PROFILE_READ'], 'Error Maker');
    const { context, page } = await person();
    await page.goto(authorizeUrl(session.server.url, { client_id: 'no-such-app', redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }));
    await check(page, 'unknown app');
    await page.goto(authorizeUrl(session.server.url, { client_id: client.client_id, redirect_uri: 'https://evil.example/cb', scope: 'PROFILE_READ', state: 's' }));
    await page.locator('details.error-technical summary').click();
    await check(page, 'unregistered redirect URI (details open)');
    await page.goto(url('/no-such-page'));
    await check(page, 'not found');
    await page.goto(authorizeUrl(session.server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's' }));
    await page.getByLabel('Password').waitFor();
    const other = await person();
    await other.page.goto(page.url());
    await other.page.getByRole('heading', { name: 'This sign-in has expired' }).waitFor();
    await check(other.page, 'sign-in expired');
    await other.context.close();
    await context.close();
  });

  it('the demo callback: a code, and a refusal', async () => {
    const pick = (re: RegExp) => re.exec(demoOutput)![1]!;
    const { context, page } = await person();
    await page.goto(pick(/2\. open\s+(\S+)/));
    await page.getByLabel('Email').fill(pick(/user:\s+(\S+) \//));
    await page.getByLabel('Password').fill(pick(/\/ password (\S+)/));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${session.server.url}/demo/callback?**`);
    await check(page, 'demo callback');
    await page.goto(url('/demo/callback?error=access_denied&error_description=End-User+aborted+interaction&state=s'));
    await check(page, 'demo callback (denied)');
    await context.close();
  });
});
