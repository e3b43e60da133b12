// A local app that receives webhooks (on 127.0.0.1: the servers run with WEBHOOK_ALLOW_LOOPBACK),
// and waiting for what it should have received.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Records what it receives and answers with the next status of `statuses` (then 204). */
export async function receiver(statuses: number[] = [], port = 0) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(statuses.shift() ?? 204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    received,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    events: () => received.map((r) => JSON.parse(r.body) as { id: string; type: string; timestamp: string; data: Record<string, unknown> }),
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

export { until } from './eventually.ts';
