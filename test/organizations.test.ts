// Organizations, teams, memberships and installations as an operator (or a platform sync) makes
// them, through the operator scripts in-process on PostgreSQL (the same actions on the embedded
// PGlite: test/embedded-store.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin as runAdmin, type CliResult } from './support/processes.ts';
import { expectRefusal as refused, useAdminCli } from './support/admin-cli.ts';
import type { Db } from '../src/storage/db.ts';
import * as store from '../src/orgs/store.ts';
import { updateClient } from '../src/clients/repository.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { loadConfig } from '../src/config.ts';
import { seedDemo } from '../src/demo.ts';

const ok = (res: CliResult) => {
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
};

let serial = 0;
/** A user row straight in the table: these tests are about memberships, not passwords. */
async function newUser(db: Db, name = 'Member') {
  const tag = `${process.pid}-${++serial}-${Date.now()}`;
  const [row] = await db('users').insert({ email: `u${tag}@example.com`, username: `u${tag}`, name, password_hash: 'x' }).returning(['id', 'email']);
  return row as { id: number; email: string };
}

/** Every row these scripts may touch, to show a refusal changed nothing. */
async function snapshot(db: Db) {
  const tables = ['organizations', 'teams', 'org_memberships', 'team_memberships', 'app_installations', 'audit_events'];
  return Object.fromEntries(await Promise.all(tables.map(async (t) => [t, await db(t).select('*').orderByRaw('1, 2')])));
}

