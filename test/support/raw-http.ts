// One HTTP request exactly as written, and its answer in a form two answers can be compared in.
import http from 'node:http';
import { expect } from 'vitest';

export interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request as written: `target` may be absolute-form (`http://host/path`), which fetch cannot send. */
export function raw(base: string, method: string, target: string, headers: Record<string, string> = {}, body?: string): Promise<Raw> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    // Node sends a GET's body without framing unless told its length.
    const framed = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    const req = http.request({ hostname, port, method, path: target, headers: framed, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Status, headers and body, less what differs between any two answers (date, request id,
 * connection, and what is left of the client's budget: RateLimit's r and t).
 */
export function comparable({ status, headers, body }: Raw) {
  const { date: _date, 'x-request-id': requestId, connection: _c, 'keep-alive': _k, ...rest } = headers;
  expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
  if (typeof rest.ratelimit === 'string') rest.ratelimit = rest.ratelimit.replace(/;r=\d+;t=\d+$/, ';r=…;t=…');
  return { status, headers: rest, body };
}
