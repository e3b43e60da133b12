// Plain data access for organizations, teams, memberships, installations and installation requests
// (docs/organizations.md). No side effects beyond these rows: revoking grants, webhooks and audit
// records belong to the callers (src/orgs/installations.ts). Every function takes the database or
// a transaction first, so callers can compose them in one transaction.
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { parseIntegerId } from '../ids.ts';
import { validateName } from '../accounts/store.ts';
import {
  APP_POLICIES,
  ORG_ROLES,
  TEAM_ROLES,
  isOrgAdmin,
  type AppPolicy,
  type Installation,
  type InstallationRequest,
  type OrgMembership,
  type OrgRole,
  type Organization,
  type Team,
  type TeamMembership,
  type TeamRole,
} from './model.ts';

export type Conn = Db | Knex.Transaction;
/** An id as a number, or as text from a URL or an argument; anything else finds nothing. */
export type IdInput = number | string;

const idOf = (value: IdInput): number | undefined => (typeof value === 'number' ? (Number.isSafeInteger(value) && value > 0 && value <= 2 ** 31 - 1 ? value : undefined) : parseIntegerId(value));

// Counts come from `returning`: on the embedded PGlite, knex's delete and update resolve to a result
// object rather than the number of rows.
// PostgreSQL's foreign_key_violation: a row names an organization, team or user that is not there.
const isMissingReference = (err: unknown) => (err as { code?: string }).code === '23503';
// check_violation: migration 021's trigger refusing a team member outside the team's organization.
const isCheckViolation = (err: unknown) => (err as { code?: string }).code === '23514';

type Row = Record<string, any>;

const toOrg = (r: Row): Organization => ({ id: r.id, name: r.name, appPolicy: r.app_policy, logoUrl: r.logo_url ?? null });
const toTeam = (r: Row): Team => ({ id: r.id, name: r.name, orgId: r.org_id ?? null });
const toInstallation = (r: Row): Installation => ({
  id: r.id,
  clientId: r.client_id,
  orgId: r.org_id,
  allTeams: r.all_teams,
  teamIds: r.team_ids,
  scopes: r.scopes,
  status: r.status,
  installedBy: r.installed_by ?? null,
  installedAt: new Date(r.installed_at),
});
const toRequest = (r: Row): InstallationRequest => ({
  id: r.id,
  clientId: r.client_id,
  orgId: r.org_id,
  userId: r.user_id,
  scopes: r.scopes,
  status: r.status,
  createdAt: new Date(r.created_at),
});

function checkPolicy(policy: string): AppPolicy {
  if (!APP_POLICIES.includes(policy as AppPolicy)) throw new InputError(`the app policy must be one of ${APP_POLICIES.join(', ')}: not "${policy}"`);
  return policy as AppPolicy;
}
function checkOrgRole(role: string): OrgRole {
  if (!ORG_ROLES.includes(role as OrgRole)) throw new InputError(`an organization role is one of ${ORG_ROLES.join(', ')}: not "${role}"`);
  return role as OrgRole;
}
function checkTeamRole(role: string): TeamRole {
  if (!TEAM_ROLES.includes(role as TeamRole)) throw new InputError(`a team role is one of ${TEAM_ROLES.join(', ')}: not "${role}"`);
  return role as TeamRole;
}

// ---- organizations

export async function createOrg(db: Conn, input: { name: string; appPolicy?: AppPolicy; logoUrl?: string | null }): Promise<Organization> {
  const [row] = await db('organizations')
    .insert({ name: validateName(input.name), app_policy: checkPolicy(input.appPolicy ?? 'allow'), logo_url: input.logoUrl ?? null })
    .returning('*');
  return toOrg(row);
}

export async function findOrg(db: Conn, id: IdInput): Promise<Organization | undefined> {
  const orgId = idOf(id);
  if (orgId === undefined) return undefined;
  const row = await db('organizations').where('id', orgId).first();
  return row ? toOrg(row) : undefined;
}

/** Only the row: the effects of a policy change (revoking grants under `block`) are the caller's. */
export async function setAppPolicyRow(db: Conn, id: IdInput, policy: AppPolicy): Promise<Organization | undefined> {
  const orgId = idOf(id);
  checkPolicy(policy);
  if (orgId === undefined) return undefined;
  const [row] = await db('organizations').where('id', orgId).update({ app_policy: policy }).returning('*');
  return row ? toOrg(row) : undefined;
}

// ---- organization memberships

/** Adds the user to the organization, or changes their role there. NotFoundError if either is missing. */
export async function addOrgMember(db: Conn, orgId: number, userId: number, role: OrgRole = 'member'): Promise<OrgMembership> {
  checkOrgRole(role);
  try {
    const [row] = await db('org_memberships')
      .insert({ org_id: orgId, user_id: userId, role })
      .onConflict(['org_id', 'user_id'])
      .merge(['role'])
      .returning('*');
    return { orgId: row.org_id, userId: row.user_id, role: row.role };
  } catch (err) {
    if (isMissingReference(err)) throw new NotFoundError(`no organization ${orgId} or no user ${userId}`);
    throw err;
  }
}