describe('organization scripts (PostgreSQL)', () => {
  const cli = useAdminCli();
  const admin = cli.json;
  const db = () => cli.pg.db;

  it('orgs create prints id, name and the allow policy; a logo must be an https URL', async () => {
    const org = ok(await admin('orgs', 'create', '--name', 'Acme Scheduling'));
    expect(org).toEqual({ id: expect.any(Number), name: 'Acme Scheduling', app_policy: 'allow' });
    const withLogo = ok(await admin('orgs', 'create', '--name', 'Logo Inc', '--logo-url', 'https://cdn.example/logo.png'));
    expect(withLogo).toMatchObject({ name: 'Logo Inc', logo_url: 'https://cdn.example/logo.png' });
    const before = await snapshot(db());
    const [noName, blank, badLogo, control] = await Promise.all([
      admin('orgs', 'create'),
      admin('orgs', 'create', '--name', '  '),
      admin('orgs', 'create', '--name', 'X', '--logo-url', 'javascript:alert(1)'),
      admin('orgs', 'create', '--name', 'A\u202eB'),
    ]);
    expect(noName.code).not.toBe(0);
    refused(blank, /name must be 1 to 200/);
    refused(badLogo, /logo link must/);
    refused(control, /printable/);
    expect(await snapshot(db())).toEqual(before);
    const audit = await db()('audit_events').where('action', 'org.created').orderBy('id');
    expect(audit.map((a) => a.details.org_id)).toEqual([org.id, withLogo.id]);
  });

  it('orgs add-member takes a user id or e-mail, defaults to member, changes a role, refuses duplicates and unknowns', async () => {
    const org = ok(await admin('orgs', 'create', '--name', 'Members Org'));
    const [alice, bob] = [await newUser(db(), 'Alice'), await newUser(db(), 'Bob')];
    expect(ok(await admin('orgs', 'add-member', String(org.id), String(alice.id), '--role', 'owner'))).toEqual({ org_id: org.id, user_id: alice.id, role: 'owner' });
    expect(ok(await admin('orgs', 'add-member', String(org.id), bob.email.toUpperCase()))).toEqual({ org_id: org.id, user_id: bob.id, role: 'member' });
    expect(ok(await admin('orgs', 'add-member', String(org.id), String(bob.id), '--role', 'admin'))).toEqual({ org_id: org.id, user_id: bob.id, role: 'admin' });

    const before = await snapshot(db());
    const [dup, badRole, noOrg, textOrg, hugeOrg, noUser, noEmail, notAUser] = await Promise.all([
      admin('orgs', 'add-member', String(org.id), String(alice.id), '--role', 'owner'),
      admin('orgs', 'add-member', String(org.id), String(alice.id), '--role', 'superuser'),
      admin('orgs', 'add-member', '999999', String(alice.id)),
      admin('orgs', 'add-member', 'acme', String(alice.id)),
      admin('orgs', 'add-member', '99999999999', String(alice.id)),
      admin('orgs', 'add-member', String(org.id), '999999'),
      admin('orgs', 'add-member', String(org.id), 'nobody@example.com'),
      admin('orgs', 'add-member', String(org.id), 'alice'),
    ]);
    refused(dup, /already a member of organization .* as owner/);
    refused(badRole, /--role must be one of owner, admin, member/);
    refused(noOrg, /no organization "999999"/);
    refused(textOrg, /no organization "acme"/);
    refused(hugeOrg, /no organization/);
    refused(noUser, /no user "999999"/);
    refused(noEmail, /no user "nobody@example.com"/);
    refused(notAUser, /no user "alice"/);
    expect(await snapshot(db())).toEqual(before);
  });

  it('orgs set-app-policy stores allow, approval or block and prints the organization; refuses anything else', async () => {
    const org = ok(await admin('orgs', 'create', '--name', 'Policy Org'));
    expect(ok(await admin('orgs', 'set-app-policy', String(org.id), 'approval'))).toEqual({ id: org.id, name: 'Policy Org', app_policy: 'approval' });
    expect(ok(await admin('orgs', 'set-app-policy', String(org.id), 'block'))).toMatchObject({ app_policy: 'block' });
    expect(ok(await admin('orgs', 'set-app-policy', String(org.id), 'allow'))).toMatchObject({ app_policy: 'allow' });
    const before = await snapshot(db());
    refused(await admin('orgs', 'set-app-policy', String(org.id), 'deny'), /app policy must be one of allow, approval, block/);
    refused(await admin('orgs', 'set-app-policy', '999999', 'block'), /no organization/);
    expect(await snapshot(db())).toEqual(before);
    const trail = await db()('audit_events').where('action', 'org.app_policy_changed').orderBy('id');
    expect(trail.map((e) => [e.details.from, e.details.to])).toEqual([['allow', 'approval'], ['approval', 'block'], ['block', 'allow']]);
  });

  it('teams create in an organization or in none; refuses an unknown organization', async () => {
    const org = ok(await admin('orgs', 'create', '--name', 'Team Org'));
    expect(ok(await admin('teams', 'create', '--name', 'Sales', '--org', String(org.id)))).toEqual({ id: expect.any(Number), name: 'Sales', org_id: org.id });
    expect(ok(await admin('teams', 'create', '--name', 'Solo team'))).toEqual({ id: expect.any(Number), name: 'Solo team', org_id: null });
    const before = await snapshot(db());
    refused(await admin('teams', 'create', '--name', 'Ghost', '--org', '999999'), /no organization "999999"/);
    refused(await admin('teams', 'create', '--name', 'Ghost', '--org', '-1'), /no organization "-1"/);
    refused(await admin('teams', 'create', '--name', ''), /name must be 1 to 200/);
    expect(await snapshot(db())).toEqual(before);
  });

  it("teams add-member: an organization's team takes only its members; a team of none takes anyone", async () => {
    const org = ok(await admin('orgs', 'create', '--name', 'Rule Org'));
    const other = ok(await admin('orgs', 'create', '--name', 'Other Org'));
    const team = ok(await admin('teams', 'create', '--name', 'Support', '--org', String(org.id)));
    const solo = ok(await admin('teams', 'create', '--name', 'Free team'));
    const [member, outsider] = [await newUser(db()), await newUser(db())];
    ok(await admin('orgs', 'add-member', String(org.id), String(member.id)));
    ok(await admin('orgs', 'add-member', String(other.id), String(outsider.id)));

    expect(ok(await admin('teams', 'add-member', String(team.id), member.email))).toEqual({ team_id: team.id, user_id: member.id, role: 'member' });
    expect(ok(await admin('teams', 'add-member', String(team.id), String(member.id), '--role', 'admin'))).toEqual({ team_id: team.id, user_id: member.id, role: 'admin' });
    expect(ok(await admin('teams', 'add-member', String(solo.id), String(outsider.id)))).toEqual({ team_id: solo.id, user_id: outsider.id, role: 'member' });

    const before = await snapshot(db());
    const [notInOrg, dup, ownerRole, noTeam, noUser] = await Promise.all([
      admin('teams', 'add-member', String(team.id), String(outsider.id)),
      admin('teams', 'add-member', String(team.id), String(member.id), '--role', 'admin'),
      admin('teams', 'add-member', String(team.id), String(member.id), '--role', 'owner'),
      admin('teams', 'add-member', '999999', String(member.id)),
      admin('teams', 'add-member', String(team.id), 'ghost@example.com'),
    ]);
    refused(notInOrg, new RegExp(`not a member of organization ${org.id}.*orgs add-member first`));
    refused(dup, /already a member of team .* as admin/);
    refused(ownerRole, /--role must be one of admin, member/);
    refused(noTeam, /no team "999999"/);
    refused(noUser, /no user "ghost@example.com"/);
    expect(await snapshot(db())).toEqual(before);
  });

  it('orgs show lists the members and the teams with theirs', async () => {
    const org = ok(await admin('orgs', 'create', '--name', 'Shown Org'));
    const [owner, member] = [await newUser(db(), 'Olga'), await newUser(db(), 'Max')];
    ok(await admin('orgs', 'add-member', String(org.id), String(owner.id), '--role', 'owner'));
    ok(await admin('orgs', 'add-member', String(org.id), String(member.id)));
    const a = ok(await admin('teams', 'create', '--name', 'A', '--org', String(org.id)));
    const b = ok(await admin('teams', 'create', '--name', 'B', '--org', String(org.id)));
    ok(await admin('teams', 'add-member', String(a.id), String(member.id)));
    expect(ok(await admin('orgs', 'show', String(org.id)))).toEqual({
      id: org.id,
      name: 'Shown Org',
      app_policy: 'allow',
      members: [
        { user_id: owner.id, email: owner.email, name: 'Olga', role: 'owner' },
        { user_id: member.id, email: member.email, name: 'Max', role: 'member' },
      ],
      teams: [
        { id: a.id, name: 'A', org_id: org.id, members: [{ user_id: member.id, role: 'member' }] },
        { id: b.id, name: 'B', org_id: org.id, members: [] },
      ],
    });
    refused(await admin('orgs', 'show', 'nope'), /no organization "nope"/);
    const listed = ok(await admin('orgs', 'list')).organizations.find((o: { id: number }) => o.id === org.id);
    expect(listed).toEqual({ id: org.id, name: 'Shown Org', app_policy: 'allow', members: 2, teams: 2 });
    const table = await runAdmin(['orgs', 'list'], cli.env);
    expect(table.stdout).toMatch(new RegExp(`^ID\\s+POLICY\\s+MEMBERS\\s+TEAMS\\s+NAME\\n(.*\\n)*${org.id}\\s+allow\\s+2\\s+2\\s+Shown Org$`, 'm'));
    const text = await runAdmin(['orgs', 'show', String(org.id)], cli.env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/app_policy: allow/);
  });

  it('installations list: by organization and client, team_ids resolved for all-teams installations', async () => {
    const org = ok(await admin('orgs', 'create', '--name', 'Install Org'));
    const t1 = ok(await admin('teams', 'create', '--name', 'One', '--org', String(org.id)));
    const t2 = ok(await admin('teams', 'create', '--name', 'Two', '--org', String(org.id)));
    const app = ok(await admin('clients', 'create', '--name', 'Team App', '--redirect-uri', 'https://app.example/cb', '--scope', 'TEAM_BOOKING_READ ORG_PROFILE_READ'));
    const other = ok(await admin('clients', 'create', '--name', 'Other App', '--redirect-uri', 'https://other.example/cb', '--scope', 'TEAM_BOOKING_READ'));
    const admin1 = await newUser(db());
    expect(ok(await admin('installations', 'list'))).toEqual({ installations: [] });

    const listed = await store.saveInstallation(db(), { clientId: app.client_id, orgId: org.id, allTeams: false, teamIds: [t2.id], scopes: ['TEAM_BOOKING_READ'], installedBy: admin1.id });
    const all = await store.saveInstallation(db(), { clientId: other.client_id, orgId: org.id, allTeams: true, teamIds: [], scopes: ['TEAM_BOOKING_READ'], installedBy: null });
    const result = ok(await admin('installations', 'list', '--org', String(org.id)));
    expect(result.installations).toEqual([
      { id: listed.id, client_id: app.client_id, org_id: org.id, all_teams: false, team_ids: [t2.id], scopes: ['TEAM_BOOKING_READ'], status: 'active', installed_by: admin1.id, installed_at: listed.installedAt.toISOString() },
      { id: all.id, client_id: other.client_id, org_id: org.id, all_teams: true, team_ids: [t1.id, t2.id], scopes: ['TEAM_BOOKING_READ'], status: 'active', installed_by: null, installed_at: expect.any(String) },
    ]);
    // A team made later is reached by the all-teams installation.
    const t3 = ok(await admin('teams', 'create', '--name', 'Three', '--org', String(org.id)));
    expect(ok(await admin('installations', 'list', '--client', other.client_id)).installations.map((i: { team_ids: number[] }) => i.team_ids)).toEqual([[t1.id, t2.id, t3.id]]);
    await store.markInstallationRemoved(db(), listed.id);
    expect(ok(await admin('installations', 'list', '--org', String(org.id), '--client', app.client_id)).installations.map((i: { status: string }) => i.status)).toEqual(['removed']);
    const text = await runAdmin(['installations', 'list', '--org', String(org.id)], cli.env);
    expect(text.stdout).toMatch(/^ID\s+ORG\s+STATUS\s+TEAMS/);
    refused(await admin('installations', 'list', '--org', '999999'), /no organization/);
    refused(await admin('installations', 'list', '--client', 'no-such-client'), /no client/);
  });

  it('has --help for every organization command', async () => {
    const commands = [['orgs', 'create'], ['orgs', 'list'], ['orgs', 'add-member'], ['orgs', 'set-app-policy'], ['orgs', 'show'], ['teams', 'create'], ['teams', 'add-member'], ['installations', 'list']];
    for (const c of commands) {
      const res = await runAdmin([...c, '--help'], cli.env);
      expect(res.code, c.join(' ')).toBe(0);
      expect(res.stdout).toMatch(/Global Options:\n  --json /);
    }
  });
});

