// Consent in an organization's context (issue 35 points 1, 2, 4, 6, 7; docs/org-consent.md): the
// user chooses one organization and its teams, policies allow / approval / block, an admin's Allow
// installs the app, members get at most the installation; every posted choice is checked again
// from current data (foreign ids, teams not theirs, the admin form from a member, a replay after an
// uninstall) and refused with nothing granted. Optional scopes and include_granted_scopes too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser, type Page } from './support/browser.ts';
import { authorizeUrl, reachConsent, tokenRequest, type TestUser } from './support/oauth.ts';
import { approvedClient, newUser, REDIRECT, type TestClient } from './support/fixtures.ts';
import { addOrgMember, addTeamMember, createOrg, createTeam, markInstallationRemoved, saveInstallation } from '../src/orgs/store.ts';
import type { AppPolicy, OrgRole } from '../src/orgs/model.ts';
import { uninstallApp } from '../src/orgs/installations.ts';

type User = TestUser & { id: number };
const SCOPES = ['PROFILE_READ', 'BOOKING_READ', 'TEAM_BOOKING_READ', 'TEAM_EVENT_TYPE_READ', 'ORG_BOOKING_READ'];

describe('consent in an organization (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let client: TestClient;
  const db = () => server.pg.db;

  beforeAll(async () => {
    server = await startTestServer(storage);
    client = await approvedClient(server, SCOPES, 'Team Planner');
  });
  afterAll(() => server?.close());

  /** An organization with teams; `people` are [user, role, team names]. */
  async function org(policy: AppPolicy, teamNames: string[], people: [User, OrgRole | undefined, string[]][]) {
    const o = await createOrg(db(), { name: `Org ${Math.random().toString(36).slice(2, 7)}`, appPolicy: policy });
    const teams = await Promise.all(teamNames.map((name) => createTeam(db(), { name, orgId: o.id })));
    const team = (name: string) => teams.find((t) => t.name === name)!;
    for (const [user, role, mine] of people) {
      if (role) await addOrgMember(db(), o.id, user.id, role);
      for (const name of mine) await addTeamMember(db(), team(name).id, user.id);
    }
    return { ...o, teams, team };
  }

  const consent = (user: User, scope: string, extra: Record<string, string> = {}, browser = new Browser()) =>
    reachConsent(browser, server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope, state: 's', ...extra }, user);

  /** The consent form's fields as a browser sends them (inputs inside it or tied to it with form=). */
  function formFields(page: Page): [string, string][] {
    const out: [string, string][] = [];
    page.$('form:has(button[value=allow]) input[name], input[form=consent-form][name]').each((_, el) => {
      const input = page.$(el);
      if (input.is('[type=checkbox], [type=radio]') && input.attr('checked') === undefined) return;
      out.push([input.attr('name')!, input.attr('value') ?? '']);
    });
    return out;
  }

  /** Posts Allow with the page's fields, `drop`ped names removed and `add`ed pairs appended. */
  function allow(browser: Browser, page: Page, { add = [], drop = [] }: { add?: [string, string][]; drop?: string[] } = {}) {
    const body = new URLSearchParams(formFields(page).filter(([name]) => !drop.includes(name)));
    for (const [k, v] of add) body.append(k, v);
    body.set('decision', 'allow');
    const action = page.$('form:has(button[value=allow])').attr('action')!;
    return browser.request(new URL(action, page.url).href, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
  }

  /** After Allow: the redirect back to the app, and the token response for its code. */
  async function backToApp(browser: Browser, res: Page) {
    expect(res.status, res.html.slice(0, 600)).toBe(303);
    const final = await browser.follow(res.location!, server.url);
    const back = new URL(final.location!);
    const code = back.searchParams.get('code');
    expect(code, back.href).toBeTruthy();
    const token = await tokenRequest(server.url, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, ...client });
    expect(token.status).toBe(200);
    return token.body as { access_token: string; scope: string };
  }

  async function introspect(token: string) {
    const basic = Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64');
    const res = await fetch(`${server.url}/v2/auth/oauth2/introspect`, { method: 'POST', headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token }).toString() });
    return (await res.json()) as Record<string, unknown>;
  }

  const grantsOf = (user: User) => db()('user_grants').where({ account_id: String(user.id), client_id: client.client_id }).orderBy('granted_at');
  const lastConsent = async (user: User) => (await db()('audit_events').where({ action: 'consent.given', user_id: user.id }).orderBy('id', 'desc').first())?.details;
  const scopeSet = (scope: string) => new Set(scope.split(' '));
  const text = (page: Page, selector: string) => page.$(selector).text().replace(/\s+/g, ' ').trim();
  const teamBoxes = (page: Page, orgId: number) => page.$(`input[name=team_${orgId}]`).map((_, el) => Number(page.$(el).attr('value'))).get();

  describe('policy allow', () => {
    it('a member grants team scopes for their own teams only, no ORG_ scope; the grant is bound to the organization and teams', async () => {
      const [member, other] = await Promise.all([newUser(server, 'Mia Member'), newUser(server, 'Otto Other')]);
      const o = await org('allow', ['Sales', 'Support'], [[member, 'member', ['Sales']], [other, 'member', ['Support']]]);
      const browser = new Browser();
      const page = await consent(member, 'PROFILE_READ TEAM_BOOKING_READ ORG_BOOKING_READ', {}, browser);
      expect(page.status).toBe(200);
      expect(text(page, '.consent-org-name')).toBe(o.name);
      expect(page.$('input[name=org][type=radio]').attr('checked')).toBeDefined();
      expect(teamBoxes(page, o.id)).toEqual([o.team('Sales').id]);
      expect(page.$(`input[name=all_teams_${o.id}]`)).toHaveLength(0);
      expect(text(page, '.consent-withheld')).toContain('See all bookings across your organization');

      const token = await backToApp(browser, await allow(browser, page));
      expect(scopeSet(token.scope)).toEqual(new Set(['PROFILE_READ', 'TEAM_BOOKING_READ']));
      const [row] = await grantsOf(member);
      expect(row.grant_id).toMatch(/^bound\./);
      expect(await lastConsent(member)).toMatchObject({ org_id: o.id, team_ids: [o.team('Sales').id], installation_id: null, installed: false });
      expect(await db()('grant_bindings').where('grant_id', row.grant_id).first()).toMatchObject({ org_id: o.id, team_ids: [o.team('Sales').id], installation_id: null });
      // The token says it (introspection, src/orgs/bindings.ts claims).
      expect(await introspect(token.access_token)).toMatchObject({ active: true, org_id: String(o.id), team_ids: [String(o.team('Sales').id)] });
    });

    it('shows the organization’s logo, its origin allowed by this page’s Content-Security-Policy only', async () => {
      const member = await newUser(server);
      const o = await org('allow', ['Design'], [[member, 'member', ['Design']]]);
      await db()('organizations').where('id', o.id).update({ logo_url: 'https://cdn.example.org/acme/logo.png' });
      const page = await consent(member, 'TEAM_BOOKING_READ');
      expect(page.$('.consent-org-logo').attr('src')).toBe('https://cdn.example.org/acme/logo.png');
      expect(page.headers.get('content-security-policy')).toMatch(/img-src 'self' data: https:\/\/cdn\.example\.org(;|$)/);
      const plain = await consent(member, 'PROFILE_READ');
      expect(plain.headers.get('content-security-policy')).not.toContain('cdn.example.org');
    });

    it('an admin’s Allow installs here too, and a member then gets at most the installation’s teams', async () => {
      const [admin, member] = await Promise.all([newUser(server), newUser(server)]);
      const o = await org('allow', ['Sales', 'Support'], [[admin, 'admin', []], [member, 'member', ['Sales', 'Support']]]);
      const browser = new Browser();
      const page = await consent(admin, 'TEAM_BOOKING_READ', {}, browser);
      await backToApp(browser, await allow(browser, page, { drop: [`team_${o.id}`], add: [[`team_${o.id}`, String(o.team('Support').id)]] }));
      expect(await db()('app_installations').where({ org_id: o.id, status: 'active' }).first()).toMatchObject({ team_ids: [o.team('Support').id], installed_by: admin.id });
      const memberPage = await consent(member, 'TEAM_BOOKING_READ');
      expect(teamBoxes(memberPage, o.id)).toEqual([o.team('Support').id]);
    });

    it('a request without team or org scopes, or from a user in no organization, is the consent of before', async () => {
      const [member, loner] = await Promise.all([newUser(server), newUser(server)]);
      await org('block', ['Ops'], [[member, 'member', ['Ops']]]);
      const page = await consent(member, 'PROFILE_READ');
      expect(page.$('.consent-orgs')).toHaveLength(0);
      expect(page.$('#consent-form')).toHaveLength(0);
      const lonely = await consent(loner, 'TEAM_BOOKING_READ');
      expect(lonely.$('.consent-orgs')).toHaveLength(0);
      expect(lonely.$('button[value=allow]')).toHaveLength(1);
    });
  });

  describe('policy block', () => {
    it('ends in access_denied at the app without a consent page when every organization blocks it', async () => {
      const user = await newUser(server);
      await org('block', ['Ops'], [[user, 'admin', []]]);
      const browser = new Browser();
      const landed = await consent(user, 'TEAM_BOOKING_READ', {}, browser);
      expect(landed.$('button[value=allow]')).toHaveLength(0);
      const back = new URL(landed.location!);
      expect(back.origin + back.pathname).toBe(REDIRECT);
      expect(back.searchParams.get('error')).toBe('access_denied');
      expect(back.searchParams.get('state')).toBe('s');
      expect(await grantsOf(user)).toHaveLength(0);
    });
  });

  describe('several organizations', () => {
    it('offers each one not blocking the app, one chosen; another organization is another grant', async () => {
      const user = await newUser(server);
      const a = await org('allow', ['A1'], [[user, 'member', ['A1']]]);
      const b = await org('allow', ['B1', 'B2'], [[user, 'member', ['B2']]]);
      const c = await org('block', ['C1'], [[user, 'member', ['C1']]]);
      const browser = new Browser();
      const page = await consent(user, 'TEAM_BOOKING_READ', {}, browser);
      const offered = page.$('input[name=org]').map((_, el) => Number(page.$(el).attr('value'))).get();
      expect(offered.sort()).toEqual([a.id, b.id].sort());
      expect(offered).not.toContain(c.id);
      expect(page.$('input[name=org][checked]')).toHaveLength(1);

      await backToApp(browser, await allow(browser, page, { drop: ['org'], add: [['org', String(a.id)]] }));
      const again = await consent(user, 'TEAM_BOOKING_READ', { prompt: 'consent' }, browser);
      await backToApp(browser, await allow(browser, again, { drop: ['org'], add: [['org', String(b.id)]] }));
      const grants = await grantsOf(user);
      expect(grants).toHaveLength(2);
      expect(grants[0].grant_id).not.toBe(grants[1].grant_id);
      expect(await lastConsent(user)).toMatchObject({ org_id: b.id, team_ids: [b.team('B2').id] });
    });
  });

  describe('policy approval', () => {
    it('a member’s Allow sends a request to the admins; leaving by the page’s button gives the app access_denied', async () => {
      const member = await newUser(server);
      const o = await org('approval', ['Sales'], [[member, 'member', ['Sales']]]);
      const browser = new Browser();
      const page = await consent(member, 'PROFILE_READ TEAM_BOOKING_READ', {}, browser);
      expect(text(page, '.consent-org-approval')).toContain("This will request approval from your organization's admins");
      const sent = await allow(browser, page);
      expect(sent.status).toBe(200);
      expect(text(sent, 'h1')).toBe(`Request sent to ${o.name}'s admins`);
      expect(await db()('installation_requests').where({ org_id: o.id, user_id: member.id, client_id: client.client_id })).toMatchObject([{ status: 'pending', scopes: ['TEAM_BOOKING_READ'] }]);
      expect(await grantsOf(member)).toHaveLength(0);
      // Asking again keeps one pending request.
      expect((await allow(browser, page)).status).toBe(200);
      expect(await db()('installation_requests').where({ org_id: o.id, user_id: member.id })).toHaveLength(1);
      const left = await browser.submit(sent, 'button:contains("Back to")');
      const back = new URL((await browser.follow(left.location!, server.url)).location!);
      expect(back.searchParams.get('error')).toBe('access_denied');
    });

    it('an admin’s Allow installs the app for the teams chosen; members then get at most its scopes and teams', async () => {
      const [admin, member] = await Promise.all([newUser(server, 'Ada Admin'), newUser(server)]);
      const o = await org('approval', ['Sales', 'Support', 'Research'], [[admin, 'admin', []], [member, 'member', ['Sales', 'Support']]]);
      await db()('installation_requests').insert({ client_id: client.client_id, org_id: o.id, user_id: member.id, scopes: JSON.stringify(['TEAM_BOOKING_READ']) });
      const adminBrowser = new Browser();
      const page = await consent(admin, 'TEAM_BOOKING_READ ORG_BOOKING_READ', {}, adminBrowser);
      expect(teamBoxes(page, o.id).sort()).toEqual(o.teams.map((t) => t.id).sort());
      expect(page.$(`input[name=all_teams_${o.id}]`)).toHaveLength(1);
      expect(text(page, '.consent-org-installs')).toContain('allowing installs Team Planner');
      const res = await allow(adminBrowser, page, { drop: [`team_${o.id}`], add: [[`team_${o.id}`, String(o.team('Sales').id)]] });
      const adminToken = await backToApp(adminBrowser, res);
      expect(scopeSet(adminToken.scope)).toEqual(new Set(['TEAM_BOOKING_READ', 'ORG_BOOKING_READ']));
      const [installation] = await db()('app_installations').where({ org_id: o.id, client_id: client.client_id });
      expect(installation).toMatchObject({ status: 'active', all_teams: false, team_ids: [o.team('Sales').id], installed_by: admin.id });
      expect(new Set(installation.scopes)).toEqual(new Set(['TEAM_BOOKING_READ', 'ORG_BOOKING_READ']));
      expect((await db()('installation_requests').where({ org_id: o.id }).first()).status).toBe('approved');

      const browser = new Browser();
      const memberPage = await consent(member, 'TEAM_BOOKING_READ TEAM_EVENT_TYPE_READ ORG_BOOKING_READ', {}, browser);
      expect(text(memberPage, '.consent-org-installed')).toBe('Installed by Ada Admin for Sales.');
      expect(teamBoxes(memberPage, o.id)).toEqual([o.team('Sales').id]);
      const token = await backToApp(browser, await allow(browser, memberPage));
      expect(scopeSet(token.scope)).toEqual(new Set(['TEAM_BOOKING_READ', 'ORG_BOOKING_READ']));
      expect(await lastConsent(member)).toMatchObject({ org_id: o.id, team_ids: [o.team('Sales').id], installation_id: installation.id, installed: false });
    });

    it('an admin may choose all teams', async () => {
      const admin = await newUser(server);
      const o = await org('approval', ['X', 'Y'], [[admin, 'owner', []]]);
      const browser = new Browser();
      const page = await consent(admin, 'TEAM_BOOKING_READ', {}, browser);
      await backToApp(browser, await allow(browser, page, { drop: [`team_${o.id}`], add: [[`all_teams_${o.id}`, 'yes']] }));
      expect(await db()('app_installations').where({ org_id: o.id }).first()).toMatchObject({ all_teams: true, team_ids: [] });
      expect(await lastConsent(admin)).toMatchObject({ team_ids: o.teams.map((t) => t.id) });
    });
  });

  describe('bad input: a clear refusal, nothing granted', () => {
    let member: User;
    let admin: User;
    let o: Awaited<ReturnType<typeof org>>;
    let elsewhere: Awaited<ReturnType<typeof org>>;

    beforeAll(async () => {
      [member, admin] = await Promise.all([newUser(server), newUser(server)]);
      o = await org('allow', ['Mine', 'NotMine'], [[member, 'member', ['Mine']], [admin, 'admin', []]]);
      elsewhere = await org('allow', ['Foreign'], [[admin, 'member', ['Foreign']]]);
    });

    async function refused(user: User, change: { add?: [string, string][]; drop?: string[] }, status: number, message: RegExp) {
      const browser = new Browser();
      const page = await consent(user, 'TEAM_BOOKING_READ', {}, browser);
      const before = await db()('app_installations').where({ client_id: client.client_id }).select('id', 'status', 'team_ids', 'scopes');
      const res = await allow(browser, page, change);
      expect(res.status, res.html.slice(0, 400)).toBe(status);
      expect(res.html).toMatch(message);
      expect(await grantsOf(user)).toHaveLength(0);
      expect(await db()('app_installations').where({ client_id: client.client_id }).select('id', 'status', 'team_ids', 'scopes')).toEqual(before);
    }

    it('an organization the user is not in, an unknown one, or none at all', async () => {
      await refused(member, { drop: ['org'], add: [['org', String(elsewhere.id)]] }, 403, /not in this organization/);
      await refused(member, { drop: ['org'], add: [['org', '987654']] }, 403, /not in this organization/);
      await refused(member, { drop: ['org'], add: [['org', '1 OR 1=1']] }, 400, /choose the organization/);
      await refused(member, { drop: ['org'] }, 400, /choose the organization/);
    });

    it('a member choosing a team of the organization they are not in, a team of another organization, or a bad id', async () => {
      await refused(member, { add: [[`team_${o.id}`, String(o.team('NotMine').id)]] }, 403, /not in them/);
      await refused(member, { add: [[`team_${o.id}`, String(elsewhere.team('Foreign').id)]] }, 403, /not in them/);
      await refused(member, { add: [[`team_${o.id}`, 'x']] }, 400, /not valid team ids/);
      await refused(member, { drop: [`team_${o.id}`] }, 400, /at least one team/);
    });

    it('a member posting the admin’s install form (all teams) with their own anti-forgery value', async () => {
      await refused(member, { add: [[`all_teams_${o.id}`, 'yes']] }, 403, /only an administrator/);
      expect(await db()('app_installations').where({ org_id: o.id })).toHaveLength(0);
    });

    it('the form replayed after an uninstall, or after an install', async () => {
      const installation = await saveInstallation(db(), { clientId: client.client_id, orgId: o.id, allTeams: true, teamIds: [], scopes: ['TEAM_BOOKING_READ'], installedBy: admin.id });
      const browser = new Browser();
      const page = await consent(member, 'TEAM_BOOKING_READ', {}, browser);
      expect(text(page, '.consent-org-installed')).toContain('for all teams');
      await markInstallationRemoved(db(), installation.id);
      const res = await allow(browser, page);
      expect(res.status, res.$('.alert').text()).toBe(409);
      expect(res.html).toMatch(/installation of this app changed/);
      expect(await grantsOf(member)).toHaveLength(0);

      const fresh = new Browser();
      const before = await consent(member, 'TEAM_BOOKING_READ', {}, fresh);
      await saveInstallation(db(), { clientId: client.client_id, orgId: o.id, allTeams: false, teamIds: [o.team('Mine').id], scopes: ['TEAM_BOOKING_READ'], installedBy: admin.id });
      expect((await allow(fresh, before)).status).toBe(409);
      expect(await grantsOf(member)).toHaveLength(0);
    });

    it('concurrent install and uninstall: never a 500, and no live grant under a removed installation', async () => {
      const owner = await newUser(server);
      const c = await org('approval', ['T'], [[owner, 'owner', []]]);
      const deps = { db: db(), outbox: server.system.outbox, artifacts: server.system.artifacts, bindings: server.system.bindings, records: server.system.records };
      for (let round = 0; round < 4; round++) {
        const browser = new Browser();
        const page = await consent(owner, 'TEAM_BOOKING_READ', { prompt: 'consent' }, browser);
        const uninstall = (async () => {
          for (let i = 0; i < 50; i++) {
            const active = await db()('app_installations').where({ org_id: c.id, status: 'active' }).first();
            if (active) return uninstallApp(deps, active.id, null);
            await new Promise((r) => setTimeout(r, round));
          }
        })();
        const [res] = await Promise.all([allow(browser, page), uninstall]);
        expect([303, 409], res.html.slice(0, 300)).toContain(res.status);
        // Every grant bound in this organization is live only under an active installation.
        for (const bound of await db()('grant_bindings').where({ org_id: c.id })) {
          const live = await server.system.provider.Grant.find(bound.grant_id);
          const installation = await db()('app_installations').where({ id: bound.installation_id }).first();
          if (live) expect(installation.status).toBe('active');
        }
      }
    });
  });

  describe('granular and incremental consent', () => {
    it('optional scopes are ticked boxes the user may untick; the token says exactly what was granted', async () => {
      const user = await newUser(server);
      await db()('oauth_clients').where('id', client.client_id).update({ optional_scopes: JSON.stringify(['BOOKING_READ']) });
      try {
        const browser = new Browser();
        const page = await consent(user, 'PROFILE_READ BOOKING_READ', {}, browser);
        expect(page.$('input[name=optional_scope]').map((_, el) => page.$(el).attr('value')).get()).toEqual(['BOOKING_READ']);
        expect(page.$('input[name=optional_scope]').attr('checked')).toBeDefined();
        const unticked = await backToApp(browser, await allow(browser, page, { drop: ['optional_scope'] }));
        expect(unticked.scope).toBe('PROFILE_READ');

        const again = new Browser();
        const ticked = await backToApp(again, await allow(again, await consent(user, 'PROFILE_READ BOOKING_READ', {}, again)));
        expect(scopeSet(ticked.scope)).toEqual(new Set(['PROFILE_READ', 'BOOKING_READ']));

        // Unticking everything is not a consent.
        const none = new Browser();
        const onlyOptional = await consent(user, 'BOOKING_READ', { prompt: 'consent' }, none);
        expect((await allow(none, onlyOptional, { drop: ['optional_scope'] })).status).toBe(400);
      } finally {
        await db()('oauth_clients').where('id', client.client_id).update({ optional_scopes: '[]' });
      }
    });

    it('include_granted_scopes=true shows only the new scopes and adds them to the grant; without it the token has only what was asked', async () => {
      const user = await newUser(server);
      const browser = new Browser();
      await backToApp(browser, await allow(browser, await consent(user, 'PROFILE_READ', {}, browser)));
      const page = await consent(user, 'BOOKING_READ', { include_granted_scopes: 'true' }, browser);
      expect(page.$('.consent-incremental')).toHaveLength(1);
      expect(page.$('details.consent-codes code').map((_, el) => page.$(el).text()).get()).toEqual(['BOOKING_READ']);
      const merged = await backToApp(browser, await allow(browser, page));
      expect(scopeSet(merged.scope)).toEqual(new Set(['PROFILE_READ', 'BOOKING_READ']));
      expect(await grantsOf(user)).toHaveLength(1);

      // Nothing new asked: no page, and the token still says everything granted.
      const straight = await browser.follow(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', include_granted_scopes: 'true' }), server.url);
      const code = new URL(straight.location!).searchParams.get('code');
      expect(code, straight.html.slice(0, 300)).toBeTruthy();
      const again = await tokenRequest(server.url, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, ...client });
      expect(scopeSet(String(again.body.scope))).toEqual(new Set(['PROFILE_READ', 'BOOKING_READ']));

      const plain = await consent(user, 'BOOKING_READ', { prompt: 'consent' }, browser);
      expect(plain.$('.consent-incremental')).toHaveLength(0);
      expect((await backToApp(browser, await allow(browser, plain))).scope).toBe('BOOKING_READ');
    });

    it('include_granted_scopes within an organization joins the grant of the same organization and teams', async () => {
      const user = await newUser(server);
      const o = await org('allow', ['Only'], [[user, 'member', ['Only']]]);
      await org('allow', ['Other'], [[user, 'member', ['Other']]]);
      const browser = new Browser();
      const first = await consent(user, 'TEAM_BOOKING_READ', {}, browser);
      await backToApp(browser, await allow(browser, first, { drop: ['org'], add: [['org', String(o.id)]] }));
      const page = await consent(user, 'TEAM_EVENT_TYPE_READ', { include_granted_scopes: 'true' }, browser);
      expect(page.$('input[name=org]').map((_, el) => Number(page.$(el).attr('value'))).get()).toEqual([o.id]);
      expect(page.$('details.consent-codes code').map((_, el) => page.$(el).text()).get()).toEqual(['TEAM_EVENT_TYPE_READ']);
      const token = await backToApp(browser, await allow(browser, page));
      expect(scopeSet(token.scope)).toEqual(new Set(['TEAM_BOOKING_READ', 'TEAM_EVENT_TYPE_READ']));
      expect(await grantsOf(user)).toHaveLength(1);
    });

    it('refuses an include_granted_scopes that is not true or false', async () => {
      const res = await new Browser().get(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', include_granted_scopes: 'yes' }));
      const back = new URL(res.location!);
      expect(back.searchParams.get('error')).toBe('invalid_request');
    });
  });
});
