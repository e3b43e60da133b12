// Small adjustments of incoming requests before the provider sees them (docs/endpoints.md).
import type { IncomingMessage } from 'node:http';
import type { Context, Next } from 'koa';
import getRawBody from 'raw-body';
import { errors } from 'oidc-provider';
import { NO_STORE, oauthErrorAnswer, reply } from '../http/envelope.ts';
import { parseScopeList } from '../scopes.ts';
import { keepBodyForProvider } from '../seams/oidc-provider.ts';
import { POLICY } from '../settings.ts';

/** Spec 4.1 allows commas between scope names; the provider only splits on spaces. */
export async function normaliseScopeParam(ctx: Context, next: Next) {
  const scope = ctx.query.scope;
  if (typeof scope === 'string') {
    ctx.query = { ...ctx.query, scope: parseScopeList(scope).join(' ') };
  }
  return next();
}

declare module 'koa' {
  interface DefaultState {
    /** The token, revocation or introspection request's parameters, read once (form or JSON). */
    oauthParams?: Record<string, string>;
  }
}

export const TOKEN_BODY_LIMIT = POLICY.TOKEN_BODY_LIMIT.value;

const bodies = new WeakMap<IncomingMessage, Promise<string>>();

/**
 * The body of a token, revocation or introspection request, read once with the size limit: the
 * hot-path listener may read it first (src/fast/introspection.ts) and pass the request on.
 */
export function readBodyOnce(req: IncomingMessage): Promise<string> {
  let body = bodies.get(req);
  if (!body) {
    body = getRawBody(req, { limit: TOKEN_BODY_LIMIT, encoding: 'utf8' });
    bodies.set(req, body);
  }
  return body;
}

/** A flat JSON object of strings as form fields, or why it is not one. */
function formFromJson(text: string): URLSearchParams | string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'the request body is not valid JSON';
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the JSON body must be an object';
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(body)) {
    if (typeof value !== 'string') return `the JSON member "${key}" must be a string`;
    form.append(key, value);
  }
  return form;
}

/**
 * Reads the body of a token, revocation or introspection request once, with a size limit, so the
 * rate limiter can see the client id. The token endpoint accepts JSON bodies too (docs/endpoints.md); a flat JSON
 * object of strings is turned into the form the provider reads. A body of any other type is
 * refused here, at once and without reading it. Every answer of these endpoints, ours or the
 * provider's, carries the no-cache headers.
 */
export async function readTokenRequestBody(ctx: Context, next: Next) {
  ctx.set(NO_STORE);
  if (ctx.method !== 'POST') return next();
  // null: no body at all (the provider then names the missing parameters).
  const type = ctx.is('application/x-www-form-urlencoded', 'application/json');
  if (type === null) return next();
  if (type === false) {
    return reply(ctx, oauthErrorAnswer(400, 'invalid_request', 'the request body must be application/x-www-form-urlencoded or application/json'));
  }
  let text: string;
  try {
    text = await readBodyOnce(ctx.req);
  } catch (err) {
    const tooLarge = (err as { type?: string }).type === 'entity.too.large';
    return reply(ctx, oauthErrorAnswer(tooLarge ? 413 : 400, 'invalid_request', tooLarge ? 'the request body is too large' : 'the request body could not be read'));
  }
  const form = type === 'application/json' ? formFromJson(text) : new URLSearchParams(text);
  if (typeof form === 'string') {
    const refused = new errors.InvalidRequest(form);
    return reply(ctx, oauthErrorAnswer(refused.status, refused.error, refused.error_description!));
  }
  ctx.state.oauthParams = Object.fromEntries(form);
  // For the provider to read again (src/oauth/mount.ts).
  keepBodyForProvider(ctx.req, form.toString());
  ctx.req.headers['content-type'] = 'application/x-www-form-urlencoded';
  return next();
}
