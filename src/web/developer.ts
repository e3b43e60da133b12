// Developer settings: register clients, see and edit them, rotate their secrets. The same service
// layer as the operator scripts (src/clients/), with the signed-in user as owner and actor.
import Router from '@koa/router';
import type { Context } from 'koa';
import type { Db } from '../storage/db.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { createClient, findClient, generateSecret, listActiveSecrets, listClients, revokeSecret, type Actor, type ClientRecord } from '../clients/store.ts';
import { editClient, pendingChangeOf } from '../clients/changes.ts';
import { migrationStatus } from '../clients/legacy.ts';
import { MAX_REDIRECT_URIS } from '../clients/validate.ts';
import { MAX_ACTIVE_SECRETS } from '../clients/store.ts';
import { SCOPE_CATALOGUE } from '../oauth/scopes.ts';
import { field, fields, formBody, page, redirectWithFlash, requireCsrf } from './forms.ts';
import { requireUser } from './account.ts';

const BASE = '/settings/developer/oauth-clients';

const actor = (ctx: Context): Actor => ({ actor: `user:${ctx.state.user!.id}` });
const uriLines = (text: string) => text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);

export function developerRoutes({ db }: { db: Db }): Router {
  const router = new Router({ prefix: BASE });
  router.use(requireUser);

  /** The signed-in user's own client; anyone else's is "not found" (no hint that it exists). */
  async function ownClient(ctx: Context): Promise<ClientRecord> {
    const client = await findClient(db, ctx.params.id!);
    if (!client || client.ownerUserId !== ctx.state.user!.id) throw Object.assign(new NotFoundError('no such client'), { status: 404 });
    return client;
  }

  async function showClient(ctx: Context, client: ClientRecord, extra: Record<string, unknown> = {}) {
    return page(ctx, 'developer-client', {
      title: client.name,
      client,
      catalogue: SCOPE_CATALOGUE,
      secrets: client.kind === 'confidential' ? await listActiveSecrets(db, client.clientId) : [],
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

  router.get('/', async (ctx) => {
    const clients = await listClients(db, { ownerUserId: ctx.state.user!.id });
    return page(ctx, 'developer-clients', { title: 'Developer settings', clients });
  });

  const showNew = (ctx: Context, error = '', form: Record<string, unknown> = {}) =>
    page(ctx, 'developer-new', { title: 'Register an OAuth client', catalogue: SCOPE_CATALOGUE, maxRedirectUris: MAX_REDIRECT_URIS, error, form: { name: '', kind: 'confidential', redirectUris: '', scopes: [], ...form } });

  router.get('/new', (ctx) => showNew(ctx));

  router.post('/', formBody, requireCsrf, async (ctx) => {
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

  router.get('/:id', async (ctx) => showClient(ctx, await ownClient(ctx)));

  router.post('/:id', formBody, requireCsrf, async (ctx) => {
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

  router.post('/:id/secrets', formBody, requireCsrf, async (ctx) => {
    const client = await ownClient(ctx);
    try {
      return showSecret(ctx, client, await generateSecret(db, client.clientId, actor(ctx)));
    } catch (err) {
      if (!(err instanceof InputError)) throw err;
      return redirectWithFlash(ctx, `${BASE}/${client.clientId}`, { type: 'error', text: `${err.message}.` });
    }
  });

  router.get('/:id/secrets/:secretId/revoke', async (ctx) => {
    const client = await ownClient(ctx);
    const secret = (await listActiveSecrets(db, client.clientId)).find((s) => String(s.id) === ctx.params.secretId);
    if (!secret) return redirectWithFlash(ctx, `${BASE}/${client.clientId}`, { type: 'error', text: 'That secret is not active.' });
    return page(ctx, 'developer-revoke', { title: 'Revoke a secret', client, secret });
  });

  router.post('/:id/secrets/:secretId/revoke', formBody, requireCsrf, async (ctx) => {
    const client = await ownClient(ctx);
    try {
      await revokeSecret(db, client.clientId, Number(ctx.params.secretId), actor(ctx));
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      return redirectWithFlash(ctx, `${BASE}/${client.clientId}`, { type: 'error', text: 'That secret is not active.' });
    }
    redirectWithFlash(ctx, `${BASE}/${client.clientId}`, { type: 'ok', text: 'Secret revoked. Requests that use it are refused from now on.' });
  });

  return router;
}
