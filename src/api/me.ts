// /v2/me: the authorized user's profile (spec 4.4), read with PROFILE_READ, changed with PROFILE_WRITE.
import type Router from '@koa/router';
import { koaBody } from 'koa-body';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { findUserById, updateUserProfile, type ProfileChanges } from '../accounts/store.ts';
import { InputError } from '../errors.ts';
import { newRouter } from '../http/router.ts';
import { routePolicy } from './access.ts';
import { rejectToken, sendData } from './responses.ts';
import { ME_PATH } from '../http/paths.ts';

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
  const router = newRouter();
  const policy = routePolicy(provider);

  async function respondWithUser(ctx: Context, user: Awaited<ReturnType<typeof findUserById>>) {
    if (!user) return rejectToken(ctx, true, 'the user of this access token no longer exists');
    sendData(ctx, user);
  }

  router.get(ME_PATH, policy, async (ctx) => respondWithUser(ctx, await findUserById(db, ctx.state.token!.accountId)));

  router.patch(ME_PATH, policy, jsonBody, async (ctx) => {
    // Bad input throws InputError: a 400 invalid_request from the one error responder.
    return respondWithUser(ctx, await updateUserProfile(db, ctx.state.token!.accountId, profileChanges(ctx.request.body)));
  });

  return router;
}
