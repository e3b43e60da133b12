// Admin review of clients: a table by status (the pending queue first), searched and paged in SQL;
// approve, reject (with a reason), suspend (after its own confirmation page), reinstate; and the
// pending changes of approved clients. Administrators only (users set-admin).
import type { Context } from 'koa';
import type { Db } from '../storage/db.ts';
import { findClient, reviewClients, setClientStatus, type ClientDeps } from '../clients/service.ts';
import type { ReviewRow } from '../clients/repository.ts';
import { clientVersion } from '../clients/model.ts';
import { decideChange, pendingChangeOf, pendingChanges } from '../clients/changes.ts';
import { findUserById } from '../accounts/store.ts';
import { AppError, NotFoundError } from '../errors.ts';
import { describeScope } from '../scopes.ts';
import { field, formBody, page, redirectWithFlash, requireCsrf, takeFlash } from './forms.ts';
import { adminOf, pageGuards } from './account.ts';
import { DEFAULT_VIEW, parseReviewView, PER_PAGE, TABS, viewFromForm, viewQuery, type ReviewView } from './review-view.ts';
import { newRouter } from '../http/router.ts';
import { parseIntegerId } from '../ids.ts';
import { ADMIN_CLIENTS_PATH } from '../http/paths.ts';
import { singleUse } from './single-use.ts';
import type { CachedDb } from '../storage/record-cache.ts';
import { decisionsFor, DECISIONS, mayMove, SOURCE_NAMES, type DecisionName } from '../directory/status.ts';
import { directoryClient, findDirectoryClient } from '../client-lookup/lookup.ts';
import { blockCimdHost, blockedHosts, decideCimdChange, decideCimdClient, listCimdClients, unblockCimdHost } from '../review/review.ts';

const BASE = ADMIN_CLIENTS_PATH;
/** Metadata-document clients listed on the page (the scripts list them all: clients list-documents). */
const DOCUMENT_CLIENTS_SHOWN = 100;

const toItem = (row: ReviewRow) => ({
  ...row.client,
  ownerEmail: row.ownerEmail,
  hasPendingChange: row.hasPendingChange,
  version: clientVersion(row.client),
  decisions: decisionsFor(row.client.status),
  scopeInfo: row.client.scopes.map(describeScope),
});

/** One client as a row of the table, wherever it is: the item a refusal concerns may be on no page shown. */
async function reviewRowOf(users: CachedDb, clientId: string): Promise<ReviewRow | undefined> {
  const { db } = users;
  const client = await findClient(db, clientId);
  if (!client) return undefined;
  const owner = client.ownerUserId === null ? undefined : await findUserById(users, client.ownerUserId);
  return { client, ownerEmail: owner?.email ?? null, hasPendingChange: (await pendingChangeOf(db, clientId)) !== undefined };
}

/** Who asked for a change, as people read it: the e-mail address for `user:<id>`. */
async function actorNames(db: Db, actors: string[]): Promise<Map<string, string>> {
  const ids = [...new Set(actors.map((a) => parseIntegerId(a.match(/^user:(\d+)$/)?.[1])).filter((id) => id !== undefined))];
  const users: Array<{ id: number; email: string }> = ids.length ? await db('users').whereIn('id', ids).select('id', 'email') : [];
  return new Map(users.map((u) => [`user:${u.id}`, u.email]));
}

const suspendPath = (clientId: string, version: string, view: ReviewView) =>
  `${BASE}/${encodeURIComponent(clientId)}/suspend?${new URLSearchParams({ version, back: viewQuery(view).slice(1) })}`;

