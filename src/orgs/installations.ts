// Installing apps in organizations, and the effects of every change an organization makes
// (docs/organizations.md, "What a change revokes"). Bindings never change (src/orgs/bindings.ts):
// a change REVOKES the bound grants it affects, at once on every instance, and the users
// authorize again. Each change writes its rows and the webhook events they cause in one
// transaction (the outbox, as src/oauth/grants.ts revokeAppAccess does):
//   - installation.removed / installation.changed: once per installation, with the row change;
//   - grant.revoked (org_id, reason): once per user, with the removal of their user_grants rows,
//     after their grants were revoked.
//
// Ordering against a concurrent authorization (the consent page binding a new grant): the
// binder locks the installation row and checks it is active in the binding's transaction
// (lockInstallationForBinding); a change updates that row first and lists the bound grants only
// after committing. So a binding either committed before the change (and its grant is listed and
// revoked — provided the grant was saved before the binding committed, as the consent page does;
// a binder saving it later checks again with grantStillCovered) or sees the change (and is
// refused). A crash between the commit and the revocation is healed by
// repeating the change (uninstalling a removed installation sweeps its grants again).
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import type { ClientArtifacts } from '../storage/client-artifacts.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import type { WebhookOutbox } from '../webhooks/outbox.ts';
import { webhookEvent, type GrantRevokedReason, type InstallationEventData } from '../webhooks/events.ts';
import { findClient } from '../clients/service.ts';
import { scopeSatisfies } from '../scopes.ts';
import { ConflictError, InputError, NotFoundError } from '../errors.ts';
import { APP_POLICIES, isOrgAdmin, type AppPolicy, type Installation, type InstallationRequest, type Organization } from './model.ts';
import * as store from './store.ts';
import type { BoundGrant, GrantBindings } from './bindings.ts';

/** What the changes revoke through: a grant's codes and tokens (client-artifacts.ts), and which grants are bound where (bindings.ts). */
export interface InstallationDeps {
  db: Db;
  outbox: WebhookOutbox;
  artifacts: Pick<ClientArtifacts, 'revokeGrant'>;
  bindings: Pick<GrantBindings, 'grantsBoundTo'>;
  /** Told of a policy change ('org'): the gateway check's closed organizations (src/orgs/closed-orgs.ts). */
  records: Pick<RecordCache, 'announce'>;
}

export interface InstallInput {
  clientId: string;
  orgId: number;
  /** Every team of the organization, present and future (teamIds then ignored). */
  allTeams: boolean;
  teamIds: number[];
  /** The scopes the app may use in the organization; undefined: every scope of the client. */
  scopes?: string[];
  /** The org admin installing; null: the operator. */
  by: number | null;
}

export interface Changed {
  installation: Installation;
  /** Grants revoked by the change. */
  revoked: number;
}

/** Grants revoked concurrently: enough to end an organization's grants fast, few enough for a small pool. */
const REVOKE_AT_ONCE = 16;

const orgLevel = (scope: string) => scope.startsWith('TEAM_') || scope.startsWith('ORG_');
/** Whether an installation's scopes allow a grant's scope: user-level scopes are not the organization's to limit; ORG_X covers TEAM_X. */
const allows = (installed: string[], scope: string) => !orgLevel(scope) || scopeSatisfies(new Set(installed), scope);

export function installationEventData(i: Installation): InstallationEventData {
  return { installation_id: String(i.id), org_id: String(i.orgId), all_teams: i.allTeams, team_ids: i.teamIds.map(String), scopes: i.scopes };
}

async function requireOrg(db: Db | Knex.Transaction, orgId: number): Promise<Organization> {
  const org = await store.findOrg(db, orgId);
  if (!org) throw new NotFoundError(`no organization ${orgId}`);
  return org;
}

/** Refuses, before anything changes, what an installation may not name: see InstallInput. */
async function checkInstall(db: Db, input: InstallInput): Promise<{ teamIds: number[]; scopes: string[] }> {
  const org = await requireOrg(db, input.orgId);
  const client = await findClient(db, input.clientId);
  if (!client) throw new NotFoundError(`no client with id ${input.clientId}`);
  if (client.status !== 'approved') throw new InputError(`client ${client.clientId} is ${client.status}, not approved: only approved apps can be installed`);
  if (org.appPolicy === 'block') throw new InputError(`organization ${org.id} blocks apps (app policy "block"): change its policy first`);
  const scopes = input.scopes ?? client.scopes;
  const foreign = scopes.filter((s) => !client.scopes.includes(s));
  if (foreign.length) throw new InputError(`not scopes of client ${client.clientId}: ${foreign.join(', ')}`);
  if (scopes.length === 0) throw new InputError('an installation needs at least one scope');
  if (input.allTeams) return { teamIds: [], scopes };
  if (input.teamIds.length === 0) throw new InputError('choose the teams the app may reach (at least one), or all teams');
  const own = new Set((await store.teamsOfOrg(db, org.id)).map((t) => t.id));
  const strangers = input.teamIds.filter((t) => !own.has(t));
  if (strangers.length) throw new InputError(`not teams of organization ${org.id}: ${strangers.join(', ')}`);
  return { teamIds: [...new Set(input.teamIds)], scopes };
}

