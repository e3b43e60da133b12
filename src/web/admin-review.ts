// Admin review of clients: pending clients and pending changes first; approve, reject (with a
// reason), suspend, reinstate. Administrators only (users set-admin).
import type { Context } from 'koa';
import type { Db } from '../storage/db.ts';
import { listClients, setClientStatus, type ClientDeps } from '../clients/service.ts';
import { CLIENT_STATUSES, clientVersion, decisionsFor, DECISIONS, type DecisionName } from '../clients/model.ts';
import { decideChange, pendingChanges } from '../clients/changes.ts';
import { AppError, NotFoundError } from '../errors.ts';
import { describeScope } from '../scopes.ts';
import { field, formBody, page, redirectWithFlash, requireCsrf } from './forms.ts';
import { adminOf, pageGuards } from './account.ts';
import { newRouter, numericParam } from '../http/router.ts';
import { ADMIN_CLIENTS_PATH } from '../http/paths.ts';

const BASE = ADMIN_CLIENTS_PATH;


export function adminReviewRoutes(deps: ClientDeps & { db: Db }) {
  const router = newRouter();
  const { admin } = pageGuards(deps.db);
  const by = (ctx: Context) => ({ actor: `user:${adminOf(ctx).id}`, reason: field(ctx, 'reason').trim() || undefined });

  router.get(BASE, ...admin, async (ctx) => {
    adminOf(ctx);
    const clients = await listClients(deps.db);
    const changes = await pendingChanges(deps.db);
    clients.sort((a, b) => CLIENT_STATUSES.indexOf(a.status) - CLIENT_STATUSES.indexOf(b.status));
    const names = new Map(clients.map((c) => [c.clientId, c.name]));
    return page(ctx, 'admin-clients', {
      title: 'Review OAuth clients',
      clients: clients.map((c) => ({ ...c, version: clientVersion(c), decisions: decisionsFor(c.status), scopeInfo: c.scopes.map(describeScope) })),
      changes: changes.map((c) => ({ ...c, clientName: names.get(c.clientId) ?? c.clientId, scopeInfo: c.addScopes.map(describeScope) })),
    });
  });

  router.post(`${BASE}/:id/status`, ...admin, formBody, requireCsrf, async (ctx) => {
    const name = field(ctx, 'action');
    const action = Object.hasOwn(DECISIONS, name) ? DECISIONS[name as DecisionName] : undefined;
    if (!action) return redirectWithFlash(ctx, BASE, { type: 'error', text: 'Unknown action.' });
    const decision = by(ctx);
    if (action.to === 'rejected' && !decision.reason) return redirectWithFlash(ctx, BASE, { type: 'error', text: 'Give a reason for the rejection.' });
    try {
      // The form carries the version of the client the administrator saw: approve what was reviewed.
      const client = await setClientStatus(deps, ctx.params.id!, action.to, decision, { version: field(ctx, 'version') });
      redirectWithFlash(ctx, BASE, { type: 'ok', text: `${client.name}: ${action.done}.` });
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      redirectWithFlash(ctx, BASE, { type: 'error', text: `${err.message}.` });
    }
  });

  router.post(`${BASE}/changes/:changeId`, ...admin, formBody, requireCsrf, async (ctx) => {
    const changeId = numericParam(ctx.params.changeId);
    if (changeId === undefined) throw new NotFoundError('no such change');
    const approve = field(ctx, 'decision') === 'approve';
    const decision = by(ctx);
    if (!approve && !decision.reason) return redirectWithFlash(ctx, BASE, { type: 'error', text: 'Give a reason for the rejection.' });
    try {
      const client = await decideChange(deps.db, changeId, approve, decision);
      redirectWithFlash(ctx, BASE, { type: 'ok', text: `${client.name}: change ${approve ? 'approved' : 'rejected'}.` });
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      redirectWithFlash(ctx, BASE, { type: 'error', text: `${err.message}.` });
    }
  });

  return router;
}
