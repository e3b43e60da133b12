// The organization consent rules (src/orgs/consent-rules.ts): examples for each policy and role,
// then properties over random organizations, installations and requests: never more than the
// client's scopes, the installation's scopes and teams, and what the role may grant.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkChoice, grantedScopes, newScopes, orgOutcome, type OrgFacts, type OrgOutcome } from '../../src/orgs/consent-rules.ts';
import { ALL_SCOPES, scopeSatisfies } from '../../src/scopes.ts';

const TEAMS = [
  { id: 1, name: 'Sales' },
  { id: 2, name: 'Support' },
  { id: 3, name: 'Research' },
];
const CLIENT = ['PROFILE_READ', 'TEAM_BOOKING_READ', 'TEAM_EVENT_TYPE_READ', 'ORG_BOOKING_READ', 'ORG_EVENT_TYPE_READ'];

function facts(over: Partial<OrgFacts> & { policy?: 'allow' | 'approval' | 'block' } = {}): OrgFacts {
  const { policy = 'allow', ...rest } = over;
  return { org: { id: 7, name: 'Acme', appPolicy: policy }, role: 'member', installation: null, reachableTeams: [TEAMS[0]!], orgTeams: TEAMS, ...rest };
}
const grant = (o: OrgOutcome) => {
  if (o.kind !== 'grant') throw new Error(`expected a grant, got ${JSON.stringify(o)}`);
  return o;
};

describe('policies', () => {
  it('block: blocked for everyone, admins included', () => {
    for (const role of ['owner', 'admin', 'member'] as const) expect(orgOutcome(facts({ policy: 'block', role }), CLIENT, CLIENT)).toEqual({ kind: 'blocked', reason: 'policy_block' });
  });

  it('approval: a member of an organization without the app installed only asks the admins', () => {
    expect(orgOutcome(facts({ policy: 'approval' }), CLIENT, ['PROFILE_READ', 'TEAM_BOOKING_READ'])).toEqual({ kind: 'needs_approval', scopes: ['TEAM_BOOKING_READ'] });
  });

  it('approval: an admin installs; a member of an installed app gets at most the installation', () => {
    expect(grant(orgOutcome(facts({ policy: 'approval', role: 'admin' }), CLIENT, CLIENT)).installs).toBe(true);
    const installation = { id: 1, allTeams: false, teamIds: [1], scopes: ['TEAM_BOOKING_READ'] };
    const member = grant(orgOutcome(facts({ policy: 'approval', installation, reachableTeams: [TEAMS[0]!, TEAMS[1]!] }), CLIENT, CLIENT));
    expect(member.scopes).toEqual(['PROFILE_READ', 'TEAM_BOOKING_READ']);
    expect(member.withheld).toEqual(['TEAM_EVENT_TYPE_READ', 'ORG_BOOKING_READ', 'ORG_EVENT_TYPE_READ']);
    expect(member.teams).toEqual([TEAMS[0]]);
    expect(member.installs).toBe(false);
  });

  it('allow: a member grants team scopes for their own teams, org scopes never without an installation', () => {
    const member = grant(orgOutcome(facts(), CLIENT, CLIENT));
    expect(member.scopes).toEqual(['PROFILE_READ', 'TEAM_BOOKING_READ', 'TEAM_EVENT_TYPE_READ']);
    expect(member.teams).toEqual([TEAMS[0]]);
    expect(member.mayChooseAllTeams).toBe(false);
  });

  it('allow: a member without a team here, asking only team scopes, has nothing to grant', () => {
    expect(orgOutcome(facts({ reachableTeams: [] }), CLIENT, ['TEAM_BOOKING_READ', 'PROFILE_READ'])).toEqual({ kind: 'blocked', reason: 'nothing_grantable' });
  });

  it('allow: an installation with an ORG_ scope lets members have it, and ORG_X covers TEAM_X', () => {
    const installation = { id: 1, allTeams: true, teamIds: [], scopes: ['ORG_BOOKING_READ'] };
    const member = grant(orgOutcome(facts({ installation }), CLIENT, ['ORG_BOOKING_READ', 'TEAM_BOOKING_READ', 'TEAM_EVENT_TYPE_READ']));
    expect(member.scopes).toEqual(['ORG_BOOKING_READ', 'TEAM_BOOKING_READ']);
    expect(member.teams).toEqual([TEAMS[0]]);
  });

  it('an owner or admin chooses among all teams, may choose all, and installs', () => {
    for (const role of ['owner', 'admin'] as const) {
      const o = grant(orgOutcome(facts({ role, reachableTeams: TEAMS }), CLIENT, CLIENT));
      expect(o).toMatchObject({ admin: true, scopes: CLIENT, withheld: [], teams: TEAMS, mayChooseAllTeams: true, installs: true });
    }
  });

  it('never grants what the client no longer has', () => {
    const o = grant(orgOutcome(facts({ role: 'owner' }), ['TEAM_BOOKING_READ'], ['TEAM_BOOKING_READ', 'ORG_BOOKING_READ']));
    expect(o.scopes).toEqual(['TEAM_BOOKING_READ']);
    expect(o.withheld).toEqual(['ORG_BOOKING_READ']);
  });
});

