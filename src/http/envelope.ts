// The envelope of every answer, on both transports: the Koa apps (`koa`, their first step) and
// the hot-path listener on node:http (`send`). The one place that decides the request id, the log
// line, the metrics, the security headers, no-store and the error shapes, so that an answer reads
// the same whichever transport wrote it (test/hot-paths.test.ts, test/oauth-errors.test.ts).
//
// The error shapes, by route family: RFC 6749 JSON on the token, revocation and introspection
// endpoints (oauthErrorAnswer, the one OAuth error writer), the /v2 error JSON on the /v2 API (docs/errors.md), an
// HTML page elsewhere (error-pages.ts). A storage outage is 503 with Retry-After; anything
// unexpected is a 500 that says nothing about our insides (it is logged).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, Next } from 'koa';
import helmet from 'koa-helmet';
import pino from 'pino';
import { loggerStream } from '../seams/pino.ts';
import type { Logger } from '../log.ts';
import { errorPageHtml, sameSitePath } from './error-pages.ts';
import { describeError, type ErrorView } from './error-view.ts';
import { routeName, type Metrics } from './metrics.ts';
import { CHECK_PATH, ME_PATH, OAUTH_ENDPOINTS } from './paths.ts';
import { clientAddress, type ProxyWarning } from './untrusted-proxy.ts';

/** An answer either transport writes: Koa (reply) or the hot-path listener (send). */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Writes an answer to a Koa context. */
export function reply(ctx: Context, answer: Answer): void {
  ctx.status = answer.status;
  ctx.set(answer.headers);
  ctx.body = answer.body;
}

// ——— No caching, and the error shapes ———

/** On every answer of the token, revocation and introspection endpoints, ours or the provider's (RFC 6749 5.1). */
export const NO_STORE: Readonly<Record<string, string>> = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/** The one OAuth error writer (RFC 6749 5.2): every refusal of the token endpoints we write ourselves. */
export const oauthErrorAnswer = (status: number, error: string, description: string, headers: Record<string, string> = {}): Answer => ({
  status,
  headers: { ...NO_STORE, ...headers },
  body: { error, error_description: description },
});

/** The /v2 API's error (docs/errors.md). */
export const apiErrorAnswer = (status: number, code: string, message: string, headers: Record<string, string> = {}): Answer => ({
  status,
  headers,
  body: { status: 'error', error: { code, message } },
});

/** The error in its route family's JSON shape; undefined where the answer is a page. */
export function errorAnswerFor(path: string, view: ErrorView): Answer | undefined {
  const headers: Record<string, string> = { ...(view.retryAfter ? { 'Retry-After': String(view.retryAfter) } : {}), ...(view.allow ? { Allow: view.allow } : {}) };
  if (OAUTH_ENDPOINTS.has(path)) return oauthErrorAnswer(view.status, view.code, view.message, headers);
  if (path.startsWith('/v2/')) return apiErrorAnswer(view.status, view.code, view.message, headers);
  return undefined;
}

/** Answers a Koa request with the error, in its route family's shape. */
export async function respondWithError(ctx: Context, view: ErrorView): Promise<void> {
  const answer = errorAnswerFor(ctx.path, view);
  if (answer) return reply(ctx, answer);
  ctx.status = view.status;
  if (view.retryAfter) ctx.set('Retry-After', String(view.retryAfter));
  if (view.allow) ctx.set('Allow', view.allow);
  ctx.type = 'html';
  ctx.set('Cache-Control', 'no-store');
  ctx.body = await errorPageHtml(view, ctx.state.user, { retryUrl: ctx.method === 'GET' ? sameSitePath(ctx.originalUrl) : undefined, layout: { platformName: ctx.state.platformName, ...ctx.state.errorPageLayout?.() } });
}

// ——— The request id and the log line ———

const SANE_ID = /^[A-Za-z0-9._-]{1,100}$/;

/** The request's id: the one it came with when that is sane, else a new one. */
export const requestIdOf = (incoming: string | string[] | undefined): string => (typeof incoming === 'string' && SANE_ID.test(incoming) ? incoming : randomUUID());

/** One line per request. Only the path is logged: query strings, bodies and headers can carry codes, tokens, secrets and passwords. */
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
 * Writes the one line per request as pino's `log.info(line, 'request')` would — level, time, the
 * logger's bindings, the fields, msg — to the logger's own stream, serialised here: it is written
 * for every request, and pino's general serialiser (any object, redaction, tracing hooks) costs
 * several times this line. No child logger per request either (an allocation and a serialisation
 * of its bindings on the hot path).
 */
export function requestLineWriter(log: Logger, level: 'info' | 'debug' = 'info'): RequestLineWriter {
  const { stream, bindings } = loggerStream(log);
  const value = pino.levels.values[level];
  return (line) => {
    if (!log.isLevelEnabled(level)) return;
    const { reqId, method, path, status, ms, ip } = line;
    stream.write(
      `{"level":${value},"time":${Date.now()}${bindings},"reqId":${JSON.stringify(reqId)},"method":${JSON.stringify(method)},"path":${JSON.stringify(path)},"status":${status},"ms":${ms},"ip":${JSON.stringify(ip)},"msg":"request"}\n`,
    );
  };
}

/** Milliseconds since `started` (performance.now()), to a tenth. */
const msSince = (started: number) => Math.round((performance.now() - started) * 10) / 10;

// ——— Security headers ———
// Pages (helmet): no framing, no MIME sniffing, no referrer, and a Content-Security-Policy that
// allows only our own stylesheet and script file, nothing inline. The JSON API (/v2/me, the
// gateway check) and the OAuth back channel, which programs call all the time and which are never
// rendered as pages, get the short set OWASP recommends for REST services instead: the same
// protections, set at once, without a dozen headers meant for HTML.

