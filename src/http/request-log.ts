// One structured log line per request, with a request id (X-Request-Id, taken from a trusted
// proxy or made here). Only the path is logged: query strings, bodies and headers can carry
// codes, tokens, secrets and passwords.
import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import pino from 'pino';
import type { Logger } from '../log.ts';

const SANE_ID = /^[A-Za-z0-9._-]{1,100}$/;

/** The request's id: the one it came with when that is sane, else a new one. */
export const requestIdOf = (incoming: string | string[] | undefined): string => (typeof incoming === 'string' && SANE_ID.test(incoming) ? incoming : randomUUID());

export interface RequestLine {
  reqId: string;
  method: string;
  path: string;
  status: number;
  /** Milliseconds since the request arrived. */
  ms: number;
  ip: string;
}

export type RequestLineWriter = (line: RequestLine) => void;

/**
 * Writes the one line per request (also for the hot-path listener, src/fast/dispatch.ts) as pino's
 * `log.info(line, 'request')` would — level, time, the logger's bindings, the fields, msg — to
 * the logger's own stream, serialised here: it is written for every request, and pino's general
 * serialiser (any object, redaction, tracing hooks) costs several times this line.
 */
export function requestLineWriter(log: Logger): RequestLineWriter {
  const { streamSym, chindingsSym } = pino.symbols;
  const internals = log as unknown as Record<symbol, unknown>;
  const stream = internals[streamSym] as { write(text: string): unknown };
  const bindings = String(internals[chindingsSym] ?? '');
  const info = pino.levels.values.info;
  return (line) => {
    if (!log.isLevelEnabled('info')) return;
    const { reqId, method, path, status, ms, ip } = line;
    stream.write(
      `{"level":${info},"time":${Date.now()}${bindings},"reqId":${JSON.stringify(reqId)},"method":${JSON.stringify(method)},"path":${JSON.stringify(path)},"status":${status},"ms":${ms},"ip":${JSON.stringify(ip)},"msg":"request"}\n`,
    );
  };
}

/** Milliseconds since `started` (performance.now()), to a tenth. */
export const msSince = (started: number) => Math.round((performance.now() - started) * 10) / 10;

export function requestLog(writeLine: RequestLineWriter) {
  return async function logRequest(ctx: Context, next: Next) {
    const reqId = requestIdOf(ctx.get('X-Request-Id'));
    ctx.set('X-Request-Id', reqId);
    // One line per request, without a child logger per request (it costs an allocation and a
    // serialisation of its bindings on the hot path).
    const started = performance.now();
    const { method, path } = ctx; // before the provider mount rewrites the path
    try {
      await next();
    } finally {
      const status = ctx.respond === false ? ctx.res.statusCode : ctx.status;
      writeLine({ reqId, method, path, status, ms: msSince(started), ip: ctx.ip });
    }
  };
}
