// The organization's apps, for its owners and admins (issue 35 point 1): the app policy, the
// installed apps with their teams and scopes (change teams, uninstall), and members' pending
// requests (approve by installing for chosen teams, or dismiss). Anyone else gets 404, whether
// or not the organization exists. The effects of each change are src/orgs/installations.ts's.
import type { Context } from 'koa';
import type { Db } from '../storage/db.ts';
import type { ClientArtifacts } from '../storage/client-artifacts.ts';
import type { WebhookOutbox } from '../webhooks/outbox.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import { ConflictError, InputError, NotFoundError } from '../errors.ts';
import { parseIntegerId } from '../ids.ts';
import { recordAudit } from '../audit.ts';
import { describeScope } from '../scopes.ts';
import { findClient } from '../clients/service.ts';
import { grantBindings } from '../orgs/bindings.ts';
import { APP_POLICIES, isOrgAdmin, type Installation, type Organization, type Team } from '../orgs/model.ts';
import * as orgs from '../orgs/store.ts';
import { approvalScopes, approveRequest, changeInstallation, dismissRequest, setAppPolicy, StaleApproval, uninstallApp, type InstallationDeps } from '../orgs/installations.ts';
import { field, fields, formBody, page, redirectWithFlash, requireCsrf, type Flash } from './forms.ts';
import { pageGuards } from './account.ts';
import { newRouter } from '../http/router.ts';
import { ORGANIZATIONS_PATH, orgAppsPaths } from '../http/paths.ts';

const POLICY_WORDS: Record<string, string> = {
  allow: 'Allow: members may authorize apps within their own teams; organization scopes need an admin',
  approval: 'Approval: an app reaches the organization only once an admin installed it; members send requests',
  block: 'Block: no app may reach the organization (every installation is removed and its access ends)',
};

