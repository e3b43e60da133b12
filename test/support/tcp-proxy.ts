// A loopback TCP proxy in front of PostgreSQL or Redis that a test can cut and restore, to
// simulate an outage of the real service without stopping it for everyone else, or hold, to
// simulate a service that is slow to answer.
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Closes the listener and every open connection: the service is "down". */
  cut(): Promise<void>;
  /** Listens again on the same port: the service is back. */
  restore(): Promise<void>;
  /** New connections are accepted, but nothing passes until release(): the service is slow. */
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
  };
  let held: net.Socket[] | undefined;
  const connect = (client: net.Socket) => {
    const upstream = net.connect(targetPort, targetHost);
    track(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', end);
  };
  const server = net.createServer((client) => {
    track(client);
    if (held) held.push(client);
    else connect(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });
  return {
    port,
    cut: stop,
    restore: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
    hold: () => {
      held ??= [];
    },
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const client of waiting) if (!client.destroyed) connect(client);
    },
    close: stop,
  };
}
