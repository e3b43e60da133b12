// What organizations, teams, memberships and app installations are (docs/organizations.md).
// Spelled once here; the store, the consent page, the scripts and the token binding read them.

/** allow: members authorize apps within their rights; approval: only once an admin installed it; block: never. */
export type AppPolicy = 'allow' | 'approval' | 'block';
export type OrgRole = 'owner' | 'admin' | 'member';
export type TeamRole = 'admin' | 'member';

export const APP_POLICIES: readonly AppPolicy[] = ['allow', 'approval', 'block'];
export const ORG_ROLES: readonly OrgRole[] = ['owner', 'admin', 'member'];
export const TEAM_ROLES: readonly TeamRole[] = ['admin', 'member'];

export interface Organization {
  id: number;
  name: string;
  appPolicy: AppPolicy;
  logoUrl: string | null;
}

/** A team of an organization, or (orgId null) a team of none. */
export interface Team {
  id: number;
  name: string;
  orgId: number | null;
}

export interface OrgMembership {
  orgId: number;
  userId: number;
  role: OrgRole;
}

export interface TeamMembership {
  teamId: number;
  userId: number;
  role: TeamRole;
}

/** An app installed for an organization: which teams (all of them, or a list) and scopes it may reach. */
export interface Installation {
  id: number;
  clientId: string;
  orgId: number;
  allTeams: boolean;
  teamIds: number[];
  scopes: string[];
  status: 'active' | 'removed';
  /** The org admin who installed it; null when an operator did. */
  installedBy: number | null;
  installedAt: Date;
}

/** A member's request that the organization's admins install an app (policy `approval`). */
export interface InstallationRequest {
  id: number;
  clientId: string;
  orgId: number;
  userId: number;
  scopes: string[];
  status: 'pending' | 'approved' | 'dismissed';
  createdAt: Date;
}

export const isOrgAdmin = (role: OrgRole | undefined) => role === 'owner' || role === 'admin';
