// Installations and the effects of an organization's changes (issue 35 points 1 and 5), on both
// token stores, with a second instance of the app on the same stores: uninstalling, narrowing
// teams, members leaving and the block policy end exactly the affected bound grants — refused by
// the gateway check and /v2/me on the other instance (by the revocation message or the change feed, not
// the caches' expiry), refresh tokens invalid_grant —
// with one installation.removed/changed per installation and grant.revoked per user, signed and
// verified with the `standardwebhooks` package; the operator scripts; the organization's apps page.
//
// The grants here come from the ordinary authorization flow and are bound by writing their
// grant_bindings row (what the consent page does, H3's part): revocation reads only that row.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERING, startInstance, startTestServer, type AppInstance, type Storage, type TestServer } from './support/server.ts';
import { approvedClient, newUser, operator, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';
import { getMe, reachConsent, tokenRequest, type TestUser } from './support/oauth.ts';
import { Browser, type Page } from './support/browser.ts';
import { admin as runAdmin } from './support/processes.ts';
import { expectRefusal } from './support/admin-cli.ts';
import { clientsCreate, clientsSetWebhook } from '../src/admin/commands.ts';
import { editClient } from '../src/clients/changes.ts';
import { uncachedRecords } from '../src/storage/record-cache.ts';
import { sendTestEvent } from '../src/clients/webhook-settings.ts';
import * as orgs from '../src/orgs/store.ts';
import { changeInstallation, installApp, lockInstallationForBinding, grantStillCovered, memberLeftOrg, memberLeftTeam, setAppPolicy, uninstallApp, type InstallationDeps } from '../src/orgs/installations.ts';
import { orgAppsPaths, ORGANIZATIONS_PATH } from '../src/http/paths.ts';
import { createBoundGrant } from '../src/orgs/bindings.ts';
import { receiver, until } from './support/webhook-receiver.ts';

const ENV = { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', WEBHOOK_RETRY_BASE_SECONDS: '1', WEBHOOK_ALLOW_LOOPBACK: 'true', REFRESH_GRACE_SECONDS: '0' };
const SCOPE = 'PROFILE_READ TEAM_BOOKING_READ';

type User = TestUser & { id: number };



const check = async (base: string, token: string) =>
  (await fetch(`${base}/v2/auth/check`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/me' } })).status;

describe('organization installations (redis)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let other: AppInstance;
  let deps: InstallationDeps;

  beforeAll(async () => {
    server = await startTestServer(storage, ENV, DELIVERING);
    // A second instance of the app on the same database (and Redis prefix).
    other = await startInstance(
      { ...ENV, DATABASE_URL: server.pg.url, ...(server.redis ? { REDIS_URL: server.redis.url } : {}) },
      { db: server.pg.db, ...(server.redis ? { redis: server.redis.redis, redisPrefix: server.redis.prefix } : {}), ...DELIVERING },
    );
    const { db, outbox, artifacts, bindings, records } = server.system;
    deps = { db, outbox, artifacts, bindings, records };
  });
  afterAll(async () => {
    await other?.close();
    await server?.close();
  });

  const cliEnv = () => ({ DATABASE_URL: server.pg.url, ...(server.redis ? { REDIS_URL: server.redis.url } : {}) });
  const cli = (...args: string[]) => runAdmin(['--json', ...args], cliEnv());

  /** An organization with teams A and B, its owner, a member of A and a member of B. */
  async function orgWithTeams() {
    const db = server.system.db;
    const org = await orgs.createOrg(db, { name: 'Acme' });
    const [a, b] = [await orgs.createTeam(db, { name: 'Team A', orgId: org.id }), await orgs.createTeam(db, { name: 'Team B', orgId: org.id })];
    const [owner, inA, inB] = [await newUser(server, 'Owner'), await newUser(server, 'Member A'), await newUser(server, 'Member B')];
    await orgs.addOrgMember(db, org.id, owner.id, 'owner');
    for (const [user, team] of [[inA, a], [inB, b]] as const) {
      await orgs.addOrgMember(db, org.id, user.id, 'member');
      await orgs.addTeamMember(db, team.id, user.id, 'member');
    }
    return { org, a: a!, b: b!, owner, inA, inB };
  }

  /** Tokens through the flow, their grant bound to the organization (and teams, and installation) as the consent page binds it. */
  async function boundTokens(client: TestClient, user: User, binding: { orgId: number; teamIds: number[]; installationId: number | null }, scope = SCOPE) {
    const tokens = await tokensFor(server, client, user, scope);
    const db = server.system.db;
    const { grant_id: grantId } = await db('user_grants').where({ account_id: String(user.id), client_id: client.client_id }).orderBy('granted_at', 'desc').first('grant_id');
    // The consent page bound the grant already (src/web/interactions.ts); the binding under test replaces it.
    await db('grant_bindings')
      .insert({ grant_id: grantId, account_id: String(user.id), client_id: client.client_id, org_id: binding.orgId, team_ids: JSON.stringify(binding.teamIds), installation_id: binding.installationId })
      .onConflict('grant_id')
      .merge();
    return { ...tokens, grantId: grantId as string };
  }

  const refresh = (client: TestClient, refreshToken: string) => tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: refreshToken, ...client });

  /**
   * Refused everywhere: the check and /v2/me on the other instance, and the refresh token. The
   * other instance learns of it only by the revocation message or the change feed: its caches
   * would keep serving the token for its lifetime (30 min), the records for 10 minutes or more,
   * far past this wait.
   */
  async function expectEnded(client: TestClient, tokens: { access_token: string; refresh_token: string }) {
    await until('the other instance to refuse the token', () => check(other.url, tokens.access_token), (s) => s === 401);
    expect((await getMe(other.url, tokens.access_token)).status).toBe(401);
    expect((await refresh(client, tokens.refresh_token)).body.error).toBe('invalid_grant');
  }

  async function expectLive(tokens: { access_token: string }) {
    expect(await check(other.url, tokens.access_token)).toBe(200);
    expect((await getMe(other.url, tokens.access_token)).status).toBe(200);
  }

  it('installs and removes by script, refusing unknown ids, foreign teams, foreign scopes and unapproved clients with nothing changed', async () => {
    const { org, a, b } = await orgWithTeams();
    const client = await approvedClient(server, SCOPE.split(' '));
    const elsewhere = await orgs.createTeam(server.system.db, { name: 'Elsewhere', orgId: (await orgs.createOrg(server.system.db, { name: 'Other' })).id });
    const pending = await clientsCreate(operator(server), { name: 'Pending', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] });

    const refusals: [string[], RegExp][] = [
      [['installations', 'create', '--org', '999999', '--client', client.client_id, '--all-teams'], /no organization/],
      [['installations', 'create', '--org', String(org.id), '--client', 'nope', '--all-teams'], /no client/],
      [['installations', 'create', '--org', String(org.id), '--client', client.client_id, '--teams', `${a.id},${elsewhere.id}`], /not teams of organization/],
      [['installations', 'create', '--org', String(org.id), '--client', client.client_id, '--all-teams', '--scope', 'ORG_BOOKING_WRITE'], /not scopes of client/],
      [['installations', 'create', '--org', String(org.id), '--client', pending.client_id, '--all-teams'], /not approved/],
      [['installations', 'create', '--org', String(org.id), '--client', client.client_id], /exactly one of --teams/],
      [['installations', 'create', '--org', String(org.id), '--client', client.client_id, '--teams', 'x'], /not a team id/],
      [['installations', 'remove', '999999'], /no installation/],
      [['installations', 'remove', 'abc'], /not an installation id/],
    ];
    for (const [args, reason] of refusals) expectRefusal(await cli(...args), reason);
    expect(await orgs.listInstallations(server.system.db, { orgId: org.id })).toEqual([]);

    const created = await cli('installations', 'create', '--org', String(org.id), '--client', client.client_id, '--teams', `${a.id},${b.id}`, '--scope', 'TEAM_BOOKING_READ');
    expect(created.code, created.stderr).toBe(0);
    const installation = JSON.parse(created.stdout);
    expect(installation).toMatchObject({ client_id: client.client_id, org_id: org.id, team_ids: [a.id, b.id], scopes: ['TEAM_BOOKING_READ'], status: 'active', installed_by: null });

    const listed = JSON.parse((await cli('installations', 'list', '--org', String(org.id))).stdout).installations;
    expect(listed).toEqual([installation]);

    const removed = await cli('installations', 'remove', String(installation.id));
    expect(removed.code, removed.stderr).toBe(0);
    expect(JSON.parse(removed.stdout)).toMatchObject({ id: installation.id, status: 'removed' });
    expect(JSON.parse((await cli('installations', 'list', '--client', client.client_id)).stdout).installations[0].status).toBe('removed');
  });

  it("uninstalling ends every member's tokens on the other instance, with one installation.removed and one grant.revoked per user, signed", async () => {
    const hooks = await receiver();
    try {
      const { org, a, b, inA, inB } = await orgWithTeams();
      const client = await approvedClient(server, SCOPE.split(' '), 'Hooked App');
      const secret = (await clientsSetWebhook({ ...operator(server), cipher: server.system.cipher, allowLoopback: true }, client.client_id, hooks.url)).signing_secret!;
      const { installation } = await installApp(deps, { clientId: client.client_id, orgId: org.id, allTeams: false, teamIds: [a.id, b.id], by: null });
      const [ta, tb] = [await boundTokens(client, inA, { orgId: org.id, teamIds: [a.id], installationId: installation.id }), await boundTokens(client, inB, { orgId: org.id, teamIds: [b.id], installationId: installation.id })];
      // An unbound grant of the same app and user: not the organization's to end.
      const personal = await tokensFor(server, client, inA, 'PROFILE_READ');
      for (const t of [ta, tb, personal]) await expectLive(t);

      const result = await uninstallApp(deps, installation.id, null);
      expect(result).toMatchObject({ changed: true, revoked: 2, installation: { status: 'removed' } });
      for (const t of [ta, tb]) await expectEnded(client, t);
      await expectLive(personal);

      // Uninstalling again changes nothing and sends nothing more. One client's events arrive in
      // order: once a test event sent after it arrives, everything before it has.
      expect((await uninstallApp(deps, installation.id, null)).changed).toBe(false);
      await sendTestEvent(server.system, client.client_id, { actor: 'test' });
      const all = await until('the webhooks', () => hooks.received.map((r) => JSON.parse(r.body)), (e) => e.some((x) => x.type === 'webhook.test'));
      for (const delivery of hooks.received) expect(() => new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>)).not.toThrow();
      const events = all.filter((e) => e.type !== 'webhook.test');
      expect(events).toHaveLength(3);
      expect(events.filter((e) => e.type === 'installation.removed').map((e) => e.data)).toEqual([
        { client_id: client.client_id, installation_id: String(installation.id), org_id: String(org.id), all_teams: false, team_ids: [String(a.id), String(b.id)], scopes: SCOPE.split(' ') },
      ]);
      expect(events.filter((e) => e.type === 'grant.revoked').map((e) => e.data).sort((x, y) => x.user_id.localeCompare(y.user_id))).toEqual(
        [inA, inB].map((u) => ({ client_id: client.client_id, user_id: String(u.id), reason: 'installation_removed', org_id: String(org.id) })).sort((x, y) => x.user_id.localeCompare(y.user_id)),
      );
    } finally {
      await hooks.close();
    }
  });

  it('narrowing the teams ends only the grants bound to the removed team (installation.changed once)', async () => {
    const hooks = await receiver();
    try {
      const { org, a, b, inA, inB } = await orgWithTeams();
      const client = await approvedClient(server, SCOPE.split(' '), 'Narrowed App');
      await clientsSetWebhook({ ...operator(server), cipher: server.system.cipher, allowLoopback: true }, client.client_id, hooks.url);
      const { installation } = await installApp(deps, { clientId: client.client_id, orgId: org.id, allTeams: true, teamIds: [], by: null });
      const [ta, tb] = [await boundTokens(client, inA, { orgId: org.id, teamIds: [a.id], installationId: installation.id }), await boundTokens(client, inB, { orgId: org.id, teamIds: [b.id], installationId: installation.id })];

      expect((await changeInstallation(deps, installation.id, { allTeams: false, teamIds: [a.id] }, null)).revoked).toBe(1);
      await expectEnded(client, tb);
      await expectLive(ta);
      await sendTestEvent(server.system, client.client_id, { actor: 'test' });
      const all = await until('the webhooks', () => hooks.received.map((r) => JSON.parse(r.body)), (e) => e.some((x) => x.type === 'webhook.test'));
      const events = all.filter((e) => e.type !== 'webhook.test');
      expect(events.map((e) => e.type)).toEqual(['installation.changed', 'grant.revoked']);
      expect(events.find((e) => e.type === 'installation.changed')!.data).toMatchObject({ all_teams: false, team_ids: [String(a.id)] });
      expect(events.find((e) => e.type === 'grant.revoked')!.data).toMatchObject({ user_id: String(inB.id), reason: 'installation_changed' });
    } finally {
      await hooks.close();
    }
  });

  it("a member leaving the team or the organization loses the grants bound there; an org admin keeps a team they leave", async () => {
    const { org, a, b, owner, inA, inB } = await orgWithTeams();
    const client = await approvedClient(server, SCOPE.split(' '), 'Membership App');
    const { installation } = await installApp(deps, { clientId: client.client_id, orgId: org.id, allTeams: true, teamIds: [], by: null });
    const bind = (user: User, teamIds: number[]) => boundTokens(client, user, { orgId: org.id, teamIds, installationId: installation.id });
    const [ta, tb] = [await bind(inA, [a.id]), await bind(inB, [b.id])];
    await orgs.addTeamMember(server.system.db, b.id, owner.id, 'member');
    const to = await bind(owner, [b.id]);

    expect((await memberLeftTeam(deps, a.id, inA.id)).revoked).toBe(1);
    await expectEnded(client, ta);
    await expectLive(tb);
    // The owner still reaches team B as the organization's owner.
    expect((await memberLeftTeam(deps, b.id, owner.id)).revoked).toBe(0);
    await expectLive(to);

    expect((await memberLeftOrg(deps, org.id, inB.id)).revoked).toBe(1);
    await expectEnded(client, tb);
    await expectLive(to);
    await expect(memberLeftOrg(deps, org.id, inB.id)).rejects.toThrow(/not a member/);
  });

  it('removes members by script with the same effects', async () => {
    const { org, a, inA, inB } = await orgWithTeams();
    const client = await approvedClient(server, SCOPE.split(' '), 'Script Members App');
    const ta = await boundTokens(client, inA, { orgId: org.id, teamIds: [a.id], installationId: null });
    const tb = await boundTokens(client, inB, { orgId: org.id, teamIds: [], installationId: null });
    const byTeam = await cli('teams', 'remove-member', String(a.id), inA.email);
    expect(byTeam.code, byTeam.stderr).toBe(0);
    expect(JSON.parse(byTeam.stdout)).toMatchObject({ team_id: a.id, user_id: inA.id, removed: true, revoked_grants: 1 });
    await expectEnded(client, ta);
    const byOrg = await cli('orgs', 'remove-member', String(org.id), String(inB.id));
    expect(byOrg.code, byOrg.stderr).toBe(0);
    await expectEnded(client, tb);
    expectRefusal(await cli('orgs', 'remove-member', String(org.id), String(inB.id)), /not a member/);
    expectRefusal(await cli('teams', 'remove-member', '999999', String(inB.id)), /no team/);
  });

  it('an admin demoted to member (orgs add-member --role member) loses the grants bound to teams they are not in, keeps the others', async () => {
    const { org, a, b } = await orgWithTeams();
    const admin = await newUser(server, 'Admin');
    await orgs.addOrgMember(server.system.db, org.id, admin.id, 'admin');
    await orgs.addTeamMember(server.system.db, a.id, admin.id, 'member');
    const client = await approvedClient(server, SCOPE.split(' '), 'Demotion App');
    const inTeam = await boundTokens(client, admin, { orgId: org.id, teamIds: [a.id], installationId: null });
    const outside = await boundTokens(client, admin, { orgId: org.id, teamIds: [b.id], installationId: null });
    const res = await cli('orgs', 'add-member', String(org.id), admin.email, '--role', 'member');
    expect(res.code, res.stderr).toBe(0);
    await expectEnded(client, outside);
    await expectLive(inTeam);
  });

  it('the block policy ends every installation and bound grant of the organization; approval ends those of apps not installed', async () => {
    const { org, a, b, owner, inA, inB } = await orgWithTeams();
    const [installed, loose] = [await approvedClient(server, SCOPE.split(' '), 'Installed App'), await approvedClient(server, SCOPE.split(' '), 'Loose App')];
    const { installation } = await installApp(deps, { clientId: installed.client_id, orgId: org.id, allTeams: true, teamIds: [], by: null });
    const ti = await boundTokens(installed, inA, { orgId: org.id, teamIds: [a.id], installationId: installation.id });
    const tl = await boundTokens(loose, inB, { orgId: org.id, teamIds: [b.id], installationId: null });
    // An owner's own grant of an app not installed (asked without team scopes, so that the consent
    // page does not install it), bound as an admin's may be under approval too.
    const to = await boundTokens(loose, owner, { orgId: org.id, teamIds: [b.id], installationId: null }, 'PROFILE_READ');

    expect((await setAppPolicy(deps, org.id, 'approval', null)).revoked).toBe(1);
    await expectEnded(loose, tl);
    await expectLive(ti);
    await expectLive(to);

    const set = await cli('orgs', 'set-app-policy', String(org.id), 'block');
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ id: org.id, app_policy: 'block' });
    await expectEnded(installed, ti);
    await expectEnded(loose, to);
    expect((await orgs.findInstallation(server.system.db, installation.id))!.status).toBe('removed');
    await expect(installApp(deps, { clientId: installed.client_id, orgId: org.id, allTeams: true, teamIds: [], by: null })).rejects.toThrow(/blocks apps/);
    expectRefusal(await cli('orgs', 'set-app-policy', String(org.id), 'sometimes'), /must be one of/);
  });

  it("a token granted before the user joined (bound to nothing) keeps the scope-only judgement under allow, and gets 403 on the organization's and its teams' paths under block or approval, at once on every instance (issue 45 item 5)", async () => {
    const scope = 'PROFILE_READ TEAM_BOOKING_READ ORG_BOOKING_WRITE';
    const app = await approvedClient(server, scope.split(' '), 'Early App');
    const user = await newUser(server, 'Early User');
    // Granted while the user is in no organization: a grant bound to nothing.
    const early = await tokensFor(server, app, user, scope);
    const { org, a } = await orgWithTeams();
    await orgs.addOrgMember(server.system.db, org.id, user.id, 'member');
    await orgs.addTeamMember(server.system.db, a.id, user.id, 'member');
    const elsewhere = await orgs.createOrg(server.system.db, { name: 'Open Org' });

    const gate = async (base: string, method: string, uri: string) => {
      const res = await fetch(`${base}/v2/auth/check`, { headers: { authorization: `Bearer ${early.access_token}`, 'x-forwarded-method': method, 'x-forwarded-uri': uri } });
      return { status: res.status, body: (await res.json()) as Record<string, any>, challenge: res.headers.get('www-authenticate') };
    };
    // The organization's paths and its teams', in the spellings a backend may read as the same ids.
    const closed: [string, string][] = [
      ['DELETE', `/v2/organizations/${org.id}/bookings/77`],
      ['GET', `/v2/organizations/${org.id}/teams/${a.id}/bookings`],
      ['GET', `/v2/teams/${a.id}/bookings`],
      ['GET', `/v2/teams/${a.id}/bookings?org=${elsewhere.id}`],
      ['DELETE', `/v2/organizations/0${org.id}/bookings/77`],
      ['DELETE', `/v2/organizations/${org.id}abc/bookings/77`],
      ['GET', `/v2/teams/%3${String(a.id).split('').join('%3')}/bookings`],
      ['GET', `/v2/organizations/${elsewhere.id}/teams/${a.id}/bookings`],
    ];
    const open: [string, string][] = [
      ['GET', '/v2/me'],
      ['DELETE', `/v2/organizations/${elsewhere.id}/bookings/77`],
    ];
    const statuses = (base: string, calls: [string, string][]) => Promise.all(calls.map(async ([m, u]) => (await gate(base, m, u)).status));
    const all = (status: number, calls: [string, string][]) => calls.map(() => status);

    // allow (the default): the scopes alone decide, as the specification describes.
    for (const base of [server.url, other.url]) expect(await statuses(base, [...closed, ...open])).toEqual(all(200, [...closed, ...open]));

    // block, by the operator script (another process): refused on both instances (by the change feed).
    const set = await cli('orgs', 'set-app-policy', String(org.id), 'block');
    expect(set.code, set.stderr).toBe(0);
    for (const base of [server.url, other.url]) {
      await until(`${base} to refuse the unbound token`, () => statuses(base, closed), (s) => s.every((x) => x === 403));
    }
    const refused = await gate(other.url, 'DELETE', `/v2/organizations/${org.id}/bookings/77`);
    expect(refused.body).toEqual({ status: 'error', error: { code: 'access_denied', message: 'this organization admits apps only through its installations: authorize the app in the organization' } });
    expect(refused.challenge).toBe('Bearer realm="api", error="access_denied", error_description="this organization admits apps only through its installations: authorize the app in the organization"');
    for (const base of [server.url, other.url]) expect(await statuses(base, open)).toEqual(all(200, open));

    // allow again, then approval by the page's code path: this instance refuses at once, the other by the change feed.
    expect((await cli('orgs', 'set-app-policy', String(org.id), 'allow')).code).toBe(0);
    await until('the other instance to allow again', () => statuses(other.url, closed), (s) => s.every((x) => x === 200));
    await until('this instance to allow again', () => statuses(server.url, closed), (s) => s.every((x) => x === 200));
    await setAppPolicy(deps, org.id, 'approval', null);
    expect(await statuses(server.url, closed)).toEqual(all(403, closed));
    await until('the other instance to refuse under approval', () => statuses(other.url, closed), (s) => s.every((x) => x === 403));

    // A team created later in the closed organization is closed too (teams create).
    const made = await cli('teams', 'create', '--name', 'Late Team', '--org', String(org.id));
    expect(made.code, made.stderr).toBe(0);
    const late = JSON.parse(made.stdout).id as number;
    for (const base of [server.url, other.url]) {
      await until(`${base} to close the new team`, async () => (await gate(base, 'GET', `/v2/teams/${late}/bookings`)).status, (s) => s === 403);
    }
  });

  it('while the change feed is down, the check asks the database: a policy set behind its back is seen at once (issue 45 item 5)', async () => {
    const scope = 'PROFILE_READ ORG_BOOKING_WRITE';
    const app = await approvedClient(server, scope.split(' '), 'Feedless App');
    const early = await tokensFor(server, app, await newUser(server, 'Feedless User'), scope);
    const org = await orgs.createOrg(server.system.db, { name: 'Feedless Org' });
    const uri = `/v2/organizations/${org.id}/bookings/77`;
    const status = async (base: string) =>
      (await fetch(`${base}/v2/auth/check`, { headers: { authorization: `Bearer ${early.access_token}`, 'x-forwarded-method': 'DELETE', 'x-forwarded-uri': uri } })).status;
    for (const base of [server.url, other.url]) expect(await status(base)).toBe(200);
    // Cut every instance's LISTEN connection; then change the policy as an operator script would
    // (the row, and a notification the instances do not hear while their feed is down).
    await server.system.db.raw(`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query like 'LISTEN %'`);
    await until('both feeds to be down', () => [server, other].map((i) => i.system.records.live), (l) => l.every((x) => !x), 2000);
    for (const base of [server.url, other.url]) expect(await status(base)).toBe(200);
    const setBehindTheirBack = async (policy: string) => {
      await server.system.db('organizations').where('id', org.id).update({ app_policy: policy });
      await uncachedRecords().announce(server.system.db, 'org', org.id);
    };
    await setBehindTheirBack('block');
    for (const base of [server.url, other.url]) expect(await status(base)).toBe(403);
    await setBehindTheirBack('allow');
    for (const base of [server.url, other.url]) expect(await status(base)).toBe(200);
    // Back after the reconnect: from memory again, and a change made the announced way reaches both.
    await until('both feeds to be back', () => [server, other].map((i) => i.system.records.live), (l) => l.every(Boolean), 10_000);
    await setAppPolicy(deps, org.id, 'approval', null);
    for (const base of [server.url, other.url]) await until(`${base} to refuse under approval`, () => status(base), (s) => s === 403);
  });

  it('concurrent install, authorization and uninstall: no grant outlives a removed installation', async () => {
    const { org, a, inA } = await orgWithTeams();
    const client = await approvedClient(server, SCOPE.split(' '), 'Racing App');
    const { provider, db } = server.system;
    for (let round = 0; round < 4; round++) {
      const { installation } = await installApp(deps, { clientId: client.client_id, orgId: org.id, allTeams: true, teamIds: [], by: null });
      // The consent page's side, in the order the design notes give: bind under the installation's
      // lock, save the grant after that commits, then check again.
      const grant = createBoundGrant(provider, { accountId: String(inA.id), clientId: client.client_id });
      grant.addOIDCScope(SCOPE);
      const authorize = async () => {
        await new Promise((r) => setTimeout(r, round % 4));
        try {
          await db.transaction(async (trx) => {
            await lockInstallationForBinding(trx, installation.id);
            await server.system.bindings.bind(trx, grant.jti!, { accountId: String(inA.id), clientId: client.client_id, orgId: org.id, teamIds: [a.id], installationId: installation.id });
          });
        } catch {
          return false; // refused before any grant was saved
        }
        await grant.save();
        return grantStillCovered(deps, installation.id, { grantId: grant.jti!, teamIds: [a.id], scopes: SCOPE.split(' ') });
      };
      const uninstall = async () => {
        await new Promise((r) => setTimeout(r, (round + 2) % 4));
        return uninstallApp(deps, installation.id, null);
      };
      const reinstall = installApp(deps, { clientId: client.client_id, orgId: org.id, allTeams: false, teamIds: [a.id], by: null }).catch((err: Error) => err);
      const [, removed] = await Promise.all([authorize(), uninstall(), reinstall]);
      expect(removed.changed).toBe(true);
      // However they interleaved, the grant bound to the removed installation is gone.
      expect(await provider.Grant.find(grant.jti!)).toBeUndefined();
      // Whatever is active now is a later installation, never the removed one.
      const active = await orgs.activeInstallation(db, client.client_id, org.id);
      if (active) {
        expect(active.id).not.toBe(installation.id);
        await uninstallApp(deps, active.id, null);
      }
    }
  });

  it('an authorization racing an uninstall, in each order: refused, or its grant revoked by the uninstall or by its own second check', async () => {
    const { org, a, inA } = await orgWithTeams();
    const client = await approvedClient(server, SCOPE.split(' '), 'Ordered App');
    const { provider, db, bindings } = server.system;
    const install = async () => (await installApp(deps, { clientId: client.client_id, orgId: org.id, allTeams: true, teamIds: [], by: null })).installation.id;
    const newGrant = () => {
      const grant = createBoundGrant(provider, { accountId: String(inA.id), clientId: client.client_id });
      grant.addOIDCScope(SCOPE);
      return grant;
    };
    const bindIn = (trx: Parameters<typeof lockInstallationForBinding>[0], grantId: string, installationId: number) =>
      bindings.bind(trx, grantId, { accountId: String(inA.id), clientId: client.client_id, orgId: org.id, teamIds: [a.id], installationId });
    const covered = (installationId: number, grantId: string) => grantStillCovered(deps, installationId, { grantId, teamIds: [a.id], scopes: SCOPE.split(' ') });

    // 1. Uninstalled first: the binding is refused, no grant is saved.
    let id = await install();
    await uninstallApp(deps, id, null);
    await expect(db.transaction((trx) => lockInstallationForBinding(trx, id))).rejects.toThrow(/uninstalled or changed/);

    // 2. Bound first, the uninstall's sweep before the grant is saved: the second check revokes it.
    id = await install();
    let grant = newGrant();
    await db.transaction(async (trx) => (await lockInstallationForBinding(trx, id), await bindIn(trx, grant.jti!, id)));
    await uninstallApp(deps, id, null);
    await grant.save();
    expect(await covered(id, grant.jti!)).toBe(false);
    expect(await provider.Grant.find(grant.jti!)).toBeUndefined();

    // 3. The uninstall waits for the binding's lock; the grant saved at once after: one of the two ends it.
    id = await install();
    grant = newGrant();
    let uninstalling: Promise<unknown> | undefined;
    await db.transaction(async (trx) => {
      await lockInstallationForBinding(trx, id);
      uninstalling = uninstallApp(deps, id, null);
      await bindIn(trx, grant.jti!, id);
    });
    await grant.save();
    await covered(id, grant.jti!);
    await uninstalling;
    expect(await provider.Grant.find(grant.jti!)).toBeUndefined();

    // 3b. The consent page's order: the grant saved first, then bound under the lock the uninstall waits for: the uninstall ends it.
    id = await install();
    grant = newGrant();
    await grant.save();
    await db.transaction(async (trx) => {
      await lockInstallationForBinding(trx, id);
      uninstalling = uninstallApp(deps, id, null);
      await bindIn(trx, grant.jti!, id);
    });
    expect(await uninstalling).toMatchObject({ changed: true, revoked: 1 });
    expect(await provider.Grant.find(grant.jti!)).toBeUndefined();

    // 4. Bound, saved and checked before the uninstall: the uninstall revokes it.
    id = await install();
    grant = newGrant();
    await db.transaction(async (trx) => (await lockInstallationForBinding(trx, id), await bindIn(trx, grant.jti!, id)));
    await grant.save();
    expect(await covered(id, grant.jti!)).toBe(true);
    expect(await provider.Grant.find(grant.jti!)).toBeDefined();
    await uninstallApp(deps, id, null);
    expect(await provider.Grant.find(grant.jti!)).toBeUndefined();
  });

  describe('the apps page', () => {
    async function signIn(user: TestUser) {
      const browser = new Browser();
      const login = await browser.get(`${server.url}/login`);
      expect((await browser.submit(login, 'form[action="/login"]', { email: user.email, password: user.password })).status).toBe(303);
      return browser;
    }
    /** The scopes a request's approve form says approving installs (and carries back); [] without a form. */
    const installs = (page: Page, requestId: number) => page.$(`[data-request="${requestId}"] form input[name=scope]`).map((_, el) => page.$(el).attr('value')!).get();
    const installsField = (page: Page, requestId: number): [string, string][] => installs(page, requestId).map((s) => ['scope', s]);
    async function post(browser: Browser, path: string, fields: [string, string][]) {
      const csrf = (await browser.get(`${server.url}${ORGANIZATIONS_PATH}`)).$('input[name=csrf]').val() as string;
      return browser.request(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams([['csrf', csrf], ...fields]).toString() });
    }

    it('is 404 for members and strangers alike, whether or not the organization exists', async () => {
      const { org, inA } = await orgWithTeams();
      const browser = await signIn(inA);
      const paths = orgAppsPaths(org.id);
      const missing = await browser.get(`${server.url}${orgAppsPaths(999999).page}`);
      const existing = await browser.get(`${server.url}${paths.page}`);
      expect([existing.status, missing.status]).toEqual([404, 404]);
      expect(existing.$('h1').text()).toBe(missing.$('h1').text());
      // A member posting the admin's forms with their own anti-forgery value.
      expect((await post(browser, paths.policy, [['policy', 'block']])).status).toBe(404);
      expect((await orgs.findOrg(server.system.db, org.id))!.appPolicy).toBe('allow');
      expect((await browser.get(`${server.url}${ORGANIZATIONS_PATH}`)).$('.item').length).toBe(0);
    });

    it('sends strangers to sign in, and answers odd spellings and ids with 404, never a 500', async () => {
      const { org, owner } = await orgWithTeams();
      const paths = orgAppsPaths(org.id);
      const anonymous = await fetch(`${server.url}${paths.page}`, { redirect: 'manual' });
      expect(anonymous.status).toBe(303);
      expect(anonymous.headers.get('location')).toMatch(/^\/login\?next=/);
      expect((await fetch(`${server.url}${paths.policy}`, { method: 'POST', redirect: 'manual' })).status).toBe(401);
      const browser = await signIn(owner);
      for (const odd of [`${paths.page}/`, paths.page.toUpperCase(), orgAppsPaths('0' + org.id).page, orgAppsPaths('99999999999').page, orgAppsPaths('1e3').page]) {
        expect((await browser.get(`${server.url}${odd}`)).status, odd).toBe(404);
      }
      for (const odd of [paths.teams('abc'), paths.uninstall('99999999999'), paths.approve('-1'), paths.dismiss('x')]) {
        expect((await post(browser, odd, [['all_teams', 'yes']])).status, odd).toBe(404);
      }
    });

    /** The gateway's answer for a call with this token. */
    const gateway = async (base: string, token: string, method: string, uri: string) =>
      (await fetch(`${base}/v2/auth/check`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-method': method, 'x-forwarded-uri': uri } })).status;
    const narrow = (clientId: string, scopes: string[]) =>
      editClient({ db: server.system.db, outbox: server.system.outbox, records: server.system.records }, clientId, { scopes, redirectUris: [REDIRECT] }, { actor: 'user:developer' });

    it("approving after the developer dropped every requested scope installs nothing and says so; no fallback to the app's other scopes (issue 45 item 3)", async () => {
      const db = server.system.db;
      const { org, a, owner, inA } = await orgWithTeams();
      await setAppPolicy(deps, org.id, 'approval', null);
      const app = await approvedClient(server, ['TEAM_BOOKING_READ', 'ORG_BOOKING_WRITE'], 'Shrinking App');
      const request = await orgs.addInstallationRequest(db, { clientId: app.client_id, orgId: org.id, userId: inA.id, scopes: ['TEAM_BOOKING_READ'] });
      const browser = await signIn(owner);
      const paths = orgAppsPaths(org.id);
      const shown = await browser.get(`${server.url}${paths.page}`);
      expect(installs(shown, request.id)).toEqual(['TEAM_BOOKING_READ']);
      expect(shown.$(`[data-request="${request.id}"] .installs code`).map((_, el) => shown.$(el).text()).get()).toEqual(['TEAM_BOOKING_READ']);

      // The developer narrows the app (applied at once, no review); the admin approves the page as shown.
      await narrow(app.client_id, ['ORG_BOOKING_WRITE']);
      const refused = await post(browser, paths.approve(request.id), [...installsField(shown, request.id), ['team_ids', String(a.id)]]);
      expect(refused.status, refused.html).toBe(409);
      expect(refused.$('[role=status]').text()).toMatch(/Shrinking App no longer offers any of the permissions requested \(TEAM_BOOKING_READ\): nothing was installed/);
      expect(await orgs.activeInstallation(db, app.client_id, org.id)).toBeUndefined();
      expect((await orgs.pendingRequests(db, org.id)).map((r) => r.id)).toEqual([request.id]);
      // The page shown again offers no approval, and says why.
      expect(refused.$(`[data-request="${request.id}"] form[action="${paths.approve(request.id)}"]`)).toHaveLength(0);
      expect(refused.$(`[data-request="${request.id}"] .not-approvable`).text()).toMatch(/no longer offers any of the requested permissions/);
      expect(refused.$(`[data-request="${request.id}"] .gone`).text()).toContain('TEAM_BOOKING_READ');
      // Hand-made forms naming the app's remaining scope, or none, change nothing either.
      for (const scopes of [['ORG_BOOKING_WRITE'], []]) {
        const res = await post(browser, paths.approve(request.id), [...scopes.map((s): [string, string] => ['scope', s]), ['all_teams', 'yes']]);
        expect(res.status, scopes.join()).toBe(409);
      }
      expect(await orgs.activeInstallation(db, app.client_id, org.id)).toBeUndefined();
      expect((await orgs.pendingRequests(db, org.id)).map((r) => r.id)).toEqual([request.id]);
      // So the member is offered only a new request, never a token for the organization's bookings.
      const memberPage = await reachConsent(new Browser(), server.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope: 'ORG_BOOKING_WRITE', state: 's' }, inA);
      expect(memberPage.$('.consent-org-approval').text()).toContain('request approval');
    });

    it('approving after a partial narrowing installs exactly the requested scopes left, as the page showed; a stale form is refused (issue 45 item 3)', async () => {
      const db = server.system.db;
      const { org, a, owner, inA } = await orgWithTeams();
      await setAppPolicy(deps, org.id, 'approval', null);
      const app = await approvedClient(server, ['TEAM_BOOKING_READ', 'TEAM_EVENT_TYPE_READ', 'ORG_BOOKING_WRITE'], 'Trimmed App');
      const request = await orgs.addInstallationRequest(db, { clientId: app.client_id, orgId: org.id, userId: inA.id, scopes: ['TEAM_BOOKING_READ', 'TEAM_EVENT_TYPE_READ'] });
      const browser = await signIn(owner);
      const paths = orgAppsPaths(org.id);
      const before = await browser.get(`${server.url}${paths.page}`);
      expect(installs(before, request.id)).toEqual(['TEAM_BOOKING_READ', 'TEAM_EVENT_TYPE_READ']);

      await narrow(app.client_id, ['TEAM_BOOKING_READ', 'ORG_BOOKING_WRITE']);
      const stale = await post(browser, paths.approve(request.id), [...installsField(before, request.id), ['team_ids', String(a.id)]]);
      expect(stale.status, stale.html).toBe(409);
      expect(stale.$('[role=status]').text()).toMatch(/changed since the page was shown: nothing was installed/);
      expect(await orgs.activeInstallation(db, app.client_id, org.id)).toBeUndefined();
      // The page shown again says what approving installs now.
      expect(installs(stale, request.id)).toEqual(['TEAM_BOOKING_READ']);
      expect(stale.$(`[data-request="${request.id}"] .gone`).text()).toContain('TEAM_EVENT_TYPE_READ');
      const approved = await post(browser, paths.approve(request.id), [...installsField(stale, request.id), ['team_ids', String(a.id)]]);
      expect(approved.status, approved.html).toBe(303);
      expect(await orgs.activeInstallation(db, app.client_id, org.id)).toMatchObject({ teamIds: [a.id], scopes: ['TEAM_BOOKING_READ'] });
      expect(await orgs.pendingRequests(db, org.id)).toEqual([]);

      // The member asks for the organization's bookings too: withheld; their token reads team A's bookings, never deletes the organization's.
      const memberBrowser = new Browser();
      const consentPage = await reachConsent(memberBrowser, server.url, { client_id: app.client_id, redirect_uri: REDIRECT, scope: 'TEAM_BOOKING_READ ORG_BOOKING_WRITE', state: 's' }, inA);
      const allowed = await memberBrowser.submit(consentPage, 'button[value=allow]');
      expect(allowed.status, allowed.html.slice(0, 600)).toBe(303);
      const code = new URL((await memberBrowser.follow(allowed.location!, server.url)).location!).searchParams.get('code');
      const token = (await tokenRequest(server.url, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, ...app })) as unknown as { body: { access_token: string; scope: string } };
      expect(token.body.scope).toBe('TEAM_BOOKING_READ');
      for (const base of [server.url, other.url]) {
        expect(await gateway(base, token.body.access_token, 'DELETE', `/v2/organizations/${org.id}/bookings/77`)).toBe(403);
        expect(await gateway(base, token.body.access_token, 'GET', `/v2/organizations/${org.id}/teams/${a.id}/bookings`)).toBe(200);
      }
    });

    it('lets an admin change teams, uninstall, approve and dismiss requests; a replayed form gets a clear error', async () => {
      const { org, a, b, owner, inA, inB } = await orgWithTeams();
      const client = await approvedClient(server, SCOPE.split(' '), 'Paged App');
      const requested = await approvedClient(server, SCOPE.split(' '), 'Requested App');
      const ignored = await approvedClient(server, SCOPE.split(' '), 'Ignored App');
      const { installation } = await installApp(deps, { clientId: client.client_id, orgId: org.id, allTeams: true, teamIds: [], by: null });
      const [ta, tb] = [await boundTokens(client, inA, { orgId: org.id, teamIds: [a.id], installationId: installation.id }), await boundTokens(client, inB, { orgId: org.id, teamIds: [b.id], installationId: installation.id })];
      const request = await orgs.addInstallationRequest(server.system.db, { clientId: requested.client_id, orgId: org.id, userId: inA.id, scopes: ['TEAM_BOOKING_READ'] });
      const other = await orgs.addInstallationRequest(server.system.db, { clientId: ignored.client_id, orgId: org.id, userId: inB.id, scopes: ['TEAM_BOOKING_READ'] });
      const browser = await signIn(owner);
      const paths = orgAppsPaths(org.id);

      const list = await browser.get(`${server.url}${ORGANIZATIONS_PATH}`);
      expect(list.$(`a[href="${paths.page}"]`).length).toBe(1);
      const shown = await browser.get(`${server.url}${paths.page}`);
      expect(shown.status).toBe(200);
      expect(shown.$(`[data-installation="${installation.id}"] h3`).text()).toBe('Paged App');
      expect(shown.$(`[data-request="${request.id}"] h3`).text()).toBe('Requested App');

      // Teams: only A now; B's grant ends, A's lives. A team of another organization is refused.
      const foreign = await orgs.createTeam(server.system.db, { name: 'Foreign', orgId: (await orgs.createOrg(server.system.db, { name: 'Foreign Org' })).id });
      expect((await post(browser, paths.teams(installation.id), [['team_ids', String(foreign.id)]])).status).toBe(400);
      const changed = await post(browser, paths.teams(installation.id), [['team_ids', String(a.id)]]);
      expect(changed.status, changed.html).toBe(303);
      await expectEnded(client, tb);
      await expectLive(ta);

      // Approve a request for team B; dismiss another.
      const approved = await post(browser, paths.approve(request.id), [...installsField(shown, request.id), ['team_ids', String(b.id)]]);
      expect(approved.status, approved.html).toBe(303);
      expect(await orgs.activeInstallation(server.system.db, requested.client_id, org.id)).toMatchObject({ teamIds: [b.id], scopes: ['TEAM_BOOKING_READ'], installedBy: owner.id });
      // A request for the installed app: its teams are ticked already, and approving keeps its scopes.
      const again = await orgs.addInstallationRequest(server.system.db, { clientId: client.client_id, orgId: org.id, userId: inB.id, scopes: ['TEAM_BOOKING_READ'] });
      const form = await browser.get(`${server.url}${paths.page}`);
      expect(form.$(`[data-request="${again.id}"] input[name=team_ids][value="${a.id}"]`).attr('checked')).toBeDefined();
      expect(installs(form, again.id).sort()).toEqual(SCOPE.split(' ').sort());
      expect((await post(browser, paths.approve(again.id), [...installsField(form, again.id), ['team_ids', String(a.id)], ['team_ids', String(b.id)]])).status).toBe(303);
      expect(await orgs.activeInstallation(server.system.db, client.client_id, org.id)).toMatchObject({ id: installation.id, teamIds: [a.id, b.id], scopes: SCOPE.split(' ') });
      await expectLive(ta);
      expect((await post(browser, paths.dismiss(other.id), [])).status).toBe(303);
      expect(await orgs.pendingRequests(server.system.db, org.id)).toEqual([]);
      expect((await post(browser, paths.dismiss(other.id), [])).status).toBe(409);

      // Uninstall; the same form again is a clear refusal, and so is changing its teams.
      expect((await post(browser, paths.uninstall(installation.id), [])).status).toBe(303);
      await expectEnded(client, ta);
      const replay = await post(browser, paths.uninstall(installation.id), []);
      expect(replay.status).toBe(409);
      expect(replay.html).toMatch(/uninstalled meanwhile/);
      expect((await post(browser, paths.teams(installation.id), [['all_teams', 'yes']])).status).toBe(409);
      // Without the form's anti-forgery value: refused.
      const forged = await browser.request(`${server.url}${paths.policy}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'policy=block' });
      expect(forged.status).toBe(403);

      // The policy form.
      expect((await post(browser, paths.policy, [['policy', 'approval']])).status).toBe(303);
      expect((await orgs.findOrg(server.system.db, org.id))!.appPolicy).toBe('approval');
      expect((await post(browser, paths.policy, [['policy', 'nonsense']])).status).toBe(400);
    });
  });
});