export function orgAppsRoutes(deps: { db: Db; outbox: WebhookOutbox; artifacts: ClientArtifacts; records: RecordCache; bindings?: InstallationDeps['bindings'] }) {
  const { db } = deps;
  const changes: InstallationDeps = { db, outbox: deps.outbox, artifacts: deps.artifacts, bindings: deps.bindings ?? grantBindings(db), records: deps.records };
  const router = newRouter();
  const { signedIn } = pageGuards(deps);
  const ROUTES = orgAppsPaths(':orgId');
  const pageOf = (org: Organization) => orgAppsPaths(org.id).page;

  /** The organization in the path, if the signed-in user is its owner or admin; otherwise "not found" (no hint it exists). */
  async function administered(ctx: Context): Promise<Organization> {
    const orgId = parseIntegerId(ctx.params.orgId);
    const org = orgId === undefined ? undefined : await orgs.findOrg(db, orgId);
    if (!org || !isOrgAdmin(await orgs.orgRole(db, org.id, ctx.state.user!.id))) throw new NotFoundError('no such organization');
    return org;
  }

  /** An installation of this organization named in the path (any status): a stale form finds a removed one. */
  async function installationOf(ctx: Context, org: Organization): Promise<Installation> {
    const id = parseIntegerId(ctx.params.installationId);
    const installation = id === undefined ? undefined : await orgs.findInstallation(db, id);
    if (!installation || installation.orgId !== org.id) throw new NotFoundError('no such installation');
    if (installation.status !== 'active') throw new ConflictError('this app was uninstalled meanwhile: nothing was changed');
    return installation;
  }

  /** The teams the form chose: all, or a list of the organization's own (anything else refused). */
  function chosenTeams(ctx: Context, teams: Team[]): { allTeams: boolean; teamIds: number[] } {
    if (field(ctx, 'all_teams') === 'yes') return { allTeams: true, teamIds: [] };
    const own = new Map(teams.map((t) => [String(t.id), t.id]));
    const chosen = fields(ctx, 'team_ids');
    if (chosen.length === 0) throw new InputError('choose the teams the app may reach, or all teams');
    if (chosen.some((t) => !own.has(t))) throw new InputError('only teams of this organization can be chosen');
    return { allTeams: false, teamIds: chosen.map((t) => own.get(t)!) };
  }

  const actor = (ctx: Context) => `user:${ctx.state.user!.id}`;
  const audit = (ctx: Context, action: string, details: Record<string, unknown>) => recordAudit(db, { actor: actor(ctx), action, details });

  router.get(ORGANIZATIONS_PATH, ...signedIn, async (ctx) => {
    const mine = (await orgs.orgsOfUser(db, ctx.state.user!.id)).filter((m) => isOrgAdmin(m.role));
    return page(ctx, 'organizations', { title: 'Organizations you administer', orgs: mine.map((m) => ({ ...m.org, role: m.role, appsPath: orgAppsPaths(m.org.id).page })) });
  });

  /** The apps page; `flash`: a refusal shown on it (a stale approval). */
  async function showPage(ctx: Context, org: Organization, flash?: Flash) {
    const teams = await orgs.teamsOfOrg(db, org.id);
    const teamName = new Map(teams.map((t) => [t.id, t.name]));
    const clientName = async (id: string) => (await findClient(db, id))?.name ?? id;
    const installed = [];
    for (const i of await orgs.listInstallations(db, { orgId: org.id, status: 'active' })) {
      installed.push({ ...i, clientName: await clientName(i.clientId), teamNames: i.teamIds.map((t) => teamName.get(t) ?? `#${t}`), scopeInfo: i.scopes.map(describeScope) });
    }
    const requests = [];
    for (const r of await orgs.pendingRequests(db, org.id)) {
      const user = await db('users').where('id', r.userId).first('email', 'name');
      const client = await findClient(db, r.clientId);
      // An app installed already: its teams are ticked, so that approving adds to them.
      const current = installed.find((i) => i.clientId === r.clientId);
      const teamsNow = current ? { allTeams: current.allTeams, chosen: current.teamIds } : { allTeams: false, chosen: [] };
      // What approving installs now, exactly; the form carries it back (approveRequest compares).
      const { install, added, gone } = approvalScopes(r.scopes, client?.scopes ?? [], current?.scopes);
      requests.push({
        ...r,
        ...teamsNow,
        clientName: client?.name ?? r.clientId,
        userName: user?.name || user?.email || `user ${r.userId}`,
        scopeInfo: r.scopes.map(describeScope),
        approvable: added.length > 0,
        install,
        installInfo: install.map(describeScope),
        goneInfo: gone.map(describeScope),
      });
    }
    return page(ctx, 'org-apps', {
      title: `Apps of ${org.name}`,
      org,
      paths: orgAppsPaths(org.id),
      backPath: ORGANIZATIONS_PATH,
      policies: APP_POLICIES.map((p) => ({ name: p, words: POLICY_WORDS[p] })),
      teams,
      installed,
      requests,
      ...(flash ? { flash } : {}),
    });
  }

  router.get(ROUTES.page, ...signedIn, async (ctx) => showPage(ctx, await administered(ctx)));

  router.post(ROUTES.policy, ...signedIn, formBody, requireCsrf, async (ctx) => {
    const org = await administered(ctx);
    const policy = field(ctx, 'policy');
    const { revoked } = await setAppPolicy(changes, org.id, policy, ctx.state.user!.id);
    if (policy !== org.appPolicy) await audit(ctx, 'org.app_policy_changed', { org_id: org.id, from: org.appPolicy, to: policy, revoked_grants: revoked });
    redirectWithFlash(ctx, pageOf(org), { type: 'ok', text: `The app policy is now “${policy}”.${revoked ? ` ${revoked} authorization(s) ended.` : ''}` });
  });

  router.post(ROUTES.teams(':installationId'), ...signedIn, formBody, requireCsrf, async (ctx) => {
    const org = await administered(ctx);
    const installation = await installationOf(ctx, org);
    const teams = chosenTeams(ctx, await orgs.teamsOfOrg(db, org.id));
    const { revoked } = await changeInstallation(changes, installation.id, teams, ctx.state.user!.id);
    await audit(ctx, 'installation.changed', { installation_id: installation.id, org_id: org.id, client_id: installation.clientId, revoked_grants: revoked });
    redirectWithFlash(ctx, pageOf(org), { type: 'ok', text: `The app's teams were changed.${revoked ? ` ${revoked} authorization(s) beyond them ended.` : ''}` });
  });

  router.post(ROUTES.uninstall(':installationId'), ...signedIn, formBody, requireCsrf, async (ctx) => {
    const org = await administered(ctx);
    const installation = await installationOf(ctx, org);
    const { revoked, changed } = await uninstallApp(changes, installation.id, ctx.state.user!.id);
    if (!changed) throw new ConflictError('this app was uninstalled meanwhile: nothing was changed');
    await audit(ctx, 'installation.removed', { installation_id: installation.id, org_id: org.id, client_id: installation.clientId, revoked_grants: revoked });
    redirectWithFlash(ctx, pageOf(org), { type: 'ok', text: `The app was uninstalled; ${revoked} authorization(s) ended.` });
  });

  router.post(ROUTES.approve(':requestId'), ...signedIn, formBody, requireCsrf, async (ctx) => {
    const org = await administered(ctx);
    const requestId = parseIntegerId(ctx.params.requestId);
    const request = (await orgs.pendingRequests(db, org.id)).find((r) => r.id === requestId);
    if (!request) {
      const settled = requestId !== undefined && (await db('installation_requests').where({ id: requestId, org_id: org.id }).first('id'));
      if (settled) throw new ConflictError('that request was already settled: nothing was changed');
      throw new NotFoundError('no such request');
    }
    const teams = chosenTeams(ctx, await orgs.teamsOfOrg(db, org.id));
    let installation: Installation;
    try {
      ({ installation } = await approveRequest(changes, { request, ...teams, shown: fields(ctx, 'scope'), by: ctx.state.user!.id }));
    } catch (err) {
      if (!(err instanceof StaleApproval)) throw err;
      ctx.status = 409;
      return showPage(ctx, org, { type: 'error', text: err.message, about: String(request.id) });
    }
    const client = await findClient(db, request.clientId);
    await audit(ctx, 'installation.saved', { installation_id: installation.id, org_id: org.id, client_id: installation.clientId, request_id: request.id });
    redirectWithFlash(ctx, pageOf(org), { type: 'ok', text: `${client?.name ?? 'The app'} is installed; the request is approved.` });
  });

  router.post(ROUTES.dismiss(':requestId'), ...signedIn, formBody, requireCsrf, async (ctx) => {
    const org = await administered(ctx);
    const requestId = parseIntegerId(ctx.params.requestId);
    if (requestId === undefined) throw new NotFoundError('no such request');
    if (!(await db('installation_requests').where({ id: requestId, org_id: org.id }).first('id'))) throw new NotFoundError('no such request');
    await dismissRequest(db, org.id, requestId);
    await audit(ctx, 'installation_request.dismissed', { org_id: org.id, request_id: requestId });
    redirectWithFlash(ctx, pageOf(org), { type: 'ok', text: 'The request was dismissed.' });
  });

  return router;
}
