// Admin review of clients: pending clients and pending changes first; approve, reject (with a
// reason), suspend, reinstate. Administrators only (users set-admin).
import Router from '@koa/router';
import type { Context } from 'koa';
import type { Db } from '../storage/db.ts';
import type { ClientDeps } from '../clients/lifecycle.ts';
import { setClientStatus } from '../clients/lifecycle.ts';
import { listClients, type ClientStatus } from '../clients/store.ts';
import { decideChange, pendingChanges } from '../clients/changes.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { describeScope } from '../oauth/scopes.ts';
import { field, formBody, page, redirectWithFlash, requireCsrf } from './forms.ts';
import { requireAdmin, requireUser } from './account.ts';

const BASE = '/admin/oauth-clients';

const ACTIONS: Record<string, { to: ClientStatus; done: string }> = {
  approve: { to: 'approved', done: 'approved' },
  reject: { to: 'rejected', done: 'rejected' },
  suspend: { to: 'suspended', done: 'suspended: its tokens stopped working' },
  reinstate: { to: 'approved', done: 'reinstated' },
};

export function adminReviewRoutes(deps: ClientDeps & { db: Db }): Router {
  const router = new Router({ prefix: BASE });
  router.use(requireUser, requireAdmin);
  const by = (ctx: Context) => ({ actor: `user:${ctx.state.user!.id}`, reason: field(ctx, 'reason').trim() || undefined });

  router.get('/', async (ctx) => {
    const clients = await listClients(deps.db);
    const changes = await pendingChanges(deps.db);
    const order: ClientStatus[] = ['pending', 'approved', 'suspended', 'rejected'];
    clients.sort((a, b) => order.indexOf(a.status) - order.indexOf(b.status));
    const names = new Map(clients.map((c) => [c.clientId, c.name]));
    return page(ctx, 'admin-clients', {
      title: 'Review OAuth clients',
      clients: clients.map((c) => ({ ...c, scopeInfo: c.scopes.map(describeScope) })),
      changes: changes.map((c) => ({ ...c, clientName: names.get(c.clientId) ?? c.clientId, scopeInfo: c.addScopes.map(describeScope) })),
    });
  });

  router.post('/:id/status', formBody, requireCsrf, async (ctx) => {
    const action = ACTIONS[field(ctx, 'action')];
    if (!action) return redirectWithFlash(ctx, BASE, { type: 'error', text: 'Unknown action.' });
    const decision = by(ctx);
    if (action.to === 'rejected' && !decision.reason) return redirectWithFlash(ctx, BASE, { type: 'error', text: 'Give a reason for the rejection.' });
    try {
      const client = await setClientStatus(deps, ctx.params.id!, action.to, decision);
      redirectWithFlash(ctx, BASE, { type: 'ok', text: `${client.name}: ${action.done}.` });
    } catch (err) {
      if (!(err instanceof InputError || err instanceof NotFoundError)) throw err;
      redirectWithFlash(ctx, BASE, { type: 'error', text: `${err.message}.` });
    }
  });

  router.post('/changes/:changeId', formBody, requireCsrf, async (ctx) => {
    const approve = field(ctx, 'decision') === 'approve';
    const decision = by(ctx);
    if (!approve && !decision.reason) return redirectWithFlash(ctx, BASE, { type: 'error', text: 'Give a reason for the rejection.' });
    try {
      const client = await decideChange(deps.db, Number(ctx.params.changeId), approve, decision);
      redirectWithFlash(ctx, BASE, { type: 'ok', text: `${client.name}: change ${approve ? 'approved' : 'rejected'}.` });
    } catch (err) {
      if (!(err instanceof InputError || err instanceof NotFoundError)) throw err;
      redirectWithFlash(ctx, BASE, { type: 'error', text: `${err.message}.` });
    }
  });

  return router;
}
