// A loopback TCP proxy in front of PostgreSQL or Redis that a test can cut and restore, to
// simulate an outage of the real service without stopping it for everyone else, hold, to
// simulate a service that is slow to answer, or pause, to simulate a silent stall.
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
  /**
   * Open connections stay open but nothing passes either way (not even their end), and new ones
   * are held: a hung proxy, or half-open connections that TCP has not noticed yet.
   */
  pause(): void;
  /** Everything flows again, what was sent meanwhile included. */
  resume(): void;
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
  const pairs = new Set<[net.Socket, net.Socket]>();
  const connect = (client: net.Socket) => {
    const upstream = net.connect(targetPort, targetHost);
    track(upstream);
    client.pipe(upstream).pipe(client);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
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
    pause: () => {
      held ??= [];
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    resume: () => {
      for (const [client, upstream] of pairs) client.pipe(upstream).pipe(client);
      const waiting = held ?? [];
      held = undefined;
      for (const client of waiting) if (!client.destroyed) connect(client);
    },
    close: stop,
  };
}
