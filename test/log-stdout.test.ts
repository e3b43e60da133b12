// The production logger's stdout: lines are gathered into chunks (src/log.ts) and none is lost —
// written at exit, however the process ends normally, and within about a second on a quiet server.
// Real child processes writing to a real pipe.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');

// A process that logs as the server does (request lines and pino's own), then ends as `how` says.
const SCRIPT = `
import { createLogger } from './src/log.ts';
import { requestLineWriter } from './src/http/envelope.ts';
const log = createLogger('info');
const line = requestLineWriter(log);
const [count, how] = [Number(process.argv.at(-2)), process.argv.at(-1)];
for (let i = 0; i < count; i += 1) line({ reqId: 'r' + i, method: 'GET', path: '/v2/me', status: 200, ms: 1, ip: '127.0.0.1' });
log.info('last');
if (how === 'exit') process.exit(0);
if (how === 'throw') setImmediate(() => { throw new Error('boom'); });
if (how === 'linger') setTimeout(() => {}, 5000);
`;

function run(count: number, how: string) {
  const child = spawn(TSX, ['--eval', SCRIPT, String(count), how], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME } });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const lines = () => out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { msg: string; reqId?: string });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return { child, lines, exited };
}

describe('the production logger on stdout', () => {
  for (const how of ['exit', 'end', 'throw']) {
    it(`writes every line when the process ends (${how})`, async () => {
      const { lines, exited } = run(3_000, how);
      await exited;
      const written = lines();
      expect(written.filter((l) => l.msg === 'request')).toHaveLength(3_000);
      expect(written.at(-1)?.msg).toBe('last');
    }, 30_000);
  }

  it('writes a quiet process’s lines within about a second, before it ends', async () => {
    const { child, lines } = run(2, 'linger');
    const started = Date.now();
    while (lines().length < 3 && Date.now() - started < 4_000) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGKILL');
    // tsx's start-up is in that time too; the lines wait at most FLUSH_EVERY_MS once written.
    expect(lines().map((l) => l.reqId ?? l.msg)).toEqual(['r0', 'r1', 'last']);
  }, 30_000);
});
