// Response shapes of the /v2 resource API (CONTRACT 3.2) and the RFC 6750 challenges.
import type { Context } from 'koa';

export function sendData(ctx: Context, data: unknown, status = 200): void {
  ctx.status = status;
  ctx.body = { status: 'success', data };
}

export function sendError(ctx: Context, status: number, code: string, message: string): void {
  ctx.status = status;
  ctx.body = { status: 'error', error: { code, message } };
}

const REALM = 'realm="api"';

/** 401 with the RFC 6750 challenge; no `error` attribute when no token was sent (RFC 6750 3.1). */
export function rejectToken(ctx: Context, tokenSent: boolean, message: string): void {
  ctx.set('WWW-Authenticate', tokenSent ? `Bearer ${REALM}, error="invalid_token", error_description="${message}"` : `Bearer ${REALM}`);
  sendError(ctx, 401, tokenSent ? 'invalid_token' : 'unauthorized', message);
}

/** 400 for a malformed request, such as a token sent two ways (RFC 6750 3.1). */
export function rejectRequest(ctx: Context, message: string): void {
  ctx.set('WWW-Authenticate', `Bearer ${REALM}, error="invalid_request", error_description="${message}"`);
  sendError(ctx, 400, 'invalid_request', message);
}

export function rejectScope(ctx: Context, needed: string): void {
  ctx.set('WWW-Authenticate', `Bearer ${REALM}, error="insufficient_scope", scope="${needed}"`);
  sendError(ctx, 403, 'insufficient_scope', `this call needs the ${needed} scope`);
}