/** The active installation of the app in the organization, locked until the transaction ends. */
async function lockActive(trx: Knex.Transaction, clientId: string, orgId: number): Promise<Installation | undefined> {
  const row = await trx('app_installations').where({ client_id: clientId, org_id: orgId, status: 'active' }).forUpdate().first('id');
  return row ? store.findInstallation(trx, row.id) : undefined;
}

/**
 * For the consent page, in the transaction that binds a new grant to an installation: the
 * installation, if still active, with its row locked against a concurrent change until that
 * transaction ends. The binder must also keep the grant's teams and scopes within what this
 * returns. A removed installation: ConflictError (the caller revokes the grant it made).
 */
export async function lockInstallationForBinding(trx: Knex.Transaction, installationId: number): Promise<Installation> {
  const row = await trx('app_installations').where({ id: installationId, status: 'active' }).forShare().first('id');
  if (!row) throw new ConflictError('the organization uninstalled or changed this app meanwhile: authorize again');
  return (await store.findInstallation(trx, row.id))!;
}

/**
 * For a binder that saves a grant only after binding it to an installation (the order
 * src/orgs/bindings.ts suggests): whether the installation still covers it. A change
 * that committed between the binding and the save listed the binding but found no grant to
 * revoke; so when the installation is no longer active, or lost one of the grant's teams, the
 * grant is revoked here and false returned (the user is told to authorize again).
 */
export async function grantStillCovered(deps: Pick<InstallationDeps, 'db' | 'artifacts'>, installationId: number, grant: { grantId: string; teamIds: number[]; scopes: string[] }): Promise<boolean> {
  const now = await store.findInstallation(deps.db, installationId);
  const covered =
    now?.status === 'active' && (now.allTeams || grant.teamIds.every((t) => now.teamIds.includes(t))) && grant.scopes.every((s) => allows(now.scopes, s));
  if (!covered) await deps.artifacts.revokeGrant(grant.grantId);
  return covered;
}

/**
 * Installs the app in the organization, or changes its active installation; settles pending
 * requests for it there as approved. Grants of the app in the organization beyond the new teams
 * or scopes are revoked (installation_changed), and a change is announced (installation.changed).
 * With `expectId`, the active installation must be that one (a form about it): ConflictError otherwise.
 */
export async function installApp(deps: InstallationDeps, input: InstallInput, expectId?: number): Promise<Changed> {
  const { db, outbox } = deps;
  const checked = await checkInstall(db, input);
  await outbox.prepare(input.clientId);
  const { before, after } = await db.transaction(async (trx) => {
    // The organization's row, then the installation's, in the order setAppPolicy takes them: a
    // policy turned to block meanwhile wins, and a block waits for this install to commit.
    const policy = (await trx('organizations').where('id', input.orgId).forShare().first('app_policy'))?.app_policy;
    if (policy === 'block') throw new ConflictError(`organization ${input.orgId} blocks apps now: nothing was installed`);
    const before = await lockActive(trx, input.clientId, input.orgId);
    if (expectId !== undefined && before?.id !== expectId) throw new ConflictError('this installation was removed meanwhile: nothing was changed; reload the page');
    const after = await store.saveInstallation(trx, { clientId: input.clientId, orgId: input.orgId, allTeams: input.allTeams, teamIds: checked.teamIds, scopes: checked.scopes, installedBy: before ? before.installedBy : input.by });
    await store.settleRequests(trx, { clientId: input.clientId, orgId: input.orgId }, 'approved');
    if (before && changedShape(before, after)) await outbox.enqueue(trx, after.clientId, [webhookEvent(after.clientId, 'installation.changed', installationEventData(after))]);
    return { before, after };
  });
  const revoked = await revokeBeyond(deps, before, after);
  return { installation: after, revoked };
}

/**
 * What approving a member's request installs: the installation's scopes so far (approving never
 * narrows it) and the requested ones, each only while the app still has it. `added`: the requested
 * scopes the app still has (none: nothing to approve); `gone`: those it no longer has.
 */
