// What a user may grant an app within one organization (issue 35 points 1, 2, 6): pure functions
// over facts read beforehand, so that the consent page (what to offer) and the Allow handler
// (what was posted, checked again from current data) apply the same rules. docs/org-consent.md.
import { scopeSatisfies } from '../scopes.ts';

// Structural copies of the fields of src/orgs/model.ts used here: any of its records fits.
export type AppPolicy = 'allow' | 'approval' | 'block';
export type OrgRole = 'owner' | 'admin' | 'member';
export interface TeamRef {
  id: number;
  name: string;
}
export interface InstallationRef {
  id: number;
  allTeams: boolean;
  teamIds: number[];
  scopes: string[];
}

/** One organization as the user stands in it. */
export interface OrgFacts {
  org: { id: number; name: string; appPolicy: AppPolicy };
  /** The user's organization role; undefined when they are only in some of its teams. */
  role: OrgRole | undefined;
  /** The app's ACTIVE installation in this organization, if any. */
  installation: InstallationRef | null;
  /** The teams the user reaches (an org admin: all of them; a member: their own). */
  reachableTeams: TeamRef[];
  /** Every team of the organization. */
  orgTeams: TeamRef[];
}

export const isOrgAdmin = (role: OrgRole | undefined) => role === 'owner' || role === 'admin';
/** A scope that reaches data beyond the user's own: the ones an organization has a say in. */
export const isOrgScope = (scope: string) => scope.startsWith('TEAM_') || scope.startsWith('ORG_');

export type OrgOutcome =
  /** Not offered: the organization blocks apps, or nothing requested could be granted in it. */
  | { kind: 'blocked'; reason: 'policy_block' | 'nothing_grantable' }
  /** A member, policy `approval`, app not installed: only a request to the admins. */
  | { kind: 'needs_approval'; scopes: string[] }
  | {
      kind: 'grant';
      admin: boolean;
      /** The most that may be granted here, in request order. */
      scopes: string[];
      /** Requested, but not grantable here (beyond the installation or the user's role). */
      withheld: string[];
      /** The teams the user may pick from for team scopes (empty without team scopes). */
      teams: TeamRef[];
      /** An org admin may pick "all teams" (the installation then follows new teams). */
      mayChooseAllTeams: boolean;
      /** Allow creates or updates the organization's installation (an admin with team/org scopes). */
      installs: boolean;
    };

/**
 * What happens if the user authorizes these scopes for this organization. `clientScopes` are the
 * client's scopes as they are now; what it no longer has is never granted.
 */
export function orgOutcome(facts: OrgFacts, clientScopes: readonly string[], requested: readonly string[]): OrgOutcome {
  if (facts.org.appPolicy === 'block') return { kind: 'blocked', reason: 'policy_block' };
  const admin = isOrgAdmin(facts.role);
  const client = new Set(clientScopes);
  const asked = [...new Set(requested)].filter((s) => client.has(s));
  const installation = facts.installation;
  if (!admin && facts.org.appPolicy === 'approval' && !installation) return { kind: 'needs_approval', scopes: asked.filter(isOrgScope) };

  // Teams on offer: an admin chooses among all; a member among their own, within the installation's.
  const installedTeams = (t: TeamRef) => !installation || installation.allTeams || installation.teamIds.includes(t.id);
  const teamPool = admin ? facts.orgTeams : facts.reachableTeams.filter((t) => installedTeams(t) && facts.orgTeams.some((o) => o.id === t.id));
  const installedScopes = new Set(installation?.scopes ?? []);

  const mayGrant = (scope: string): boolean => {
    if (!isOrgScope(scope) || admin) return true;
    if (scope.startsWith('ORG_')) return installedScopes.has(scope);
    // TEAM_: needs a team to reach, and the installation's consent (ORG_X covers TEAM_X) when installed.
    return teamPool.length > 0 && (!installation || scopeSatisfies(installedScopes, scope));
  };
  const scopes = asked.filter(mayGrant);
  const withheld = [...new Set(requested)].filter((s) => !scopes.includes(s));
  if (!scopes.some(isOrgScope)) return { kind: 'blocked', reason: 'nothing_grantable' };
  const teamScopes = scopes.some((s) => s.startsWith('TEAM_'));
  return {
    kind: 'grant',
    admin,
    scopes,
    withheld,
    teams: teamScopes || admin ? teamPool : [],
    mayChooseAllTeams: admin,
    installs: admin,
  };
}

/** What the Allow form posted for the organization part. */
export interface PostedChoice {
  /** Optional scopes left ticked. */
  ticked: readonly string[];
  teamIds: readonly number[];
  allTeams: boolean;
}

export type ChoiceResult =
  | { ok: true; scopes: string[]; teamIds: number[]; allTeams: boolean; installs: boolean }
  | { ok: false; status: 400 | 403; message: string };

/**
 * Checks a posted choice against the outcome computed from current data: teams only from those on
 * offer, "all teams" only for an admin, optional scopes only removable. Nothing here widens.
 */
export function checkChoice(outcome: Extract<OrgOutcome, { kind: 'grant' }>, optional: readonly string[], posted: PostedChoice): ChoiceResult {
  if (posted.allTeams && !outcome.mayChooseAllTeams) return { ok: false, status: 403, message: 'only an administrator of the organization can choose all of its teams' };
  const offered = new Set(outcome.teams.map((t) => t.id));
  const foreign = posted.teamIds.filter((id) => !offered.has(id));
  if (foreign.length) return { ok: false, status: 403, message: 'you cannot choose these teams for this app: you are not in them, or the organization has not installed the app for them' };
  const scopes = grantedScopes(outcome.scopes, optional, posted.ticked);
  if (!scopes.length) return { ok: false, status: 400, message: 'choose at least one permission to share, or deny the request' };
  const teamIds = posted.allTeams ? outcome.teams.map((t) => t.id) : [...new Set(posted.teamIds)];
  if (scopes.some((s) => s.startsWith('TEAM_')) && teamIds.length === 0 && !posted.allTeams) return { ok: false, status: 400, message: 'choose at least one team for this app' };
  return { ok: true, scopes, teamIds, allTeams: posted.allTeams, installs: outcome.installs && scopes.some(isOrgScope) };
}

/** Granular consent (point 6): the required scopes, plus the optional ones left ticked. */
export function grantedScopes(offered: readonly string[], optional: readonly string[], ticked: readonly string[]): string[] {
  const opt = new Set(optional);
  const keep = new Set(ticked);
  return offered.filter((s) => !opt.has(s) || keep.has(s));
}

/** Incremental consent: what the page shows (the new scopes) when merging into a grant that has `held`. */
export function newScopes(requested: readonly string[], held: readonly string[]): string[] {
  const had = new Set(held);
  return requested.filter((s) => !had.has(s));
}