describe('the posted choice', () => {
  const member = grant(orgOutcome(facts({ reachableTeams: [TEAMS[0]!, TEAMS[1]!] }), CLIENT, ['PROFILE_READ', 'TEAM_BOOKING_READ']));
  const admin = grant(orgOutcome(facts({ role: 'admin' }), CLIENT, ['TEAM_BOOKING_READ', 'ORG_BOOKING_READ']));

  it('accepts the member’s own teams', () => {
    expect(checkChoice(member, [], { ticked: [], teamIds: [2], allTeams: false })).toEqual({ ok: true, scopes: ['PROFILE_READ', 'TEAM_BOOKING_READ'], teamIds: [2], allTeams: false, installs: false });
  });

  it('refuses a team the member is not in, a foreign team, and "all teams" from a member (403)', () => {
    expect(checkChoice(member, [], { ticked: [], teamIds: [3], allTeams: false })).toMatchObject({ ok: false, status: 403 });
    expect(checkChoice(member, [], { ticked: [], teamIds: [1, 999], allTeams: false })).toMatchObject({ ok: false, status: 403 });
    expect(checkChoice(member, [], { ticked: [], teamIds: [1], allTeams: true })).toMatchObject({ ok: false, status: 403 });
  });

  it('needs a team for team scopes, and something to grant (400)', () => {
    expect(checkChoice(member, [], { ticked: [], teamIds: [], allTeams: false })).toMatchObject({ ok: false, status: 400 });
    expect(checkChoice(member, ['PROFILE_READ', 'TEAM_BOOKING_READ'], { ticked: [], teamIds: [1], allTeams: false })).toMatchObject({ ok: false, status: 400 });
  });

  it('an admin’s "all teams" means every team, and installs', () => {
    expect(checkChoice(admin, [], { ticked: [], teamIds: [], allTeams: true })).toEqual({ ok: true, scopes: ['TEAM_BOOKING_READ', 'ORG_BOOKING_READ'], teamIds: [1, 2, 3], allTeams: true, installs: true });
  });

  it('an admin of an organization without teams yet may install for all teams (the ones to come)', () => {
    const empty = grant(orgOutcome(facts({ role: 'owner', orgTeams: [], reachableTeams: [] }), CLIENT, ['TEAM_BOOKING_READ']));
    expect(checkChoice(empty, [], { ticked: [], teamIds: [], allTeams: true })).toMatchObject({ ok: true, teamIds: [], allTeams: true, installs: true });
    expect(checkChoice(empty, [], { ticked: [], teamIds: [], allTeams: false })).toMatchObject({ ok: false, status: 400 });
  });

  it('unticked optional scopes are left out; ticking cannot add what was not offered', () => {
    expect(checkChoice(member, ['PROFILE_READ'], { ticked: ['ORG_BOOKING_READ'], teamIds: [1], allTeams: false })).toMatchObject({ ok: true, scopes: ['TEAM_BOOKING_READ'] });
    expect(grantedScopes(['A', 'B', 'C'], ['B', 'C'], ['C', 'D'])).toEqual(['A', 'C']);
  });

  it('incremental consent shows only the new scopes', () => {
    expect(newScopes(['A', 'B', 'C'], ['B'])).toEqual(['A', 'C']);
  });
});

