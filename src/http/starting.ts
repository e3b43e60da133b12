// The answer while the process starts: the port is open before migrations and storage are ready
// (with PORT=0 the public URLs need the real port), and a request then must not hang.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { apiErrorAnswer, oauthErrorAnswer } from './envelope.ts';
import { PROVIDER_PATH } from './paths.ts';

export const STARTING_RETRY_AFTER_SECONDS = 2;

const MESSAGE = 'The service is starting. Please try again in a few seconds.';

/** 503 with Retry-After, at once: RFC 6749 JSON on the provider's paths, the /v2 error JSON on the API (the envelope's shapes), text elsewhere. */
export function answerStarting(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?', 1)[0]!;
  const headers = { 'Retry-After': String(STARTING_RETRY_AFTER_SECONDS), 'Cache-Control': 'no-store' };
  const code = 'temporarily_unavailable';
  const answer = path.startsWith(`${PROVIDER_PATH}/`)
    ? oauthErrorAnswer(503, code, MESSAGE, headers)
    : path.startsWith('/v2/')
      ? apiErrorAnswer(503, code, MESSAGE, headers)
      : undefined;
  res.writeHead(503, {
    ...(answer?.headers ?? headers),
    'X-Content-Type-Options': 'nosniff',
    'Content-Type': answer ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8',
  });
  res.end(answer ? JSON.stringify(answer.body) : `${MESSAGE}\n`);
}

/**
 * The server's one request listener: answers "starting" until `ready` hands it the app. Swapping
 * one listener (not adding a second) means no request is ever answered twice.
 */
export function startingListener(): { listener: RequestListener; ready(app: RequestListener): void } {
  let handle: RequestListener = answerStarting;
  return {
    listener: (req, res) => handle(req, res),
    ready(app) {
      handle = app;
    },
  };
}
