// The stand-in scheduling API behind the nginx recipe (deploy/nginx): answers 200 with what it
// received (the request line and every X-Auth-* header the gateway set), and remembers it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the stand-in API received: the request line and every X-Auth-* header, as raw pairs. */
export interface Received {
  method: string;
  url: string;
  auth: Array<[string, string]>;
}

export interface EchoApi {
  hostPort: string;
  received: Received[];
  close(): Promise<unknown>;
}

export async function startEchoApi(): Promise<EchoApi> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const auth: Array<[string, string]> = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      if (/^x[-_]auth/i.test(req.rawHeaders[i]!)) auth.push([req.rawHeaders[i]!.toLowerCase(), req.rawHeaders[i + 1]!]);
    }
    const seen = { method: req.method!, url: req.url!, auth };
    received.push(seen);
    req.resume();
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ echo: seen }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    hostPort: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