export function approvalScopes(requested: readonly string[], clientScopes: readonly string[], installed: readonly string[] = []) {
  const offered = new Set(clientScopes);
  const asked = [...new Set(requested)];
  const added = asked.filter((s) => offered.has(s));
  const gone = asked.filter((s) => !offered.has(s));
  return { install: [...new Set([...installed, ...added])].filter((s) => offered.has(s)), added, gone };
}

/** Thrown when a request cannot be approved as the page showed it: the page is shown again (409). */
export class StaleApproval extends ConflictError {}

export interface ApprovalInput {
  request: InstallationRequest;
  allTeams: boolean;
  teamIds: number[];
  /** The scopes the admin's page said would be installed (the form carries them). */
  shown: readonly string[];
  by: number;
}

/**
 * Approves a member's pending request by installing the app for the chosen teams with exactly
 * the scopes approvalScopes gives now — which must be those the page showed: an app (or an
 * installation) changed meanwhile is refused, never installed with more or other scopes. None of
 * the requested scopes left: refused, nothing changes.
 */
export async function approveRequest(deps: InstallationDeps, input: ApprovalInput): Promise<Changed> {
  const { request } = input;
  const client = await findClient(deps.db, request.clientId);
  const current = await store.activeInstallation(deps.db, request.clientId, request.orgId);
  const { install, added } = approvalScopes(request.scopes, client?.scopes ?? [], current?.scopes);
  if (added.length === 0) {
    throw new StaleApproval(`${client?.name ?? 'The app'} no longer offers any of the permissions requested (${request.scopes.join(', ')}): nothing was installed. Dismiss the request; the member can ask again.`);
  }
  if ([...new Set(input.shown)].sort().join(' ') !== [...install].sort().join(' ')) {
    throw new StaleApproval(`The app or its installation changed since the page was shown: nothing was installed. Check what approving installs now, and approve again.`);
  }
  return installApp(deps, { clientId: request.clientId, orgId: request.orgId, allTeams: input.allTeams, teamIds: input.teamIds, scopes: install, by: input.by }, current?.id);
}

const changedShape = (a: Installation, b: Installation) =>
  a.allTeams !== b.allTeams || [...a.teamIds].sort().join() !== [...b.teamIds].sort().join() || [...a.scopes].sort().join() !== [...b.scopes].sort().join();

/** Changes an active installation's teams (and scopes, when given). */
export async function changeInstallation(deps: InstallationDeps, id: number, change: { allTeams: boolean; teamIds: number[]; scopes?: string[] }, by: number | null): Promise<Changed> {
  const current = await store.findInstallation(deps.db, id);
  if (!current) throw new NotFoundError(`no installation ${id}`);
  if (current.status !== 'active') throw new ConflictError(`installation ${id} was removed: nothing was changed`);
  return installApp(deps, { clientId: current.clientId, orgId: current.orgId, allTeams: change.allTeams, teamIds: change.teamIds, scopes: change.scopes ?? current.scopes, by }, id);
}

/**
 * The app's grants in the organization that the installation `after` no longer covers: those
 * bound to a team it lost (or, for a new installation, to a team outside it), and those holding an
 * organization or team scope outside its scopes.
 */
async function revokeBeyond(deps: InstallationDeps, before: Installation | undefined, after: Installation): Promise<number> {
  const { db, bindings } = deps;
  const { clientId, orgId } = after;
  let lostTeams: number[] = [];
  if (!after.allTeams) {
    const had = before && !before.allTeams ? before.teamIds : (await store.teamsOfOrg(db, orgId)).map((t) => t.id);
    lostTeams = had.filter((t) => !after.teamIds.includes(t));
  }
  const lostScopes = before ? before.scopes.filter((s) => !after.scopes.includes(s)) : null;
  const affected = new Map<string, BoundGrant>();
  for (const teamId of lostTeams) for (const g of await bindings.grantsBoundTo({ orgId, clientId, teamId })) affected.set(g.grantId, g);
  if (lostScopes === null || lostScopes.some(orgLevel)) {
    const inOrg = await bindings.grantsBoundTo({ orgId, clientId });
    if (inOrg.length) {
      const rows: { grant_id: string; scopes: string[] }[] = await db('user_grants').whereIn('grant_id', inOrg.map((g) => g.grantId)).select('grant_id', 'scopes');
      const beyond = new Set(rows.filter((r) => r.scopes.some((s) => !allows(after.scopes, s))).map((r) => r.grant_id));
      for (const g of inOrg) if (beyond.has(g.grantId)) affected.set(g.grantId, g);
    }
  }
  return revokeBound(deps, [...affected.values()], 'installation_changed', orgId);
}