const HSTS = 'max-age=31536000; includeSubDomains';

/** JSON for programs, never a page: the API and the OAuth back channel (token, revocation, introspection). */
const isApi = (path: string) => path === ME_PATH || path === CHECK_PATH || path.startsWith(`${CHECK_PATH}/`) || OAUTH_ENDPOINTS.has(path);

/** The JSON API's short set. */
export function apiSecurityHeaders(https: boolean): Record<string, string> {
  return {
    'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    ...(https ? { 'Strict-Transport-Security': HSTS } : {}),
  };
}

function pageSecurityHeaders(https: boolean) {
  return helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        styleSrc: ["'self'"],
        scriptSrc: ["'self'"], // only /assets/copy.js; no inline script anywhere
        imgSrc: ["'self'", 'data:'],
        baseUri: ["'none'"],
        frameAncestors: ["'none'"],
        // No form-action: browsers apply it to the redirect after Allow, which goes to the
        // client's redirect_uri on another origin.
        ...(https ? { upgradeInsecureRequests: [] } : {}),
      },
    },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: https ? { maxAge: 31536000, includeSubDomains: true } : false,
  });
}

// ——— The envelope, for both transports ———

export interface EnvelopeDeps {
  log: Logger;
  metrics: Pick<Metrics, 'record'>;
  /** APP_URL is https: HSTS, upgrade-insecure-requests. */
  https: boolean;
  /** Proxy hops whose X-Forwarded-For is trusted (the client address of the log line). */
  proxyHops: number;
  proxyWarning: ProxyWarning;
  /** The request lines' level: info (production), or debug so a development console stays readable. */
  requestLogLevel?: 'info' | 'debug';
}

export type Envelope = ReturnType<typeof envelope>;

export function envelope(deps: EnvelopeDeps) {
  const { log, metrics, proxyWarning } = deps;
  const writeLine = requestLineWriter(log, deps.requestLogLevel);
  const apiHeaders = apiSecurityHeaders(deps.https);
  const apiHead = Object.entries(apiHeaders).flat();
  const pageHeaders = pageSecurityHeaders(deps.https);

  /** The error's answer-to-be; 5xx are logged. */
  function described(err: unknown, path: string): ErrorView {
    const view = describeError(err);
    if (view.status >= 500) log.error({ err, path }, view.status === 503 ? 'storage unavailable' : 'request failed');
    return view;
  }

  /**
   * Koa: the first step of every request — the request id, the security headers, every error
   * below answered in its route family's shape; then counted, timed and logged.
   */
  async function koa(ctx: Context, next: Next): Promise<void> {
    const reqId = requestIdOf(ctx.get('X-Request-Id'));
    ctx.set('X-Request-Id', reqId);
    const started = performance.now();
    const { method, path } = ctx; // before the provider mount rewrites the path
    const rest = async () => {
      proxyWarning(ctx.headers);
      try {
        await next();
      } catch (err) {
        await respondWithError(ctx, described(err, path));
      }
    };
    try {
      if (isApi(path)) {
        ctx.set(apiHeaders);
        await rest();
      } else await pageHeaders(ctx, rest);
    } finally {
      // The provider answers on ctx.res directly (ctx.respond = false): read the real status there.
      const status = ctx.respond === false ? ctx.res.statusCode : ctx.status;
      metrics.record(routeName(path), method, status, (performance.now() - started) / 1000);
      writeLine({ reqId, method, path, status, ms: msSince(started), ip: ctx.ip });
    }
  }

  /** node:http: the answer of a hot path (or its error, by `failed`), written as the Koa apps would; counted and logged. */
  function send(req: IncomingMessage, res: ServerResponse, method: string, path: string, answer: Answer, started: number): void {
    const reqId = requestIdOf(req.headers['x-request-id']);
    proxyWarning(req.headers);
    const status = writeUnlessGone(res, [...apiHead, 'X-Request-Id', reqId], answer, path);
    metrics.record(routeName(path), method, status, (performance.now() - started) / 1000);
    writeLine({ reqId, method, path, status, ms: msSince(started), ip: clientAddress(req.headers, req.socket.remoteAddress, deps.proxyHops) });
  }

  /** node:http: an error of a hot path, as the Koa apps answer it. */
  function failed(err: unknown, path: string): Answer {
    const view = described(err, path);
    return errorAnswerFor(path, view) ?? apiErrorAnswer(view.status, view.code, view.message);
  }

  /** Writes the answer (unless the client is gone, as Koa does); the status sent. */
  function writeUnlessGone(res: ServerResponse, head: string[], answer: Answer, path: string): number {
    if (res.writableEnded || res.socket?.writable === false) return answer.status;
    try {
      write(res, head, answer);
      return answer.status;
    } catch (err) {
      const fallback = failed(err, path);
      if (!res.headersSent) write(res, head, fallback);
      return fallback.status;
    }
  }

  return { koa, send, failed };
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The headers go to Node as one flat list: measured under load, an object merged from others
 * (spread) made Node's header writing several times slower than the decision itself.
 */
function write(res: ServerResponse, head: string[], answer: Answer): void {
  const body = JSON.stringify(answer.body);
  const headers = head.slice();
  for (const name in answer.headers) headers.push(name, answer.headers[name]!);
  headers.push('Content-Type', JSON_TYPE, 'Content-Length', String(Buffer.byteLength(body)));
  res.writeHead(answer.status, headers);
  res.end(body);
}
