// An answer given before the request's body was read — a refusal for its size or type, a route
// that reads none — must leave the connection usable. Left unread, the body's bytes would be
// parsed as the next request on a kept-alive connection (a hang, then a reset). So, as the answer
// starts: a small remainder is read and discarded, and the connection stays open; a large or
// unbounded one is answered with `Connection: close`, and the connection is closed gently, as
// nginx's lingering close does: our side is shut first and what the client still sends is read and
// dropped, so that no reset wipes the answer from the client's buffer before it reads it.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { POLICY } from '../settings.ts';

/** Unread bytes up to this are discarded on a kept-alive connection; beyond it, the connection closes. */
export const DRAIN_LIMIT = POLICY.DRAIN_LIMIT.value;
/** How long a closing connection keeps reading what its client still sends. */
const LINGER_MS = 5_000;

const hasBody = (req: IncomingMessage) => req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';

export function keepConnectionsWhole(listener: RequestListener): RequestListener {
  return function withBodiesSettled(req, res) {
    if (hasBody(req)) settleBeforeAnswer(req, res);
    return listener(req, res);
  };
}

/** Looks at the body when the answer's head is written (every answer goes through writeHead). */
function settleBeforeAnswer(req: IncomingMessage, res: ServerResponse): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse['writeHead']>) {
    res.writeHead = writeHead;
    if (!req.complete) settleUnread(req, res);
    return writeHead.apply(this, args);
  } as ServerResponse['writeHead'];
}

function settleUnread(req: IncomingMessage, res: ServerResponse): void {
  // A reader that gave up (raw-body over its limit) leaves the stream paused: let the rest flow to nowhere.
  req.resume();
  const length = req.headers['transfer-encoding'] === undefined ? Number(req.headers['content-length']) : Infinity;
  if (length <= DRAIN_LIMIT) return; // Node reads it before it parses the next request
  res.shouldKeepAlive = false; // Connection: close
  lingerOnClose(req.socket);
}

/**
 * Node closes the socket as soon as the answer is written; bytes of the body still arriving then
 * draw a TCP reset. Instead: shut our side (the client reads the answer and its end), go on
 * reading and dropping what comes, and close when the client does, or after LINGER_MS.
 */
function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function lingeringClose(this: Socket) {
    this.end();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
  };
}