/**
 * Removes the user from the organization, and so from its teams (migration 021's trigger: a
 * member of an organization's team is always a member of that organization). Returns whether
 * they were a member.
 */
export async function removeOrgMember(db: Conn, orgId: number, userId: number): Promise<boolean> {
  return (await db('org_memberships').where({ org_id: orgId, user_id: userId }).delete().returning('user_id')).length > 0;
}

export async function orgRole(db: Conn, orgId: number, userId: number): Promise<OrgRole | undefined> {
  return (await db('org_memberships').where({ org_id: orgId, user_id: userId }).first('role'))?.role;
}

/** The user's organizations and their role in each, by name. */
export async function orgsOfUser(db: Conn, userId: number): Promise<{ org: Organization; role: OrgRole }[]> {
  const rows = await db('org_memberships as m')
    .join('organizations as o', 'o.id', 'm.org_id')
    .where('m.user_id', userId)
    .orderBy([{ column: 'o.name' }, { column: 'o.id' }])
    .select('o.*', 'm.role');
  return rows.map((r: Row) => ({ org: toOrg(r), role: r.role }));
}

/** The organization's members, by user id. */
export async function orgMembers(db: Conn, orgId: number): Promise<OrgMembership[]> {
  const rows = await db('org_memberships').where('org_id', orgId).orderBy('user_id');
  return rows.map((r: Row) => ({ orgId: r.org_id, userId: r.user_id, role: r.role }));
}

// ---- teams

export async function createTeam(db: Conn, input: { name: string; orgId?: number | null }): Promise<Team> {
  try {
    const [row] = await db('teams').insert({ name: validateName(input.name), org_id: input.orgId ?? null }).returning('*');
    return toTeam(row);
  } catch (err) {
    if (isMissingReference(err)) throw new NotFoundError(`no organization ${input.orgId}`);
    throw err;
  }
}

export async function findTeam(db: Conn, id: IdInput): Promise<Team | undefined> {
  const teamId = idOf(id);
  if (teamId === undefined) return undefined;
  const row = await db('teams').where('id', teamId).first();
  return row ? toTeam(row) : undefined;
}

export async function teamsOfOrg(db: Conn, orgId: number): Promise<Team[]> {
  return (await db('teams').where('org_id', orgId).orderBy('id')).map(toTeam);
}

// ---- team memberships

/**
 * Adds the user to the team, or changes their role there. A team of an organization takes only
 * that organization's members (InputError otherwise); NotFoundError when the team or user is missing.
 * One statement, so a concurrent removal from the organization cannot leave a stray team member.
 */
export async function addTeamMember(db: Conn, teamId: number, userId: number, role: TeamRole = 'member'): Promise<TeamMembership> {
  checkTeamRole(role);
  let rows: Row[];
  try {
    ({ rows } = await db.raw(
      `insert into team_memberships (team_id, user_id, role)
       select t.id, ?, ? from teams t
       where t.id = ? and (t.org_id is null or exists (select 1 from org_memberships m where m.org_id = t.org_id and m.user_id = ?))
       on conflict (team_id, user_id) do update set role = excluded.role
       returning team_id, user_id, role`,
      [userId, role, teamId, userId],
    ));
  } catch (err) {
    if (isMissingReference(err)) throw new NotFoundError(`no user ${userId}`);
    // The organization membership ended between this statement's check and its insert.
    if (isCheckViolation(err)) throw new InputError(`user ${userId} is not a member of the organization team ${teamId} belongs to`);
    throw err;
  }
  if (rows[0]) return { teamId: rows[0].team_id, userId: rows[0].user_id, role: rows[0].role };
  const team = await findTeam(db, teamId);
  if (!team) throw new NotFoundError(`no team ${teamId}`);
  throw new InputError(`user ${userId} is not a member of organization ${team.orgId}, which team ${teamId} belongs to: add them to the organization first`);
}

export async function removeTeamMember(db: Conn, teamId: number, userId: number): Promise<boolean> {
  return (await db('team_memberships').where({ team_id: teamId, user_id: userId }).delete().returning('user_id')).length > 0;
}

export async function teamsOfUser(db: Conn, userId: number): Promise<{ team: Team; role: TeamRole }[]> {
  const rows = await db('team_memberships as m').join('teams as t', 't.id', 'm.team_id').where('m.user_id', userId).orderBy('t.id').select('t.*', 'm.role');
  return rows.map((r: Row) => ({ team: toTeam(r), role: r.role }));
}

export async function teamMembers(db: Conn, teamId: number): Promise<TeamMembership[]> {
  const rows = await db('team_memberships').where('team_id', teamId).orderBy('user_id');
  return rows.map((r: Row) => ({ teamId: r.team_id, userId: r.user_id, role: r.role }));
}

