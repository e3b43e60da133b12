// The operator scripts that change what organizations granted (docs/organizations.md): install and
// uninstall apps, set the app policy, remove members. Their effects (grants revoked, webhooks)
// are src/orgs/installations.ts's; these parse the arguments and print the results.
import { InputError, NotFoundError } from '../errors.ts';
import { parseIntegerId } from '../ids.ts';
import { parseScopeArgs } from '../scopes.ts';
import { recordAudit } from '../audit.ts';
import * as orgs from '../orgs/store.ts';
import { installApp, memberLeftOrg, memberLeftTeam, setAppPolicy, uninstallApp } from '../orgs/installations.ts';
import { installationDeps, installationJson, orgJson, resolveUser, type AdminContext } from './commands.ts';

const deps = installationDeps;

const audit = (ctx: AdminContext, action: string, details: Record<string, unknown>, userId?: number) =>
  recordAudit(ctx.db, { actor: ctx.by.actor, action, userId, details: { ...details, ...(ctx.by.reason ? { reason: ctx.by.reason } : {}) } });

function idOf(value: string, what: string): number {
  const id = parseIntegerId(value.trim());
  if (id === undefined) throw new InputError(`not ${what} id: ${JSON.stringify(value)} (ids are whole numbers)`);
  return id;
}

async function orgIdOf(ctx: AdminContext, ref: string): Promise<number> {
  const org = await orgs.findOrg(ctx.db, ref);
  if (!org) throw new NotFoundError(`no organization ${JSON.stringify(ref)} (organization ids are whole numbers)`);
  return org.id;
}

export interface InstallationsCreateOptions {
  org: string;
  client: string;
  /** Comma- or space-separated team ids (repeatable). */
  teams?: string[];
  allTeams?: boolean;
  scope?: string[];
}

export async function installationsCreate(ctx: AdminContext, options: InstallationsCreateOptions) {
  if (Boolean(options.allTeams) === Boolean(options.teams?.length)) throw new InputError('give exactly one of --teams T[,T…] and --all-teams');
  const orgId = await orgIdOf(ctx, options.org);
  const teamIds = (options.teams ?? []).flatMap((v) => v.split(/[\s,]+/).filter(Boolean)).map((t) => idOf(t, 'a team'));
  const scopes = options.scope?.length ? parseScopeArgs(options.scope) : undefined;
  await ctx.assertStoresReachable?.();
  const { installation, revoked } = await installApp(deps(ctx), { clientId: options.client, orgId, allTeams: Boolean(options.allTeams), teamIds, scopes, by: null });
  await audit(ctx, 'installation.saved', { installation_id: installation.id, org_id: orgId, client_id: installation.clientId, revoked_grants: revoked });
  return installationJson(ctx.db, installation);
}

export async function installationsRemove(ctx: AdminContext, id: string) {
  const installationId = idOf(id, 'an installation');
  if (!(await orgs.findInstallation(ctx.db, installationId))) throw new NotFoundError(`no installation ${installationId} (see installations list)`);
  await ctx.assertStoresReachable?.();
  // Already removed: a success that sweeps its grants again (as clients suspend does), no event.
  const { installation, revoked, changed } = await uninstallApp(deps(ctx), installationId, null);
  if (changed) await audit(ctx, 'installation.removed', { installation_id: installation.id, org_id: installation.orgId, client_id: installation.clientId, revoked_grants: revoked });
  return installationJson(ctx.db, installation);
}

/** The policy with its effects: block ends every installation and bound grant of the organization. */
export async function orgsSetAppPolicyWithEffects(ctx: AdminContext, orgRef: string, policy: string) {
  const orgId = await orgIdOf(ctx, orgRef);
  const before = (await orgs.findOrg(ctx.db, orgId))!;
  await ctx.assertStoresReachable?.();
  const { org, revoked } = await setAppPolicy(deps(ctx), orgId, policy, null);
  if (before.appPolicy !== org.appPolicy) await audit(ctx, 'org.app_policy_changed', { org_id: org.id, from: before.appPolicy, to: org.appPolicy, revoked_grants: revoked });
  return orgJson(org);
}

export async function orgsRemoveMember(ctx: AdminContext, orgRef: string, userRef: string) {
  const orgId = await orgIdOf(ctx, orgRef);
  const user = await resolveUser(ctx.db, userRef);
  await ctx.assertStoresReachable?.();
  const { revoked } = await memberLeftOrg(deps(ctx), orgId, user.id);
  await audit(ctx, 'org.member_removed', { org_id: orgId, revoked_grants: revoked }, user.id);
  return { org_id: orgId, user_id: user.id, removed: true, revoked_grants: revoked };
}

export async function teamsRemoveMember(ctx: AdminContext, teamRef: string, userRef: string) {
  const team = await orgs.findTeam(ctx.db, teamRef);
  if (!team) throw new NotFoundError(`no team ${JSON.stringify(teamRef)} (team ids are whole numbers)`);
  const user = await resolveUser(ctx.db, userRef);
  await ctx.assertStoresReachable?.();
  const { revoked } = await memberLeftTeam(deps(ctx), team.id, user.id);
  await audit(ctx, 'team.member_removed', { team_id: team.id, revoked_grants: revoked }, user.id);
  return { team_id: team.id, user_id: user.id, removed: true, revoked_grants: revoked };
}
