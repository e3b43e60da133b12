// The API's hot paths — the gateway check, reading /v2/me, and the plain cases of the back
// channel (introspecting a live access token, a rotating refresh) — answered straight on
// node:http, before the Koa app. They sit in front of every call to the scheduling API, and a Koa context
// with the page middleware cost more than the decision itself (docs/benchmark.md: the profile).
// What the app's middleware gives every request they keep: the request id, the log line, the
// metrics, the API's security headers, the error shapes. Anything unusual — an absolute-form,
// over-long or NUL-carrying URL, a body on a read, another method on the check's own path — goes
// on to the app, whose routes answer it with the same handlers.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Logger } from '../log.ts';
import type { Metrics } from '../http/metrics.ts';
import { routeName } from '../http/metrics.ts';
import { CHECK_PATH, ME_PATH, OAUTH_ENDPOINTS } from '../http/paths.ts';
import { msSince, requestIdOf, type RequestLineWriter } from '../http/request-log.ts';
import { apiSecurityHeaders } from '../http/security-headers.ts';
import { clientAddress, type ProxyWarning } from '../http/untrusted-proxy.ts';
import { urlProblem } from '../http/url-limits.ts';
import { describeError } from '../http/error-responses.ts';
import type { ApiRequest } from '../api/access.ts';
import { errorAnswer, type Answer } from '../api/responses.ts';
import { isHandOver, type AnswerBackChannel, type HandOver } from './back-channel.ts';
import { readBodyOnce, TOKEN_BODY_LIMIT } from '../oauth/request-shims.ts';

type Handler = (request: ApiRequest) => Promise<Answer>;

export interface HotPathDeps {
  answerCheck: Handler;
  answerMe: Handler;
  /** The token, revocation and introspection POSTs: the app's steps without its routers (src/app.ts). */
  answerBackChannel: RequestListener;
  /** By path: the plain cases of back-channel endpoints (src/fast/back-channel.ts); what they leave, the back channel answers. */
  backChannelHotPaths?: ReadonlyMap<string, AnswerBackChannel>;
  log: Logger;
  metrics: Pick<Metrics, 'record' | 'fastPathOutcome'>;
  https: boolean;
  proxyHops: number;
  proxyWarning: ProxyWarning;
  writeLine: RequestLineWriter;
}

// Origin-form URLs without the characters that make Koa (parseurl) parse them the slow way.
const PLAIN_URL = /^\/[^\t\n\f\r #\u00a0\ufeff]*$/;
const JSON_TYPE = 'application/json; charset=utf-8';

const isRead = (method: string) => method === 'GET' || method === 'HEAD';
const hasBody = (req: IncomingMessage) => req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
// A form body of a stated, allowed length: the only kind the hot path reads (others go on unread).
const FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded; charset=utf-8']);
const isPlainForm = (req: IncomingMessage) =>
  FORM_TYPES.has((req.headers['content-type'] ?? '').toLowerCase()) &&
  req.headers['transfer-encoding'] === undefined &&
  /^[0-9]{1,5}$/.test(req.headers['content-length'] ?? '') &&
  Number(req.headers['content-length']) <= TOKEN_BODY_LIMIT;

export function hotPathListener(deps: HotPathDeps, app: RequestListener): RequestListener {
  const securityHeaders = Object.entries(apiSecurityHeaders(deps.https)).flat();

  function handlerFor(req: IncomingMessage, method: string, path: string): Handler | undefined {
    if (path === CHECK_PATH) return isRead(method) ? deps.answerCheck : undefined;
    // Envoy ext_authz asks with the call's own method and its path appended (see gateway-call.ts).
    if (path.startsWith(`${CHECK_PATH}/`)) return deps.answerCheck;
    if (path === ME_PATH && isRead(method) && !hasBody(req)) return deps.answerMe;
    return undefined;
  }

  async function serve(req: IncomingMessage, res: ServerResponse, handler: Handler, request: ApiRequest): Promise<void> {
    const started = performance.now();
    let answer: Answer;
    try {
      answer = await handler(request);
      deps.metrics.fastPathOutcome(routeName(request.path), 'served');
    } catch (err) {
      answer = failed(err, request.path);
      // A thrown 4xx is an answer (the route's error shape); a 5xx is the fast path failing.
      deps.metrics.fastPathOutcome(routeName(request.path), answer.status >= 500 ? 'failed' : 'served');
    }
    finish(req, res, request.method, request.path, answer, started);
  }

  /** The plain case of a back-channel endpoint (see back-channel.ts); else the back channel, body and all. */
  async function answerPlainCase(req: IncomingMessage, res: ServerResponse, path: string, plainCase: AnswerBackChannel): Promise<void> {
    const started = performance.now();
    const route = routeName(path);
    let answer: Answer | HandOver;
    try {
      const form = new URLSearchParams(await readBodyOnce(req));
      answer = await plainCase({ headers: req.headers, form, ip: clientAddress(req.headers, req.socket.remoteAddress, deps.proxyHops), message: req });
    } catch (err) {
      // A body that could not be read, a store that failed, a library that changed: the app's to
      // answer, and never silently (issue 34: a quiet fallback hides a broken fast path).
      deps.metrics.fastPathOutcome(route, 'failed');
      deps.log.warn({ err, path }, 'fast path failed; the provider answers');
      return deps.answerBackChannel(req, res);
    }
    if (isHandOver(answer)) {
      deps.metrics.fastPathOutcome(route, 'handed_over', answer.handOver);
      return deps.answerBackChannel(req, res);
    }
    deps.metrics.fastPathOutcome(route, 'served');
    finish(req, res, 'POST', path, answer, started);
  }

  /** Sends the answer with the request id and security headers; counts and logs the request. */
  function finish(req: IncomingMessage, res: ServerResponse, method: string, path: string, answer: Answer, started: number): void {
    const reqId = requestIdOf(req.headers['x-request-id']);
    deps.proxyWarning(req.headers);
    const status = send(res, [...securityHeaders, 'X-Request-Id', reqId], answer, path);
    deps.metrics.record(routeName(path), method, status, (performance.now() - started) / 1000);
    deps.writeLine({ reqId, method, path, status, ms: msSince(started), ip: clientAddress(req.headers, req.socket.remoteAddress, deps.proxyHops) });
  }

  /** As the app's error responder: the route family's shape, 5xx logged. */
  function failed(err: unknown, path: string): Answer {
    const view = describeError(err);
    if (view.status >= 500) deps.log.error({ err, path }, view.status === 503 ? 'storage unavailable' : 'request failed');
    return errorAnswer(view.status, view.code, view.message, view.retryAfter ? { 'Retry-After': String(view.retryAfter) } : {});
  }

  /** Writes the answer (unless the client is gone, as Koa does); the status sent. */
  function send(res: ServerResponse, head: string[], answer: Answer, path: string): number {
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

  return function hotPaths(req, res) {
    const url = req.url ?? '';
    const method = req.method ?? 'GET';
    if (!PLAIN_URL.test(url) || urlProblem(url)) return app(req, res);
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (method === 'POST' && OAUTH_ENDPOINTS.has(path)) {
      const plainCase = q < 0 && isPlainForm(req) ? deps.backChannelHotPaths?.get(path) : undefined;
      if (plainCase) return void answerPlainCase(req, res, path, plainCase);
      return deps.answerBackChannel(req, res);
    }
    const handler = handlerFor(req, method, path);
    if (!handler) return app(req, res);
    const query = q < 0 ? '' : url.slice(q + 1);
    void serve(req, res, handler, { method, path, search: query ? `?${query}` : '', headers: req.headers, rawHeaders: req.rawHeaders });
  };
}

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
