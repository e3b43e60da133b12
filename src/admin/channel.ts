// The operator scripts' way into a running embedded server (issue 38 point 5). PGlite allows one
// process per data directory, so while `npm start` holds it (src/storage/embedded-lock.ts) a
// script cannot open the database itself. Read-only commands are sent instead over a Unix socket
// in the data directory, owner-only (0600, like the database files beside it); the server runs
// them on its own connection and sends back what they printed. Changes are never accepted here:
// they still need the server stopped (or PostgreSQL), so nothing races the server's own writes.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const CHANNEL_FILE = 'admin.sock';
export const channelPath = (dataDir: string) => path.join(dataDir, CHANNEL_FILE);

/** A command's outcome as the script prints it. */
export interface ChannelAnswer {
  code: number;
  stdout: string;
  stderr: string;
}

/** A request is one JSON line: the arguments after `admin`. Anything longer is not a command. */
const MAX_REQUEST = 64 * 1024;

/** Server side: listens on DATA_DIR/admin.sock; `run` answers one argv. Resolves to its closer. */
export async function openAdminChannel(dataDir: string, run: (argv: string[]) => Promise<ChannelAnswer>): Promise<() => void> {
  const file = channelPath(dataDir);
  fs.rmSync(file, { force: true }); // a socket left by a killed server (we hold the lock)
  const server = net.createServer((socket) => {
    let input = '';
    socket.setEncoding('utf8');
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: string) => {
      input += chunk;
      if (input.length > MAX_REQUEST) return socket.destroy();
      const end = input.indexOf('\n');
      if (end < 0) return;
      socket.pause();
      let argv: unknown;
      try {
        argv = JSON.parse(input.slice(0, end));
      } catch {
        argv = undefined;
      }
      const answer = Array.isArray(argv) && argv.every((a) => typeof a === 'string')
        ? run(argv)
        : Promise.resolve({ code: 1, stdout: '', stderr: 'error: not a command\n' });
      void answer.then((a) => socket.end(`${JSON.stringify(a)}\n`), () => socket.destroy());
    });
  });
  // Owner-only from the first moment: the socket is created under this umask.
  const umask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(file, resolve);
    });
  } finally {
    process.umask(umask);
  }
  server.unref();
  return () => {
    server.close();
    fs.rmSync(file, { force: true });
  };
}

/** Script side: sends argv to the server of this data directory; undefined when nobody answers there. */
export function askServer(dataDir: string, argv: string[], timeoutMs = 30_000): Promise<ChannelAnswer | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect(channelPath(dataDir));
    let output = '';
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(`${JSON.stringify(argv)}\n`));
    socket.on('data', (chunk: string) => (output += chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      try {
        const answer = JSON.parse(output) as ChannelAnswer;
        resolve(typeof answer.code === 'number' ? answer : undefined);
      } catch {
        resolve(undefined);
      }
    });
  });
}