export function adminReviewRoutes(deps: ClientDeps & { db: Db }) {
  const router = newRouter();
  /** Why an id sent to the registry's table has no row there: another kind's (decided in its own section), or none. */
  const notInTable = async (id: string) => {
    const other = await findDirectoryClient(deps.db, id);
    return other ? `${id} is a ${SOURCE_NAMES[other.source]}: decide on it under "Apps described by metadata documents".` : 'There is no such client.';
  };
  const { admin } = pageGuards(deps);
  const by = (ctx: Context) => ({ actor: `user:${adminOf(ctx).id}`, reason: field(ctx, 'reason').trim() || undefined });

  router.get(BASE, ...admin, async (ctx) => {
    adminOf(ctx);
    const view = parseReviewView(ctx.query);
    const flash = takeFlash(ctx);
    const listing = await reviewClients(deps.db, { status: view.tab, search: view.search, offset: (view.page - 1) * PER_PAGE, limit: PER_PAGE });
    const clients = listing.rows.map((row) => ({ ...toItem(row), pinned: false }));
    // A refusal shows on its item; an item not on this page (it moved to another tab) comes first.
    const refusedId = flash?.type === 'error' ? flash.about : undefined;
    if (refusedId && !clients.some((c) => c.clientId === refusedId)) {
      const row = await reviewRowOf(deps, refusedId);
      if (row) clients.unshift({ ...toItem(row), pinned: true });
    }
    const changes = view.tab === 'pending' && view.page === 1 ? await pendingChanges(deps.db) : [];
    // Metadata-document clients (docs/agents.md), unreviewed first, with their hosts; and the blocked hosts.
    const documents = { clients: await listCimdClients(deps.db, { limit: DOCUMENT_CLIENTS_SHOWN }), hosts: await blockedHosts(deps.db) };
    const requesters = await actorNames(deps.db, changes.map((c) => c.requestedBy));
    const counts = { ...listing.counts, all: Object.values(listing.counts).reduce((a, b) => a + b, 0) };
    const total = counts[view.tab];
    return page(ctx, 'admin-clients', {
      title: 'Review OAuth clients',
      flash,
      refusedId,
      view,
      tabs: TABS.map((tab) => ({ tab, href: `${BASE}${viewQuery(view, { tab, page: 1 })}`, count: counts[tab] })),
      viewField: viewQuery(view).slice(1),
      total,
      pages: { first: (view.page - 1) * PER_PAGE + 1, last: Math.min(view.page * PER_PAGE, total), count: Math.max(1, Math.ceil(total / PER_PAGE)) },
      pageHref: (n: number) => `${BASE}${viewQuery(view, { page: n })}`,
      suspendHref: (c: { clientId: string; version: string }) => suspendPath(c.clientId, c.version, view),
      clients,
      changes: changes.map((c) => ({ ...c, requester: requesters.get(c.requestedBy) ?? c.requestedBy, scopeInfo: c.addScopes.map(describeScope) })),
      documents,
      changeNames: new Map((await Promise.all(changes.map((c) => findClient(deps.db, c.clientId)))).flatMap((c) => (c ? [[c.clientId, c.name] as const] : []))),
    });
  });

  // Suspending ends every user's access: the administrator confirms it here, naming the client.
  router.get(`${BASE}/:id/suspend`, ...admin, async (ctx) => {
    adminOf(ctx);
    const back = viewFromForm(typeof ctx.query.back === 'string' ? ctx.query.back : '');
    const client = await findClient(deps.db, ctx.params.id!);
    if (!client) throw new NotFoundError('no such client');
    if (!mayMove('registry', client.status, 'suspended')) {
      const text = `${client.name}: only an approved client can be suspended; this one is ${client.status}.`;
      return redirectWithFlash(ctx, `${BASE}${viewQuery(back)}`, { type: 'error', text, about: client.clientId });
    }
    const owner = client.ownerUserId === null ? undefined : await findUserById(deps, client.ownerUserId);
    // The version the table showed: confirming suspends what the administrator saw there.
    const version = typeof ctx.query.version === 'string' && /^[\w-]{1,64}$/.test(ctx.query.version) ? ctx.query.version : clientVersion(client);
    return page(ctx, 'admin-suspend', {
      title: `Suspend ${client.name}?`,
      client,
      ownerEmail: owner?.email ?? null,
      version,
      viewField: viewQuery(back).slice(1),
      cancelHref: `${BASE}${viewQuery(back)}`,
    });
  });

  // A decision sent twice (reload, second click) is made once; the repeat says so (src/web/single-use.ts).
  const once = singleUse(deps.db, { already: 'This form was already sent: the decision was made then; nothing was changed now.', fallback: () => BASE });
  router.post(`${BASE}/:id/status`, ...admin, formBody, requireCsrf, once, async (ctx) => {
    const view = viewFromForm(field(ctx, 'view'));
    const back = `${BASE}${viewQuery(view)}`;
    const client = await findClient(deps.db, ctx.params.id!);
    if (!client) return redirectWithFlash(ctx, back, { type: 'error', text: await notInTable(ctx.params.id!) });
    const refuse = (why: string) => redirectWithFlash(ctx, back, { type: 'error', text: `${client.name}: ${why}.`, about: client.clientId });
    const name = field(ctx, 'action');
    const action = Object.hasOwn(DECISIONS, name) ? DECISIONS[name as DecisionName] : undefined;
    if (!action) return refuse('unknown action');
    const decision = by(ctx);
    if (action.to === 'rejected' && !decision.reason) return refuse('give a reason for the rejection');
    // Without the confirmation page's field, a suspension only leads to that page.
    if (name === 'suspend' && field(ctx, 'confirm') !== 'yes') {
      ctx.status = 303;
      return ctx.redirect(suspendPath(client.clientId, field(ctx, 'version') || clientVersion(client), view));
    }
    try {
      // The form carries the version of the client the administrator saw: decide on what was reviewed.
      const changed = await setClientStatus(deps, client.clientId, action.to, decision, { version: field(ctx, 'version') });
      redirectWithFlash(ctx, back, { type: 'ok', text: `${changed.name}: ${action.done}.` });
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      refuse(err.message);
    }
  });

  // A metadata-document client: approve (full tier), reject, decide its pending change, or block its host. Its id is a URL:
  // it travels in the form, not the path.
  router.post(`${BASE}/documents`, ...admin, formBody, requireCsrf, once, async (ctx) => {
    const back = `${BASE}#metadata-documents`;
    const clientId = field(ctx, 'client_id');
    const action = field(ctx, 'action');
    const decision = by(ctx);
    try {
      // The fingerprint of what the page showed: a decision on what was reviewed (src/review/review.ts).
      const seen = { seen: field(ctx, 'seen') || undefined };
      if (['approve', 'reject', 'approve_change', 'reject_change'].includes(action)) {
        // Any id (a URL, a registered id, garbage): the directory's one answer, never a query error.
        const client = await directoryClient(deps.db, clientId);
        if (client.source === 'registry') return redirectWithFlash(ctx, back, { type: 'error', text: `${clientId} is a registry client: decide on it in the table above.` });
      }
      if (action === 'approve' || action === 'reject') {
        if (action === 'reject' && !decision.reason) return redirectWithFlash(ctx, back, { type: 'error', text: 'Give a reason for the rejection.' });
        await decideCimdClient(deps, clientId, action === 'approve' ? 'approved' : 'rejected', decision, seen);
        return redirectWithFlash(ctx, back, { type: 'ok', text: `${clientId}: ${action === 'approve' ? 'approved' : 'rejected: its tokens were revoked'}.` });
      }
      if (action === 'approve_change' || action === 'reject_change') {
        const approve = action === 'approve_change';
        if (!approve && !decision.reason) return redirectWithFlash(ctx, back, { type: 'error', text: 'Give a reason for the rejection.' });
        await decideCimdChange(deps, clientId, approve, decision, seen);
        return redirectWithFlash(ctx, back, { type: 'ok', text: `${clientId}: change ${approve ? 'approved' : 'rejected: it keeps what was approved'}.` });
      }
      if (action === 'block_host') {
        const { host } = await blockCimdHost(deps, field(ctx, 'host'), decision);
        return redirectWithFlash(ctx, back, { type: 'ok', text: `${host}: blocked; every app it describes is refused and their tokens were revoked.` });
      }
      if (action === 'unblock_host') {
        const { host } = await unblockCimdHost(deps, field(ctx, 'host'), decision);
        return redirectWithFlash(ctx, back, { type: 'ok', text: `${host}: no longer blocked.` });
      }
      return redirectWithFlash(ctx, back, { type: 'error', text: 'Unknown action.' });
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      return redirectWithFlash(ctx, back, { type: 'error', text: `${err.message}.` });
    }
  });

  router.post(`${BASE}/changes/:changeId`, ...admin, formBody, requireCsrf, once, async (ctx) => {
    const changeId = parseIntegerId(ctx.params.changeId);
    if (changeId === undefined) throw new NotFoundError('no such change');
    const approve = field(ctx, 'decision') === 'approve';
    const decision = by(ctx);
    const back = `${BASE}${viewQuery(DEFAULT_VIEW)}`;
    if (!approve && !decision.reason) return redirectWithFlash(ctx, back, { type: 'error', text: 'Give a reason for the rejection.' });
    try {
      const client = await decideChange(deps, changeId, approve, decision);
      redirectWithFlash(ctx, back, { type: 'ok', text: `${client.name}: change ${approve ? 'approved' : 'rejected'}.` });
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      redirectWithFlash(ctx, back, { type: 'error', text: `${err.message}.` });
    }
  });

  return router;
}
