// The load generator on the load core: wrk -t1 -cN with a Lua script feeding one token per request
// (feed.lua), in a closed loop for throughput, or open at a fixed rate for latency below saturation.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BENCH, LOAD_CORE, cpuSeconds, pinned } from './procs.ts';

export interface Job {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** File of lines "Authorization value<TAB>body" (see feed.lua); none: the same request each time. */
  feed?: string;
  /** Each line once (single-use tokens) rather than cycling. */
  once?: boolean;
  seconds: number;
  connections: number;
  /** Open loop at this many requests per second (feed.lua) instead of wrk's closed loop. */
  rate?: number;
}

export interface Sample {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  status: Record<string, number>;
  /** Socket errors and timeouts. */
  errors: number;
  /** Requests that had to reuse a single-use line (the feed was too short): the sample is not valid. */
  feedShort: number;
  /** Open-loop runs: p99.5 of the sends' lateness (ms), included in p99; see feed.lua. */
  late?: number;
  /** Open-loop runs: p50 and p99 measured from each request's due time (the server echoed it), not bounded. */
  exact?: boolean;
  /** CPU of the server under load, in % of a core. */
  serverCpu?: number;
  foreignCpu?: number;
  /** Per request, counted by the stores (ours only): see stores.ts. */
  redisCmds?: number;
  redisReads?: number;
  redisBreakdown?: Record<string, number>;
  redisShared?: boolean;
  sqlXacts?: number;
  sqlRows?: number;
}

/** wrk from Debian, installed with apt-get when missing. */
export function ensureWrk(): void {
  if (spawnSync('wrk', ['-v']).error === undefined) return;
  console.log('wrk is missing: installing the Debian package (apt-get install wrk)');
  const apt = (args: string[]) =>
    process.getuid?.() === 0
      ? spawnSync('apt-get', args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
      : spawnSync('sudo', ['-n', 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', ...args], { stdio: 'inherit' });
  apt(['update', '-qq']);
  if (apt(['install', '-y', '-qq', 'wrk']).status !== 0 || spawnSync('wrk', ['-v']).error) throw new Error('could not install wrk (apt-get install wrk)');
}

function run(cmd: string, args: string[]): Promise<string> {
  const [c, a] = pinned(LOAD_CORE, cmd, args);
  return new Promise((resolve, reject) => {
    const child = spawn(c, a, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} exited with ${code}: ${out.slice(-2000)}`))));
  });
}

export async function load(job: Job, serverPid?: number): Promise<Sample> {
  const cpu0 = serverPid && cpuSeconds(serverPid);
  const t0 = performance.now();
  const headers = Object.entries(job.headers).map(([k, v]) => `${k}: ${v}`);
  const args = ['-t1', `-c${job.connections}`, `-d${job.seconds}s`, '--timeout', '10s', '-s', path.join(BENCH, 'lib/feed.lua'), job.url, '--'];
  const out = await run('wrk', [...args, job.feed ?? '-', job.once ? 'once' : 'cycle', job.method, String(job.rate ?? 0), ...headers]);
  const wall = (performance.now() - t0) / 1000;
  const cpu1 = serverPid && cpuSeconds(serverPid);
  const line = /^BENCH_JSON (.*)$/m.exec(out)?.[1];
  if (!line) throw new Error(`no result from the load generator:\n${out.slice(-2000)}`);
  const r = JSON.parse(line) as { requests: number; durationUs: number; errors: number; timeouts: number; wrapped: number; p50Us: number; p99Us: number; lateP99Us?: number; exact?: boolean; status: Record<string, number> };
  return {
    rps: r.requests / (r.durationUs / 1e6),
    p50: r.p50Us / 1000,
    p99: r.p99Us / 1000,
    requests: Object.values(r.status).reduce((a, b) => a + b, 0),
    status: r.status,
    errors: r.errors + r.timeouts,
    feedShort: r.wrapped,
    ...(job.rate && r.lateP99Us !== undefined ? { late: r.lateP99Us / 1000, exact: Boolean(r.exact) } : {}),
    ...(cpu0 && cpu1 ? { serverCpu: ((cpu1 - cpu0) / wall) * 100 } : {}),
  };
}

/** A feed file of `lines` (see Job.feed) in `dir`. */
export function writeFeed(dir: string, name: string, lines: string[]): string {
  const file = path.join(dir, `${name}.feed`);
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}
