// Startup as `npm start` runs it: the port opens before migrations and storage are ready, and a
// request in that time (a load balancer's health check, an early client) is answered at once with
// 503 and Retry-After — never left hanging. PostgreSQL is made slow by a proxy that holds its
// connections.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/services.ts';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.ts';
import { freePort, ROOT, SERVER } from './support/processes.ts';
import { eventually } from './support/eventually.ts';
import { answerStarting } from '../src/http/starting.ts';
import { KEEP_ALIVE_MS } from '../src/http/server.ts';
import pkg from '../package.json' with { type: 'json' };

const PACKAGE_VERSION = pkg.version;

let pg: TestDatabase;
let proxy: TcpProxy;
let child: ChildProcessWithoutNullStreams | undefined;

beforeAll(async () => {
  pg = await createTestDatabase({ migrate: false });
  proxy = await startTcpProxy(Number(new URL(pg.url).port || 5432));
});
afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  await proxy?.close();
  await pg?.drop();
});

/** Resolves once the port accepts connections. */
async function listening(port: number): Promise<void> {
  await eventually(
    () =>
      new Promise<void>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.destroy();
          resolve();
        });
        socket.on('error', () => reject(new Error(`port ${port} never opened`)));
      }),
    { timeout: 30_000, interval: 50 },
  );
}

/** An answer within 1 s, with how long it took (the old server left such requests hanging). */
async function timed(url: string, init: RequestInit = {}): Promise<{ res: Response; ms: number }> {
  const start = Date.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(1_000) });
  return { res, ms: Date.now() - start };
}

describe('startup', () => {
  it('answers every request 503 with Retry-After at once until the app is ready, then serves', async () => {
    proxy.hold(); // PostgreSQL answers nothing: migrations cannot run
    const port = await freePort();
    const dbUrl = new URL(pg.url);
    dbUrl.port = String(proxy.port);
    child = spawn(SERVER.bundled.file, SERVER.bundled.args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', PORT: String(port), DATABASE_URL: dbUrl.toString() },
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const base = `http://127.0.0.1:${port}`;

    await listening(port);
    const health = await timed(`${base}/health`);
    expect(health.res.status, output).toBe(503);
    expect(health.ms).toBeLessThan(1_000);
    expect(Number(health.res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await health.res.text()).toMatch(/starting/);

    const { res: me } = await timed(`${base}/v2/me`);
    expect(me.status).toBe(503);
    expect(me.headers.get('retry-after')).toBeTruthy();
    expect(await me.json()).toEqual({ status: 'error', error: { code: 'temporarily_unavailable', message: expect.any(String) } });
    const { res: token } = await timed(`${base}/v2/auth/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token' }) });
    expect(token.status).toBe(503);
    expect(await token.json()).toMatchObject({ error: 'temporarily_unavailable' });
    expect(output).not.toMatch(/Listening on/); // still starting: the 503s were not luck of timing

    proxy.release();
    await eventually(() => expect(output).toMatch(/Listening on/), { timeout: 30_000, interval: 50 });
    const served = await fetch(`${base}/health`);
    expect(served.status).toBe(200);
    // The version of the release, as package.json states it (CONTRACT 3), from the started process too.
    expect(await served.json()).toEqual({ status: 'ok', version: PACKAGE_VERSION });
    // An idle connection outlasts a proxy's upstream pool (nginx: 60 s) and clients' (src/http/server.ts):
    // Node's default 5 s reset requests sent on a connection it was just closing.
    expect(served.headers.get('keep-alive')).toBe(`timeout=${KEEP_ALIVE_MS / 1000}`);
    expect((await fetch(`${base}/v2/me`)).status).toBe(401);
  }, 60_000);

  it("answers the envelope's shapes on the OAuth endpoints and the API", () => {
    const answer = (url: string) => {
      const headers: Record<string, string> = {};
      let body = '';
      const res = {
        writeHead: (status: number, h: Record<string, string>) => Object.assign(headers, h, { status: String(status) }),
        end: (text: string) => (body = text),
      };
      answerStarting({ url } as never, res as never);
      return { headers, body: JSON.parse(body) as unknown };
    };
    const token = answer('/v2/auth/oauth2/token');
    expect(token.headers).toMatchObject({ status: '503', 'Cache-Control': 'no-store', Pragma: 'no-cache', 'Retry-After': '2', 'Content-Type': 'application/json; charset=utf-8' });
    expect(token.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringMatching(/starting/) });
    const me = answer('/v2/me');
    expect(me.headers).toMatchObject({ status: '503', 'Cache-Control': 'no-store', 'Retry-After': '2' });
    expect(me.body).toEqual({ status: 'error', error: { code: 'temporarily_unavailable', message: expect.stringMatching(/starting/) } });
  });

  it('answers plain text outside the API', () => {
    const headers: Record<string, string> = {};
    let body = '';
    const res = {
      writeHead: (status: number, h: Record<string, string>) => Object.assign(headers, h, { status: String(status) }),
      end: (text: string) => (body = text),
    };
    answerStarting({ url: '/login?next=/' } as never, res as never);
    expect(headers).toMatchObject({ status: '503', 'Content-Type': 'text/plain; charset=utf-8', 'Retry-After': expect.any(String) });
    expect(body).toMatch(/starting/);
  });
});