/**
 * Uninstalls: the installation marked removed (installation.removed), then every grant of the app
 * bound to the organization revoked (installation_removed). `changed` is false when it was already
 * removed: its grants are swept again (healing an interrupted uninstall), and no event repeats.
 */
export async function uninstallApp(deps: InstallationDeps, id: number, _by: number | null): Promise<Changed & { changed: boolean }> {
  const { db, outbox } = deps;
  const found = await store.findInstallation(db, id);
  if (!found) throw new NotFoundError(`no installation ${id}`);
  await outbox.prepare(found.clientId);
  const removed = await db.transaction(async (trx) => {
    const row = await store.markInstallationRemoved(trx, id);
    if (row) await outbox.enqueue(trx, row.clientId, [webhookEvent(row.clientId, 'installation.removed', installationEventData(row))]);
    return row;
  });
  const revoked = await revokeBound(deps, await deps.bindings.grantsBoundTo({ orgId: found.orgId, clientId: found.clientId }), 'installation_removed', found.orgId);
  return { installation: removed ?? (await store.findInstallation(db, id))!, revoked, changed: removed !== undefined };
}

/**
 * Sets the organization's app policy, with its effects:
 * - block: every active installation removed (installation.removed to each app), pending requests
 *   dismissed, and every grant bound to the organization revoked (org_policy);
 * - approval: grants bound to the organization of apps it has not installed revoked (org_policy),
 *   except its owners' and admins' own;
 * - allow: nothing else.
 */
export async function setAppPolicy(deps: InstallationDeps, orgId: number, policy: string, _by: number | null): Promise<{ org: Organization; revoked: number }> {
  const { db, outbox, bindings } = deps;
  if (!APP_POLICIES.includes(policy as AppPolicy)) throw new InputError(`the app policy must be one of ${APP_POLICIES.join(', ')}: not "${policy}"`);
  await requireOrg(db, orgId);
  const installed = await store.listInstallations(db, { orgId, status: 'active' });
  for (const clientId of new Set(installed.map((i) => i.clientId))) await outbox.prepare(clientId);
  const org = await db.transaction(async (trx) => {
    // The organization's row locked first: an install waiting on it sees the new policy.
    await trx('organizations').where('id', orgId).forUpdate().first('id');
    const org = (await store.setAppPolicyRow(trx, orgId, policy as AppPolicy))!;
    // Every instance's gateway check, at once here and at commit elsewhere.
    await deps.records.announce(trx, 'org', orgId);
    if (policy === 'block') {
      for (const i of await store.listInstallations(trx, { orgId, status: 'active' })) {
        const row = await store.markInstallationRemoved(trx, i.id);
        if (row) await outbox.enqueue(trx, row.clientId, [webhookEvent(row.clientId, 'installation.removed', installationEventData(row))]);
      }
      await trx('installation_requests').where({ org_id: orgId, status: 'pending' }).update({ status: 'dismissed' });
    }
    return org;
  });
  if (policy === 'allow') return { org, revoked: 0 };
  const bound = await bindings.grantsBoundTo({ orgId });
  if (policy === 'block') return { org, revoked: await revokeBound(deps, bound, 'org_policy', orgId) };
  // approval: apps reach the organization through an installation, or an org admin's own grant
  // (the consent page lets an admin authorize without installing, src/orgs/consent-rules.ts).
  const stillInstalled = new Set((await store.listInstallations(db, { orgId, status: 'active' })).map((i) => i.clientId));
  const admins = new Set((await store.orgMembers(db, orgId)).filter((m) => isOrgAdmin(m.role)).map((m) => String(m.userId)));
  return { org, revoked: await revokeBound(deps, bound.filter((g) => !stillInstalled.has(g.clientId) && !admins.has(g.accountId)), 'org_policy', orgId) };
}

/** The user left the organization (and so its teams): their grants bound to it are revoked (membership_ended). */
export async function memberLeftOrg(deps: InstallationDeps, orgId: number, userId: number): Promise<{ revoked: number }> {
  await requireOrg(deps.db, orgId);
  if (!(await store.removeOrgMember(deps.db, orgId, userId))) throw new NotFoundError(`user ${userId} is not a member of organization ${orgId}`);
  return { revoked: await revokeBound(deps, await deps.bindings.grantsBoundTo({ orgId, accountId: String(userId) }), 'membership_ended', orgId) };
}

/**
 * The user left the team: their grants bound to it are revoked (membership_ended), unless they
 * still reach it as an admin or owner of its organization (store.reachableTeams).
 */
