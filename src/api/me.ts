// /v2/me: the authorized user's profile (docs/endpoints.md), read with PROFILE_READ, changed with PROFILE_WRITE.
// Reading is a hot path, answered by the hot-path listener (listener.ts) when the request carries no
// body; the Koa routes answer the rest.
import type Router from '@koa/router';
import { koaBody } from 'koa-body';
import type { Context } from 'koa';
import { findUserById, updateUserProfile, type ProfileChanges, type User } from '../accounts/store.ts';
import { InputError } from '../errors.ts';
import { newRouter } from '../http/router.ts';
import { decideRequest, formHasToken, koaRequest, refuse, routePolicy, type ApiRequest, type VerifyToken } from './access.ts';
import { dataAnswer, rejectToken, reply, type Answer } from './responses.ts';
import { ME_PATH } from '../http/paths.ts';
import type { CachedDb } from '../storage/record-cache.ts';

const jsonBody = koaBody({ json: true, jsonStrict: true, urlencoded: false, multipart: false, text: false, jsonLimit: '16kb' });

function profileChanges(body: unknown): ProfileChanges {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InputError('the body must be a JSON object');
  const { name, timeZone } = body as Record<string, unknown>;
  if (name === undefined && timeZone === undefined) throw new InputError('nothing to change: send name and/or timeZone');
  if (name !== undefined && typeof name !== 'string') throw new InputError('name must be a string');
  if (timeZone !== undefined && typeof timeZone !== 'string') throw new InputError('timeZone must be a string');
  return { ...(name !== undefined ? { name } : {}), ...(timeZone !== undefined ? { timeZone } : {}) };
}

/** The user, or a 401 (naming the platform API's metadata, RFC 9728) when the token's user is gone. */
const userAnswer = (user: User | undefined, resourceMetadata?: string): Answer =>
  user ? dataAnswer(user) : rejectToken(true, 'the user of this access token no longer exists', resourceMetadata);

/** The answer to GET /v2/me; `bodyHasToken`: a form body also carried an access_token. */
export function readMe(verify: VerifyToken, users: CachedDb, resourceMetadata?: string) {
  return async function answerMe(request: ApiRequest, bodyHasToken = false): Promise<Answer> {
    const decision = await decideRequest(verify, request, bodyHasToken);
    if (!decision.allow) return refuse(decision, resourceMetadata);
    return userAnswer(await findUserById(users, decision.token!.accountId), resourceMetadata);
  };
}

export function meRoutes(verify: VerifyToken, users: CachedDb, resourceMetadata?: string): Router {
  const router = newRouter();
  const policy = routePolicy(verify, resourceMetadata);
  const answerMe = readMe(verify, users, resourceMetadata);

  router.get(ME_PATH, async (ctx: Context) => reply(ctx, await answerMe(koaRequest(ctx), await formHasToken(ctx))));

  router.patch(ME_PATH, policy, jsonBody, async (ctx) => {
    // Bad input throws InputError: a 400 invalid_request from the one error responder.
    reply(ctx, userAnswer(await updateUserProfile(users, ctx.state.token!.accountId, profileChanges(ctx.request.body)), resourceMetadata));
  });

  return router;
}
