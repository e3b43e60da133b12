// Developer settings: register clients, see and edit them, rotate their secrets. The same service
// layer as the operator scripts (src/clients/), with the signed-in user as owner and actor.
import type { Context } from 'koa';
import type { Db } from '../storage/db.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { createClient, findClient, generateSecret, listActiveSecrets, listClients, revokeSecret } from '../clients/service.ts';
import { hasSecrets, MAX_ACTIVE_SECRETS, MAX_REDIRECT_URIS, type Actor, type ClientRecord } from '../clients/model.ts';
import { editClient, pendingChangeOf } from '../clients/changes.ts';
import { migrationStatus } from '../clients/legacy.ts';
import { SCOPE_CATALOGUE } from '../scopes.ts';
import { field, fields, formBody, page, redirectWithFlash, requireCsrf } from './forms.ts';
import { pageGuards } from './account.ts';
import { newRouter, numericParam } from '../http/router.ts';
import { DEVELOPER_CLIENTS_PATH } from '../http/paths.ts';

const BASE = DEVELOPER_CLIENTS_PATH;

const actor = (ctx: Context): Actor => ({ actor: `user:${ctx.state.user!.id}` });
const uriLines = (text: string) => text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);

export function developerRoutes({ db }: { db: Db }) {
  const router = newRouter();
  const { signedIn } = pageGuards(db);

  /** The signed-in user's own client; anyone else's is "not found" (no hint that it exists). */
  async function ownClient(ctx: Context): Promise<ClientRecord> {
    const client = await findClient(db, ctx.params.id!);
    if (!client || client.ownerUserId !== ctx.state.user!.id) throw new NotFoundError('no such client');
    return client;
  }

  /** The secret id in the path: a number, or this is a 404 (never a database error). */
  function secretIdOf(ctx: Context): number {
    const id = numericParam(ctx.params.secretId);
    if (id === undefined) throw new NotFoundError('no such secret');
    return id;
  }

  async function showClient(ctx: Context, client: ClientRecord, extra: Record<string, unknown> = {}) {
    return page(ctx, 'developer-client', {
      title: client.name,
      client,
      catalogue: SCOPE_CATALOGUE,
      secrets: hasSecrets(client.kind) ? await listActiveSecrets(db, client.clientId) : [],
      maxSecrets: MAX_ACTIVE_SECRETS,
      pending: await pendingChangeOf(db, client.clientId),
      migration: await migrationStatus(db, client),
      maxRedirectUris: MAX_REDIRECT_URIS,
      error: '',
      form: { scopes: client.scopes, redirectUris: client.redirectUris.join('\n') },
      ...extra,
    });
  }

  const showSecret = (ctx: Context, client: ClientRecord, secret: { id: number; value: string }) =>
    page(ctx, 'developer-secret', { title: 'Your client secret', client, secret });

  router.get(BASE, ...signedIn, async (ctx) => {
    const clients = await listClients(db, { ownerUserId: ctx.state.user!.id });
    return page(ctx, 'developer-clients', { title: 'Developer settings', clients });
  });

  const showNew = (ctx: Context, error = '', form: Record<string, unknown> = {}) =>
    page(ctx, 'developer-new', { title: 'Register an OAuth client', catalogue: SCOPE_CATALOGUE, maxRedirectUris: MAX_REDIRECT_URIS, error, form: { name: '', kind: 'confidential', redirectUris: '', scopes: [], ...form } });

  router.get(`${BASE}/new`, ...signedIn, (ctx) => showNew(ctx));

  router.post(BASE, ...signedIn, formBody, requireCsrf, async (ctx) => {
    const form = { name: field(ctx, 'name'), kind: field(ctx, 'kind'), redirectUris: field(ctx, 'redirect_uris'), scopes: fields(ctx, 'scope') };
    try {
      if (form.kind !== 'confidential' && form.kind !== 'public') throw new InputError('choose the kind of client');
      const { client, secret } = await createClient(
        db,
        { name: form.name, kind: form.kind, legacy: false, scopes: form.scopes, redirectUris: uriLines(form.redirectUris), ownerUserId: ctx.state.user!.id },
        actor(ctx),
      );
      if (secret) return showSecret(ctx, client, secret);
      return redirectWithFlash(ctx, `${BASE}/${client.clientId}`, { type: 'ok', text: 'Client registered. It waits for review by an administrator.' });
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      ctx.status = 400;
      return showNew(ctx, err.message, form);
    }
  });

  router.get(`${BASE}/:id`, ...signedIn, async (ctx) => showClient(ctx, await ownClient(ctx)));

  router.post(`${BASE}/:id`, ...signedIn, formBody, requireCsrf, async (ctx) => {
    const client = await ownClient(ctx);
    const form = { scopes: fields(ctx, 'scope'), redirectUris: field(ctx, 'redirect_uris') };
    try {
      const outcome = await editClient(db, client.clientId, { scopes: form.scopes, redirectUris: uriLines(form.redirectUris) }, actor(ctx), { force: field(ctx, 'force') === 'yes' });
      const text = outcome.pending
        ? 'Saved. The changes that widen what the app can do wait for review by an administrator; until then the approved settings stay in force.'
        : 'Saved.';
      return redirectWithFlash(ctx, `${BASE}/${client.clientId}`, { type: 'ok', text });
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      ctx.status = 400;
      return showClient(ctx, client, { error: err.message, form });
    }
  });

  router.post(`${BASE}/:id/secrets`, ...signedIn, formBody, requireCsrf, async (ctx) => {
    const client = await ownClient(ctx);
    try {
      return showSecret(ctx, client, await generateSecret(db, client.clientId, actor(ctx)));
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      return redirectWithFlash(ctx, `${BASE}/${client.clientId}`, { type: 'error', text: `${err.message}.` });
    }
  });

  router.get(`${BASE}/:id/secrets/:secretId/revoke`, ...signedIn, async (ctx) => {
    const client = await ownClient(ctx);
    const secretId = secretIdOf(ctx);
    const secret = (await listActiveSecrets(db, client.clientId)).find((s) => s.id === secretId);
    if (!secret) return redirectWithFlash(ctx, `${BASE}/${client.clientId}`, { type: 'error', text: 'That secret is not active.' });
    return page(ctx, 'developer-revoke', { title: 'Revoke a secret', client, secret });
  });

  router.post(`${BASE}/:id/secrets/:secretId/revoke`, ...signedIn, formBody, requireCsrf, async (ctx) => {
    const client = await ownClient(ctx);
    const secretId = secretIdOf(ctx);
    try {
      await revokeSecret(db, client.clientId, secretId, actor(ctx));
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      return redirectWithFlash(ctx, `${BASE}/${client.clientId}`, { type: 'error', text: 'That secret is not active.' });
    }
    redirectWithFlash(ctx, `${BASE}/${client.clientId}`, { type: 'ok', text: 'Secret revoked. Requests that use it are refused from now on.' });
  });

  return router;
}