export async function memberLeftTeam(deps: InstallationDeps, teamId: number, userId: number): Promise<{ revoked: number }> {
  const team = await store.findTeam(deps.db, teamId);
  if (!team) throw new NotFoundError(`no team ${teamId}`);
  if (!(await store.removeTeamMember(deps.db, teamId, userId))) throw new NotFoundError(`user ${userId} is not a member of team ${teamId}`);
  if (team.orgId !== null && isOrgAdmin(await store.orgRole(deps.db, team.orgId, userId))) return { revoked: 0 };
  const grants = await deps.bindings.grantsBoundTo({ teamId, accountId: String(userId) });
  return { revoked: await revokeBound(deps, grants, 'membership_ended', team.orgId) };
}

/**
 * An org owner or admin became a member: they now reach only their own teams, and organization
 * scopes only through an installation that has them. Their grants bound to the organization
 * beyond that are revoked (membership_ended); nothing when they are still an admin.
 */
export async function memberDemoted(deps: InstallationDeps, orgId: number, userId: number): Promise<{ revoked: number }> {
  const { db, bindings } = deps;
  const role = await store.orgRole(db, orgId, userId);
  if (!role || isOrgAdmin(role)) return { revoked: 0 };
  const accountId = String(userId);
  const reachable = new Set((await store.reachableTeams(db, orgId, userId)).map((t) => t.id));
  const affected = new Map<string, BoundGrant>();
  for (const team of await store.teamsOfOrg(db, orgId)) {
    if (!reachable.has(team.id)) for (const g of await bindings.grantsBoundTo({ orgId, accountId, teamId: team.id })) affected.set(g.grantId, g);
  }
  const inOrg = await bindings.grantsBoundTo({ orgId, accountId });
  if (inOrg.length) {
    const installed = new Map((await store.listInstallations(db, { orgId, status: 'active' })).map((i) => [i.clientId, new Set(i.scopes)]));
    const rows: { grant_id: string; client_id: string; scopes: string[] }[] = await db('user_grants').whereIn('grant_id', inOrg.map((g) => g.grantId)).select('grant_id', 'client_id', 'scopes');
    const beyond = new Set(rows.filter((r) => r.scopes.some((s) => s.startsWith('ORG_') && !scopeSatisfies(installed.get(r.client_id) ?? new Set(), s))).map((r) => r.grant_id));
    for (const g of inOrg) if (beyond.has(g.grantId)) affected.set(g.grantId, g);
  }
  return { revoked: await revokeBound(deps, [...affected.values()], 'membership_ended', orgId) };
}

/**
 * Revokes bound grants (each with its codes and tokens, on every instance), then, per app, removes
 * their user_grants and grant_bindings rows with one grant.revoked per user in the same transaction. Revoking first,
 * as revokeAppAccess does: a failure leaves the rows, and repeating the change finishes it.
 */
async function revokeBound(deps: InstallationDeps, grants: BoundGrant[], reason: GrantRevokedReason, orgId: number | null): Promise<number> {
  if (grants.length === 0) return 0;
  const { db, outbox, artifacts } = deps;
  for (let i = 0; i < grants.length; i += REVOKE_AT_ONCE) await Promise.all(grants.slice(i, i + REVOKE_AT_ONCE).map((g) => artifacts.revokeGrant(g.grantId)));
  const byClient = new Map<string, string[]>();
  for (const g of grants) byClient.set(g.clientId, [...(byClient.get(g.clientId) ?? []), g.grantId]);
  for (const [clientId, grantIds] of byClient) {
    await outbox.prepare(clientId);
    await db.transaction(async (trx) => {
      const removed: { account_id: string }[] = await trx('user_grants').where('client_id', clientId).whereIn('grant_id', grantIds).delete().returning('account_id');
      // The bindings of grants that no longer exist: the next change need not list them again.
      await trx('grant_bindings').whereIn('grant_id', grantIds).delete();
      const users = [...new Set(removed.map((r) => r.account_id))];
      const about = orgId === null ? {} : { org_id: String(orgId) };
      await outbox.enqueue(trx, clientId, users.map((userId) => webhookEvent(clientId, 'grant.revoked', { user_id: userId, reason, ...about })));
    });
  }
  return grants.length;
}

/** A pending request of the organization dismissed by an admin; ConflictError when it is no longer pending. */
export async function dismissRequest(db: Db, orgId: number, requestId: number): Promise<void> {
  const updated = await db('installation_requests').where({ id: requestId, org_id: orgId, status: 'pending' }).update({ status: 'dismissed' }).returning('id');
  if (updated.length === 0) throw new ConflictError('that request was already settled: nothing was changed');
}
