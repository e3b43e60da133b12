// /v2/me: the authorized user's profile (spec 4.4), read with PROFILE_READ, changed with PROFILE_WRITE.
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { findUserById, updateUserProfile, type ProfileChanges } from '../accounts/store.ts';
import { InputError } from '../errors.ts';
import { routePolicy } from './access.ts';
import { rejectToken, sendData, sendError } from './responses.ts';

const jsonBody = koaBody({ json: true, jsonStrict: true, urlencoded: false, multipart: false, text: false, jsonLimit: '16kb' });

function profileChanges(body: unknown): ProfileChanges {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InputError('the body must be a JSON object');
  const { name, timeZone } = body as Record<string, unknown>;
  if (name === undefined && timeZone === undefined) throw new InputError('nothing to change: send name and/or timeZone');
  if (name !== undefined && typeof name !== 'string') throw new InputError('name must be a string');
  if (timeZone !== undefined && typeof timeZone !== 'string') throw new InputError('timeZone must be a string');
  return { ...(name !== undefined ? { name } : {}), ...(timeZone !== undefined ? { timeZone } : {}) };
}

export function meRoutes(provider: Provider, db: Db): Router {
  const router = new Router({ prefix: '/v2' });
  const policy = routePolicy(provider);

  async function respondWithUser(ctx: Context, user: Awaited<ReturnType<typeof findUserById>>) {
    if (!user) return rejectToken(ctx, true, 'the user of this access token no longer exists');
    sendData(ctx, user);
  }

  router.get('/me', policy, async (ctx) => respondWithUser(ctx, await findUserById(db, ctx.state.token!.accountId)));

  router.patch('/me', policy, jsonBody, async (ctx) => {
    let changes: ProfileChanges;
    try {
      changes = profileChanges(ctx.request.body);
      return respondWithUser(ctx, await updateUserProfile(db, ctx.state.token!.accountId, changes));
    } catch (err) {
      if (err instanceof InputError) return sendError(ctx, 400, 'invalid_request', err.message);
      throw err;
    }
  });

  return router;
}