describe('optional scopes (clients set-scopes --optional)', () => {
  const cli = useAdminCli();
  const admin = cli.json;
  const row = (id: string) => cli.pg.db('oauth_clients').where('id', id).first('scopes', 'optional_scopes');

  it('stores which scopes are optional, shows them, and refuses any outside the scopes or all of them', async () => {
    const c = ok(await admin('clients', 'create', '--name', 'Granular', '--redirect-uri', 'https://app.example/cb', '--scope', 'PROFILE_READ'));
    expect(c.optional_scopes).toEqual([]);
    const set = ok(await admin('clients', 'set-scopes', c.client_id, 'PROFILE_READ', 'BOOKING_READ', 'SCHEDULE_READ', '--optional', 'BOOKING_READ', '--optional', 'SCHEDULE_READ'));
    expect(set).toMatchObject({ scopes: ['PROFILE_READ', 'BOOKING_READ', 'SCHEDULE_READ'], optional_scopes: ['BOOKING_READ', 'SCHEDULE_READ'] });
    expect(ok(await admin('clients', 'show', c.client_id)).optional_scopes).toEqual(['BOOKING_READ', 'SCHEDULE_READ']);
    const text = await runAdmin(['clients', 'show', c.client_id], cli.env);
    expect(text.stdout).toMatch(/optional_scopes:\n  - BOOKING_READ\n  - SCHEDULE_READ/);

    const before = await row(c.client_id);
    const [outside, every, unknown] = await Promise.all([
      admin('clients', 'set-scopes', c.client_id, 'PROFILE_READ', '--optional', 'BOOKING_READ'),
      admin('clients', 'set-scopes', c.client_id, 'PROFILE_READ', 'BOOKING_READ', '--optional', 'PROFILE_READ,BOOKING_READ'),
      admin('clients', 'set-scopes', c.client_id, 'PROFILE_READ', '--optional', 'NOPE'),
    ]);
    refused(outside, /optional scopes must be among the client's scopes: BOOKING_READ is not/);
    refused(every, /at least one of the client's scopes must stay required/);
    refused(unknown, /optional scopes must be among|unknown scope/);
    expect(await row(c.client_id)).toEqual(before);
    const trail = await cli.pg.db('audit_events').where({ client_id: c.client_id, action: 'client.scopes_set' });
    expect(trail.map((e) => e.details.optional_to)).toEqual([['BOOKING_READ', 'SCHEDULE_READ']]);

    // set-scopes states the whole picture: without --optional every scope is required.
    expect(ok(await admin('clients', 'set-scopes', c.client_id, 'PROFILE_READ', 'BOOKING_READ')).optional_scopes).toEqual([]);
  });

  it('a change of scopes by another path keeps the optional ones that remain', async () => {
    const c = ok(await admin('clients', 'create', '--name', 'Narrowed', '--redirect-uri', 'https://app.example/cb', '--scope', 'PROFILE_READ,BOOKING_READ,SCHEDULE_READ'));
    ok(await admin('clients', 'set-scopes', c.client_id, 'PROFILE_READ,BOOKING_READ,SCHEDULE_READ', '--optional', 'BOOKING_READ,SCHEDULE_READ'));
    await cli.pg.db.transaction((trx) => updateClient(trx, c.client_id, { scopes: ['PROFILE_READ', 'SCHEDULE_READ'] }));
    expect(await row(c.client_id)).toEqual({ scopes: ['PROFILE_READ', 'SCHEDULE_READ'], optional_scopes: ['SCHEDULE_READ'] });
    await cli.pg.db.transaction((trx) => updateClient(trx, c.client_id, { scopes: ['PROFILE_READ'] }));
    expect(await row(c.client_id)).toEqual({ scopes: ['PROFILE_READ'], optional_scopes: [] });
  });
});

describe('organization store', () => {
  const cli = useAdminCli();
  const db = () => cli.pg.db;

  it('reachable teams: every team for an owner or admin, their own teams for a member, none for others', async () => {
    const org = await store.createOrg(db(), { name: 'Reach' });
    const [a, b] = [await store.createTeam(db(), { name: 'A', orgId: org.id }), await store.createTeam(db(), { name: 'B', orgId: org.id })];
    const [owner, member, stranger] = [await newUser(db()), await newUser(db()), await newUser(db())];
    await store.addOrgMember(db(), org.id, owner.id, 'owner');
    await store.addOrgMember(db(), org.id, member.id, 'member');
    await store.addTeamMember(db(), b.id, member.id);
    expect(await store.reachableTeams(db(), org.id, owner.id)).toEqual([a, b]);
    expect(await store.reachableTeams(db(), org.id, member.id)).toEqual([b]);
    expect(await store.reachableTeams(db(), org.id, stranger.id)).toEqual([]);
    expect((await store.orgsOfUser(db(), member.id)).map((m) => [m.org.id, m.role])).toEqual([[org.id, 'member']]);
    await expect(store.addTeamMember(db(), a.id, stranger.id)).rejects.toThrow(/not a member of organization/);
    // Leaving the organization leaves its teams too.
    expect(await store.removeOrgMember(db(), org.id, member.id)).toBe(true);
    expect(await store.teamsOfUser(db(), member.id)).toEqual([]);
    expect(await store.removeOrgMember(db(), org.id, member.id)).toBe(false);
  });

  it('the database keeps the team rule for rows a sync writes straight into the tables', async () => {
    const org = await store.createOrg(db(), { name: 'Synced' });
    const team = await store.createTeam(db(), { name: 'T', orgId: org.id });
    const loose = await store.createTeam(db(), { name: 'No org' });
    const user = await newUser(db());
    await expect(db()('team_memberships').insert({ team_id: team.id, user_id: user.id, role: 'member' })).rejects.toMatchObject({ code: '23514' });
    await db()('team_memberships').insert({ team_id: loose.id, user_id: user.id, role: 'member' });
    await db()('org_memberships').insert({ org_id: org.id, user_id: user.id, role: 'member' });
    await db()('team_memberships').insert({ team_id: team.id, user_id: user.id, role: 'admin' });
    await db()('org_memberships').where({ org_id: org.id, user_id: user.id }).delete();
    expect((await store.teamsOfUser(db(), user.id)).map((m) => m.team.id)).toEqual([loose.id]);
  });

  it('one active installation per app and organization; requests idempotent while pending', async () => {
    const org = await store.createOrg(db(), { name: 'Inst' });
    const user = await newUser(db());
    await db()('oauth_clients').insert({ id: 'store-app', name: 'App', kind: 'public', scopes: JSON.stringify(['TEAM_BOOKING_READ']) });
    const input = { clientId: 'store-app', orgId: org.id, allTeams: false, teamIds: [3, 1, 3], scopes: ['TEAM_BOOKING_READ'], installedBy: user.id };
    const [x, y] = await Promise.all([store.saveInstallation(db(), input), store.saveInstallation(db(), { ...input, teamIds: [2], installedBy: null })]);
    expect(x.id).toBe(y.id);
    // Whichever came first installed it; the other changed its teams and kept who installed it.
    const active = (await store.activeInstallation(db(), 'store-app', org.id))!;
    expect(active.installedBy).toBe(x.installedBy);
    expect(x.installedBy).toBe(y.installedBy);
    const byOperator = await store.saveInstallation(db(), { ...input, installedBy: null });
    expect(byOperator).toMatchObject({ id: x.id, installedBy: active.installedBy, teamIds: [1, 3] });
    expect(await store.markInstallationRemoved(db(), x.id)).toMatchObject({ status: 'removed' });
    expect(await store.markInstallationRemoved(db(), x.id)).toBeUndefined();
    const again = await store.saveInstallation(db(), input);
    expect(again.id).not.toBe(x.id);
    expect(again.teamIds).toEqual([1, 3]);
    expect((await store.listInstallations(db(), { orgId: org.id })).map((i) => i.status)).toEqual(['removed', 'active']);

    const r1 = await store.addInstallationRequest(db(), { clientId: 'store-app', orgId: org.id, userId: user.id, scopes: ['TEAM_BOOKING_READ'] });
    const r2 = await store.addInstallationRequest(db(), { clientId: 'store-app', orgId: org.id, userId: user.id, scopes: ['TEAM_BOOKING_READ'] });
    expect(r2.id).toBe(r1.id);
    expect((await store.pendingRequests(db(), org.id)).map((r) => r.id)).toEqual([r1.id]);
    expect(await store.settleRequests(db(), { clientId: 'store-app', orgId: org.id }, 'approved')).toBe(1);
    expect(await store.pendingRequests(db(), org.id)).toEqual([]);
    await expect(store.saveInstallation(db(), { ...input, orgId: 999999 })).rejects.toThrow(/no client .* or no organization/);
  });
});

describe('the demo of the quick start', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sql');
  });
  afterAll(() => server?.close());

  it('makes a demo organization with two teams, owned by the demo user, and prints it', async () => {
    const output = await seedDemo(server.system, loadConfig({ NODE_ENV: 'test', APP_URL: server.url, DATABASE_URL: server.pg.url }));
    const db = server.pg.db;
    const user = await db('users').where('email', 'demo@example.com').first('id');
    const memberships = await store.orgsOfUser(db, user.id);
    expect(memberships).toHaveLength(1);
    const { org, role } = memberships[0]!;
    expect(org).toMatchObject({ name: 'Demo Organization', appPolicy: 'allow' });
    expect(role).toBe('owner');
    const teams = await store.teamsOfOrg(db, org.id);
    expect(teams.map((t) => t.name)).toEqual(['Sales', 'Support']);
    expect((await store.teamsOfUser(db, user.id)).map((m) => [m.team.name, m.role])).toEqual([['Sales', 'admin'], ['Support', 'admin']]);
    expect(output).toContain(`organization:  Demo Organization (id ${org.id}), teams Sales (id ${teams[0]!.id}) and Support (id ${teams[1]!.id}); the demo user owns it`);
  });
});
