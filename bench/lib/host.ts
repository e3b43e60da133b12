// How steady the machine's own speed is: a shared or virtual host can run the same code at
// rates that differ by tens of per cent from one second to the next, which no pinning or
// idle-priority setting here can prevent, and which same-run ratios then cannot cancel (the
// anchor's run and ours see different hosts). Measured, not assumed: a fixed loop of SHA-256
// hashes on the servers' core, in short windows, before and after the timed runs.
import { spawnSync } from 'node:child_process';
import { pinned, SERVER_CORE } from './procs.ts';

const WINDOWS = 10;
const WINDOW_MS = 500;
const LOOP = `
const { createHash } = require('node:crypto');
const counts = [];
for (let w = 0; w < ${WINDOWS}; w++) {
  const end = Date.now() + ${WINDOW_MS};
  let n = 0;
  while (Date.now() < end) { for (let i = 0; i < 200; i++) createHash('sha256').update('x' + i).digest(); n++; }
  counts.push(n);
}
console.log(JSON.stringify(counts));`;

/** Above this spread (max − min over the median of the windows), ratios of this run are not comparable with another run's. */
export const STEADY_SPREAD = 0.1;

/** Rounds per window of the loop on the servers' core; the spread, (max − min) / median. */
export function hostSteadiness(): { counts: number[]; spread: number } | undefined {
  const [command, args] = pinned(SERVER_CORE, process.execPath, ['-e', LOOP]);
  const run = spawnSync(command, args, { encoding: 'utf8' });
  if (run.status !== 0) return undefined;
  const counts = (JSON.parse(run.stdout) as number[]).slice(1); // the first window warms the loop up
  const sorted = [...counts].sort((x, y) => x - y);
  const median = sorted[sorted.length >> 1]!;
  return { counts, spread: median > 0 ? (sorted.at(-1)! - sorted[0]!) / median : Infinity };
}