/** The organization's teams this user may act for: all of them for an owner or admin; else those they are in. */
export async function reachableTeams(db: Conn, orgId: number, userId: number): Promise<Team[]> {
  const role = await orgRole(db, orgId, userId);
  if (!role) return [];
  if (isOrgAdmin(role)) return teamsOfOrg(db, orgId);
  const rows = await db('teams as t')
    .join('team_memberships as m', 'm.team_id', 't.id')
    .where({ 't.org_id': orgId, 'm.user_id': userId })
    .orderBy('t.id')
    .select('t.*');
  return rows.map(toTeam);
}

// ---- installations

export async function findInstallation(db: Conn, id: IdInput): Promise<Installation | undefined> {
  const installationId = idOf(id);
  if (installationId === undefined) return undefined;
  const row = await db('app_installations').where('id', installationId).first();
  return row ? toInstallation(row) : undefined;
}

export async function activeInstallation(db: Conn, clientId: string, orgId: number): Promise<Installation | undefined> {
  const row = await db('app_installations').where({ client_id: clientId, org_id: orgId, status: 'active' }).first();
  return row ? toInstallation(row) : undefined;
}

export async function listInstallations(db: Conn, filter: { orgId?: number; clientId?: string; status?: Installation['status'] } = {}): Promise<Installation[]> {
  const query = db('app_installations').orderBy('id');
  if (filter.orgId !== undefined) query.where('org_id', filter.orgId);
  if (filter.clientId !== undefined) query.where('client_id', filter.clientId);
  if (filter.status !== undefined) query.where('status', filter.status);
  return (await query).map(toInstallation);
}

export interface InstallationInput {
  clientId: string;
  orgId: number;
  /** Every team of the organization, including later ones; teamIds is then stored empty. */
  allTeams: boolean;
  teamIds: number[];
  scopes: string[];
  /** A user id; null: the operator. */
  installedBy: number | null;
}

/**
 * Inserts the app's installation for the organization, or updates the active one (teams, scopes);
 * an update keeps who installed it and when. One statement: two concurrent installs end as one row.
 * Checking that the teams are the organization's and the scopes the client's is the caller's job.
 */
export async function saveInstallation(db: Conn, input: InstallationInput): Promise<Installation> {
  const teamIds = input.allTeams ? [] : [...new Set(input.teamIds)].sort((a, b) => a - b);
  const scopes = [...new Set(input.scopes)];
  try {
    const { rows } = await db.raw(
      `insert into app_installations (client_id, org_id, all_teams, team_ids, scopes, installed_by)
       values (?, ?, ?, ?::jsonb, ?::jsonb, ?)
       on conflict (client_id, org_id) where status = 'active'
       do update set all_teams = excluded.all_teams, team_ids = excluded.team_ids, scopes = excluded.scopes, updated_at = now()
       returning *`,
      [input.clientId, input.orgId, input.allTeams, JSON.stringify(teamIds), JSON.stringify(scopes), input.installedBy],
    );
    return toInstallation(rows[0]);
  } catch (err) {
    if (isMissingReference(err)) throw new NotFoundError(`no client ${input.clientId} or no organization ${input.orgId}`);
    throw err;
  }
}

/** Marks an active installation removed; returns it, or undefined when it was not active (already removed, unknown). */
export async function markInstallationRemoved(db: Conn, id: IdInput): Promise<Installation | undefined> {
  const installationId = idOf(id);
  if (installationId === undefined) return undefined;
  const [row] = await db('app_installations').where({ id: installationId, status: 'active' }).update({ status: 'removed', updated_at: db.fn.now() }).returning('*');
  return row ? toInstallation(row) : undefined;
}

// ---- installation requests

/** Records a member's request; asking again while one is pending updates its scopes (one pending per app, organization and user). */
export async function addInstallationRequest(db: Conn, input: { clientId: string; orgId: number; userId: number; scopes: string[] }): Promise<InstallationRequest> {
  try {
    const { rows } = await db.raw(
      `insert into installation_requests (client_id, org_id, user_id, scopes)
       values (?, ?, ?, ?::jsonb)
       on conflict (client_id, org_id, user_id) where status = 'pending'
       do update set scopes = excluded.scopes
       returning *`,
      [input.clientId, input.orgId, input.userId, JSON.stringify([...new Set(input.scopes)])],
    );
    return toRequest(rows[0]);
  } catch (err) {
    if (isMissingReference(err)) throw new NotFoundError(`no client ${input.clientId}, organization ${input.orgId} or user ${input.userId}`);
    throw err;
  }
}

export async function pendingRequests(db: Conn, orgId: number): Promise<InstallationRequest[]> {
  return (await db('installation_requests').where({ org_id: orgId, status: 'pending' }).orderBy('id')).map(toRequest);
}

/** Settles every pending request for this app in this organization; returns how many. */
export async function settleRequests(db: Conn, where: { clientId: string; orgId: number }, status: 'approved' | 'dismissed'): Promise<number> {
  return (await db('installation_requests').where({ client_id: where.clientId, org_id: where.orgId, status: 'pending' }).update({ status }).returning('id')).length;
}
