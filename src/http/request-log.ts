// One structured log line per request, with a request id (X-Request-Id, taken from a trusted
// proxy or made here). Only the path is logged: query strings, bodies and headers can carry
// codes, tokens, secrets and passwords.
import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../log.ts';

const SANE_ID = /^[A-Za-z0-9._-]{1,100}$/;

export function requestLog(log: Logger) {
  return async function logRequest(ctx: Context, next: Next) {
    const incoming = ctx.get('X-Request-Id');
    const reqId = SANE_ID.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', reqId);
    // One line per request, without a child logger per request (it costs an allocation and a
    // serialisation of its bindings on the hot path).
    const started = performance.now();
    const { method, path } = ctx; // before the provider mount rewrites the path
    try {
      await next();
    } finally {
      const status = ctx.respond === false ? ctx.res.statusCode : ctx.status;
      log.info({ reqId, method, path, status, ms: Math.round((performance.now() - started) * 10) / 10, ip: ctx.ip }, 'request');
    }
  };
}