describe('properties', () => {
  const scope = fc.constantFrom(...ALL_SCOPES);
  const teamIds = fc.uniqueArray(fc.integer({ min: 1, max: 6 }), { maxLength: 6 });
  const arbFacts = fc.record({
    policy: fc.constantFrom('allow', 'approval', 'block'),
    role: fc.constantFrom('owner', 'admin', 'member', undefined),
    installation: fc.option(fc.record({ id: fc.constant(1), allTeams: fc.boolean(), teamIds, scopes: fc.uniqueArray(scope, { maxLength: 12 }) }), { nil: null }),
    reachable: teamIds,
    orgTeams: teamIds,
  });
  const input = fc.record({ facts: arbFacts, client: fc.uniqueArray(scope, { maxLength: 20 }), requested: fc.uniqueArray(scope, { minLength: 1, maxLength: 12 }), posted: teamIds, allTeams: fc.boolean(), ticked: fc.uniqueArray(scope), optional: fc.uniqueArray(scope, { maxLength: 6 }) });
  const team = (id: number) => ({ id, name: `T${id}` });

  it('never grants beyond the client, the installation, the role and the reachable teams', () => {
    fc.assert(
      fc.property(input, ({ facts: f, client, requested, posted, allTeams, ticked, optional }) => {
        const admin = f.role === 'owner' || f.role === 'admin';
        const orgTeams = f.orgTeams.map(team);
        const reachable = (admin ? f.orgTeams : f.reachable.filter((id) => f.orgTeams.includes(id))).map(team);
        const o = orgOutcome({ org: { id: 1, name: 'O', appPolicy: f.policy as 'allow' }, role: f.role as 'member', installation: f.installation, reachableTeams: reachable, orgTeams }, client, requested);
        if (f.policy === 'block') {
          expect(o.kind).toBe('blocked');
          return;
        }
        if (o.kind === 'needs_approval') {
          expect(!admin && f.policy === 'approval' && !f.installation).toBe(true);
          return;
        }
        if (o.kind === 'blocked') return;
        const result = checkChoice(o, optional, { ticked, teamIds: posted, allTeams });
        if (!result.ok) return;
        const installed = new Set(f.installation?.scopes ?? []);
        for (const s of result.scopes) {
          expect(client).toContain(s);
          expect(requested).toContain(s);
          if (!admin && s.startsWith('ORG_')) expect(installed.has(s)).toBe(true);
          if (!admin && s.startsWith('TEAM_') && f.installation) expect(scopeSatisfies(installed, s)).toBe(true);
          if (optional.includes(s)) expect(ticked).toContain(s);
        }
        expect(result.installs).toBe(admin && result.scopes.some((s) => /^(TEAM|ORG)_/.test(s)));
        for (const id of result.teamIds) {
          expect(f.orgTeams).toContain(id);
          if (!admin) {
            expect(f.reachable).toContain(id);
            if (f.installation && !f.installation.allTeams) expect(f.installation.teamIds).toContain(id);
          }
        }
        if (!admin) expect(result.allTeams).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  it('an admin’s outcome is never narrower than a member’s in the same organization', () => {
    fc.assert(
      fc.property(input, ({ facts: f, client, requested }) => {
        const base = { org: { id: 1, name: 'O', appPolicy: f.policy as 'allow' }, installation: f.installation, orgTeams: f.orgTeams.map(team) };
        const asMember = orgOutcome({ ...base, role: 'member', reachableTeams: f.reachable.filter((id) => f.orgTeams.includes(id)).map(team) }, client, requested);
        const asAdmin = orgOutcome({ ...base, role: 'admin', reachableTeams: base.orgTeams }, client, requested);
        if (asMember.kind !== 'grant') return;
        expect(asAdmin.kind).toBe('grant');
        if (asAdmin.kind === 'grant') for (const s of asMember.scopes) expect(asAdmin.scopes).toContain(s);
      }),
    );
  });
});
