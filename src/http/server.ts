// The HTTP server every public listener runs on (main.ts, and the test system's own listener).
import http from 'node:http';

/**
 * How long an idle kept-alive connection stays open. It must outlast the idle time of whatever
 * reuses connections to us: a proxy's upstream pool (nginx keeps them 60 s, `keepalive_timeout`;
 * load balancers 60 s) and HTTP clients (undici 4 s). With Node's default of 5 s the server closes
 * a connection a proxy or client is just reusing, and that request is reset (a 502 behind nginx
 * for a POST, which nginx does not retry; `ECONNRESET` to a client under load).
 */
export const KEEP_ALIVE_MS = 65_000;

export function createHttpServer(listener?: http.RequestListener): http.Server {
  const server = http.createServer(listener);
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  // Node's advice: above the keep-alive time, so a connection reused at its end gets its headers read.
  server.headersTimeout = KEEP_ALIVE_MS + 1_000;
  return server;
}
