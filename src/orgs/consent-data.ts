// The facts the organization consent rules (consent-rules.ts) need, read as they are now: the
// organizations a user is in (by membership, or through one of its teams), their teams, the app's
// active installation in each. Read for the page and read again for Allow.
// NOTE for the lead: plain reads of H1's tables (migration 021), written before src/orgs/store.ts
// existed; they can become calls of its orgsOfUser / teamsOfOrg / reachableTeams / activeInstallation.
import type { Knex } from 'knex';
import type { AppPolicy, OrgFacts, OrgRole, TeamRef } from './consent-rules.ts';
import { isOrgAdmin } from './consent-rules.ts';

type Db = Knex | Knex.Transaction;

export interface OrgConsentFacts extends OrgFacts {
  org: OrgFacts['org'] & { logoUrl: string | null };
  installation: (NonNullable<OrgFacts['installation']> & { installedBy: number | null }) | null;
}

const jsonList = <T>(value: unknown): T[] => (Array.isArray(value) ? value : typeof value === 'string' ? JSON.parse(value) : []) as T[];

/** Every organization the user is in, by name, with the facts of the app's position there. */
export async function orgFactsFor(db: Db, userId: number, clientId: string): Promise<OrgConsentFacts[]> {
  const memberships: Array<{ org_id: number; role: OrgRole }> = await db('org_memberships').where('user_id', userId).select('org_id', 'role');
  const myTeams: Array<{ id: number; name: string; org_id: number | null }> = await db('team_memberships')
    .join('teams', 'teams.id', 'team_memberships.team_id')
    .where('team_memberships.user_id', userId)
    .select('teams.id', 'teams.name', 'teams.org_id');
  const roles = new Map<number, OrgRole | undefined>(memberships.map((m) => [m.org_id, m.role]));
  for (const team of myTeams) if (team.org_id !== null && !roles.has(team.org_id)) roles.set(team.org_id, undefined);
  if (roles.size === 0) return [];
  const orgIds = [...roles.keys()];

  const [orgs, teams, installations] = await Promise.all([
    db('organizations').whereIn('id', orgIds).orderBy([{ column: 'name' }, { column: 'id' }]).select('id', 'name', 'app_policy', 'logo_url'),
    db('teams').whereIn('org_id', orgIds).orderBy([{ column: 'name' }, { column: 'id' }]).select('id', 'name', 'org_id'),
    db('app_installations').whereIn('org_id', orgIds).andWhere({ client_id: clientId, status: 'active' }).select('id', 'org_id', 'all_teams', 'team_ids', 'scopes', 'installed_by'),
  ]);
  const mine = new Set(myTeams.map((t) => t.id));
  return orgs.map((org: { id: number; name: string; app_policy: AppPolicy; logo_url: string | null }): OrgConsentFacts => {
    const role = roles.get(org.id);
    const orgTeams: TeamRef[] = teams.filter((t: { org_id: number }) => t.org_id === org.id).map((t: TeamRef) => ({ id: t.id, name: t.name }));
    const row = installations.find((i: { org_id: number }) => i.org_id === org.id);
    return {
      org: { id: org.id, name: org.name, appPolicy: org.app_policy, logoUrl: org.logo_url },
      role,
      installation: row ? { id: row.id, allTeams: row.all_teams, teamIds: jsonList<number>(row.team_ids).map(Number), scopes: jsonList<string>(row.scopes), installedBy: row.installed_by } : null,
      reachableTeams: isOrgAdmin(role) ? orgTeams : orgTeams.filter((t) => mine.has(t.id)),
      orgTeams,
    };
  });
}
