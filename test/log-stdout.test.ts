// The production logger's stdout: lines are gathered into chunks (src/log.ts) and none is lost —
// written at exit, however the process ends normally, and within about a second on a quiet server.
// Real child processes (test/support/log-writer.ts, bundled) writing to a real pipe.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BUNDLED_LOG_WRITER } from './support/process-bundle.ts';
import { eventually } from './support/eventually.ts';

function run(count: number, how: string) {
  const child = spawn(process.execPath, [BUNDLED_LOG_WRITER, String(count), how], { env: { PATH: process.env.PATH, HOME: process.env.HOME } });
  let out = '';
  let lastArrived: number | undefined; // when the line logged last reached this process
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    if (lastArrived === undefined && /"msg":"last".*\n/.test(out)) lastArrived = Date.now();
  });
  const lines = () => out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { msg: string; reqId?: string; time: number });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return { child, lines, lastArrived: () => lastArrived, exited };
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
    const { child, lines, lastArrived, exited } = run(2, 'linger'); // stays until killed
    try {
      // Read while the process lives: they were not written by its exit.
      await eventually(() => expect(lines().map((l) => l.reqId ?? l.msg)).toEqual(['r0', 'r1', 'last']), { timeout: 20_000 });
      expect(child.exitCode).toBeNull();
      // About a second after it was logged (the lines wait at most FLUSH_EVERY_MS; the rest is load).
      const last = lines().at(-1)!;
      expect(lastArrived()! - last.time).toBeLessThan(4_000);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  }, 30_000);
});
