// Small adjustments of incoming requests before the provider sees them (CONTRACT 3, spec 4.1).
import type { Context, Next } from 'koa';
import { koaBody } from 'koa-body';
import { errors } from 'oidc-provider';
import { parseScopeList } from './scopes.ts';

/** Spec 4.1 allows commas between scope names; the provider only splits on spaces. */
export async function normaliseScopeParam(ctx: Context, next: Next) {
  const scope = ctx.query.scope;
  if (typeof scope === 'string') {
    ctx.query = { ...ctx.query, scope: parseScopeList(scope).join(' ') };
  }
  return next();
}

const jsonBody = koaBody({ json: true, jsonStrict: true, urlencoded: false, multipart: false, text: false, jsonLimit: '16kb' });

function oauthError(ctx: Context, err: { status: number; error: string; error_description?: string }) {
  ctx.status = err.status;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { error: err.error, error_description: err.error_description };
}

/**
 * CONTRACT 3: the token, revocation and introspection endpoints also take JSON bodies. The
 * provider reads only form bodies, so a flat JSON object of strings is turned into one.
 */
export async function acceptJsonBody(ctx: Context, next: Next) {
  if (ctx.method !== 'POST' || !ctx.is('application/json')) return next();
  try {
    await jsonBody(ctx, async () => {});
  } catch {
    return oauthError(ctx, new errors.InvalidRequest('the request body is not valid JSON'));
  }
  const body = ctx.request.body as unknown;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return oauthError(ctx, new errors.InvalidRequest('the JSON body must be an object'));
  }
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(body)) {
    if (typeof value !== 'string') {
      return oauthError(ctx, new errors.InvalidRequest(`the JSON member "${key}" must be a string`));
    }
    form.append(key, value);
  }
  // The provider's body reader falls back to an already parsed req.body (lib/shared/selective_body.js).
  (ctx.req as typeof ctx.req & { body?: unknown }).body = form.toString();
  ctx.req.headers['content-type'] = 'application/x-www-form-urlencoded';
  return next();
}
