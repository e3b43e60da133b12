// Sign-in and consent pages: the user-facing steps of an authorization request.
// GET shows the page the provider's prompt asks for; each POST finishes one step with a 303.
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { errors } from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { authenticateUser, findUserById } from '../accounts/store.ts';
import { renderPage } from '../views.ts';
import { describeScope } from './scopes.ts';
import { INTERACTION_PATH } from './provider.ts';

type Details = Awaited<ReturnType<Provider['interactionDetails']>>;

const formBody = koaBody({ multipart: false, json: false, urlencoded: true, formLimit: '16kb' });

function field(ctx: Context, name: string): string {
  const value = (ctx.request.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

export function interactionRoutes(provider: Provider, db: Db): Router {
  const router = new Router({ prefix: INTERACTION_PATH });

  // The interaction named in the URL must be the one bound to this browser's cookie.
  async function loadInteraction(ctx: Context): Promise<Details> {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    if (details.uid !== ctx.params.uid) throw new errors.SessionNotFound('interaction mismatch');
    return details;
  }

  async function finish(ctx: Context, result: Parameters<Provider['interactionResult']>[2], merge: boolean) {
    const redirectTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: merge });
    ctx.status = 303;
    ctx.redirect(redirectTo);
  }

  async function clientName(details: Details): Promise<string> {
    const client = await provider.Client.find(String(details.params.client_id));
    return client?.clientName ?? String(details.params.client_id);
  }

  async function showLogin(ctx: Context, details: Details, error = '', email = '') {
    ctx.type = 'html';
    ctx.body = await renderPage('login', {
      title: 'Sign in',
      clientName: await clientName(details),
      action: `${INTERACTION_PATH}/${details.uid}/login`,
      abortAction: `${INTERACTION_PATH}/${details.uid}/abort`,
      error,
      email,
    });
  }

  router.get('/:uid', async (ctx) => {
    const details = await loadInteraction(ctx);
    if (details.prompt.name === 'login') return showLogin(ctx, details);

    const user = await findUserById(db, String(details.session?.accountId));
    const requested = String(details.params.scope ?? '').split(' ').filter(Boolean);
    ctx.type = 'html';
    ctx.body = await renderPage('consent', {
      title: 'Authorize access',
      clientName: await clientName(details),
      userEmail: user?.email ?? '',
      scopes: requested.map(describeScope),
      fullAccess: requested.length === 0,
      action: `${INTERACTION_PATH}/${details.uid}/confirm`,
      denyAction: `${INTERACTION_PATH}/${details.uid}/abort`,
    });
  });

  router.post('/:uid/login', formBody, async (ctx) => {
    const details = await loadInteraction(ctx);
    if (details.prompt.name !== 'login') throw new errors.InvalidRequest('this step does not expect a sign-in');
    const email = field(ctx, 'email');
    const user = email ? await authenticateUser(db, email, field(ctx, 'password')) : undefined;
    if (!user) {
      ctx.status = 401;
      return showLogin(ctx, details, 'The email or password is not correct.', email);
    }
    await finish(ctx, { login: { accountId: String(user.id) } }, false);
  });

  router.post('/:uid/confirm', formBody, async (ctx) => {
    const details = await loadInteraction(ctx);
    if (details.prompt.name !== 'consent') throw new errors.InvalidRequest('this step does not expect a consent');
    const accountId = String(details.session?.accountId);
    const clientId = String(details.params.client_id);
    const grant = (details.grantId && (await provider.Grant.find(details.grantId))) || new provider.Grant({ accountId, clientId });
    const missing = (details.prompt.details.missingOIDCScope as string[] | undefined) ?? [];
    if (missing.length) grant.addOIDCScope(missing.join(' '));
    const grantId = await grant.save();
    await finish(ctx, { consent: { grantId } }, true);
  });

  router.post('/:uid/abort', formBody, async (ctx) => {
    await loadInteraction(ctx);
    await finish(ctx, { error: 'access_denied', error_description: 'The user denied the request.' }, false);
  });

  return router;
}
