// The answer while the process starts: the port is open before migrations and storage are ready
// (with PORT=0 the public URLs need the real port), and a request then must not hang.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';

export const STARTING_RETRY_AFTER_SECONDS = 2;

const MESSAGE = 'The service is starting. Please try again in a few seconds.';

/** 503 with Retry-After, at once: RFC 6749 JSON on the provider's paths, the /v2 error JSON on the API, text elsewhere. */
export function answerStarting(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?', 1)[0]!;
  const body = path.startsWith('/v2/auth/oauth2/')
    ? { error: 'temporarily_unavailable', error_description: MESSAGE }
    : path.startsWith('/v2/')
      ? { status: 'error', error: { code: 'temporarily_unavailable', message: MESSAGE } }
      : undefined;
  res.writeHead(503, {
    'Retry-After': String(STARTING_RETRY_AFTER_SECONDS),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'Content-Type': body ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8',
  });
  res.end(body ? JSON.stringify(body) : `${MESSAGE}\n`);
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
