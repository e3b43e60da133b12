// The load generator process (started by procs.ts on its own core): runs autocannon jobs sent by
// the runner over IPC and answers with a compact result. Nothing else runs in this process, so
// the measuring side never competes with the runner's own work.
import http from 'node:http';
import autocannon, { type AutocannonRequest } from 'autocannon';
import { cpuSeconds } from './cpu.ts';

export interface Feed {
  /** Pre-made single-use values (authorization codes, refresh tokens), taken once each. */
  values: string[];
  /** Request body with `{value}` replaced by the URL-encoded value. */
  template: string;
  /**
   * A field of a 200 JSON response that yields the next value (a rotated refresh token): it goes
   * back on the stack, so every connection keeps refreshing a live token. Values are never reused.
   */
  chainField?: string;
}

export interface LoadJob {
  label: string;
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  connections: number;
  /** Seconds; or `amount` requests in all (exactly as many as pre-made values). */
  duration?: number;
  amount?: number;
  feed?: Feed;
  /**
   * Open loop instead of autocannon's closed loop: requests are sent at this fixed rate (req/s)
   * whatever the answers, over at most `connections` keep-alive sockets, and each latency is
   * counted from the moment the request was due (no coordinated omission).
   */
  rate?: number;
  /** The server under load: its CPU use during the run is reported. */
  serverPid?: number;
}

export interface LoadResult {
  label: string;
  durationSec: number;
  total: number;
  rps: number;
  latency: { mean: number; p50: number; p90: number; p99: number; max: number };
  status: Record<string, number>;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Paced runs: every request answered, the unmeasured warm-in included (what the server saw). */
  served?: number;
  /** Requests sent with no value left in the feed (they fail, and count as non-2xx). */
  feedEmpty: number;
  feedLeft: number;
  /** CPU used during the run, in % of one core: the server under load, and this load generator. */
  serverCpuPct?: number;
  clientCpuPct: number;
  /** The run's start and end on the monotonic clock, in µs (the clock of V8 CPU profiles). */
  windowUs: [number, number];
}

/** The feed as a stack: single-use values, refilled by chaining. */
function feeder(feed: Feed | undefined) {
  const stack = feed ? [...feed.values].reverse() : [];
  let empty = 0;
  return {
    body(): string | undefined {
      if (!feed) return undefined;
      let value = stack.pop();
      if (value === undefined) {
        empty++;
        value = 'feed-exhausted';
      }
      return feed.template.replace('{value}', encodeURIComponent(value));
    },
    answer(status: number, body: string): void {
      if (!feed?.chainField || status !== 200) return;
      try {
        const next = (JSON.parse(body) as Record<string, unknown>)[feed.chainField];
        if (typeof next === 'string') stack.push(next);
      } catch {
        // not JSON: nothing to chain
      }
    },
    get empty() {
      return empty;
    },
    get left() {
      return stack.length;
    },
  };
}

function pct(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function runPaced(job: LoadJob, rate: number): Promise<Omit<LoadResult, 'serverCpuPct' | 'clientCpuPct' | 'windowUs'>> {
  const feed = feeder(job.feed);
  const url = new URL(job.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.connections });
  const latencies: number[] = [];
  const status: Record<string, number> = {};
  let errors = 0;
  let served = 0;
  let inFlight = 0;
  let drained: (() => void) | undefined;
  const fire = (due: number) => {
    const body = feed.body() ?? job.body;
    inFlight++;
    const done = () => {
      inFlight--;
      if (inFlight === 0) drained?.();
    };
    const req = http.request(
      { agent, host: url.hostname, port: url.port, path: url.pathname + url.search, method: job.method, headers: { ...job.headers, ...(body !== undefined ? { 'content-length': Buffer.byteLength(body) } : {}) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          const code = res.statusCode ?? 0;
          served++;
          if (due >= measuredFrom) {
            latencies.push(performance.now() - due);
            status[code] = (status[code] ?? 0) + 1;
          }
          feed.answer(code, text);
          done();
        });
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.on('error', () => {
      if (due >= measuredFrom) errors++;
      done();
    });
    req.end(body);
  };
  const interval = 1000 / rate;
  // Half a second at the rate before the measured window: sockets open, code warm.
  const warmIn = 500;
  const start = performance.now() + 5;
  const measuredFrom = start + warmIn;
  const end = measuredFrom + (job.duration ?? 5) * 1000;
  let i = 0;
  for (;;) {
    const now = performance.now();
    for (let due = start + i * interval; due <= now && due < end; due = start + ++i * interval) fire(due);
    const next = start + i * interval;
    if (next >= end) break;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
  }
  if (inFlight > 0) await Promise.race([new Promise<void>((resolve) => (drained = resolve)), new Promise((resolve) => setTimeout(resolve, 10_000))]);
  const elapsed = (performance.now() - measuredFrom) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const total = latencies.length;
  const non2xx = Object.entries(status).reduce((n, [code, count]) => n + (code.startsWith('2') ? 0 : count), 0);
  return {
    label: job.label,
    durationSec: elapsed,
    total,
    rps: total / elapsed,
    latency: { mean: total ? latencies.reduce((a, b) => a + b, 0) / total : NaN, p50: pct(latencies, 50), p90: pct(latencies, 90), p99: pct(latencies, 99), max: latencies[total - 1] ?? NaN },
    status,
    non2xx,
    errors,
    timeouts: 0,
    served,
    feedEmpty: feed.empty,
    feedLeft: feed.left,
  };
}

async function runClosed(job: LoadJob): Promise<Omit<LoadResult, 'serverCpuPct' | 'clientCpuPct' | 'windowUs'>> {
  const feed = feeder(job.feed);
  const requests: AutocannonRequest[] | undefined = job.feed
    ? [
        {
          method: job.method,
          setupRequest: (req: AutocannonRequest) => ({ ...req, body: feed.body()! }),
          onResponse: (status: number, body: string) => feed.answer(status, body),
        },
      ]
    : undefined;

  const result = await autocannon({
    url: job.url,
    method: job.method,
    headers: job.headers,
    connections: job.connections,
    pipelining: 1,
    timeout: 10,
    ...(job.amount ? { amount: job.amount } : { duration: job.duration ?? 5 }),
    ...(requests ? { requests } : job.body !== undefined ? { body: job.body } : {}),
  });

  const status: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) status[code] = count;
  const total = result.requests.total;
  return {
    label: job.label,
    durationSec: result.duration,
    total,
    rps: result.duration > 0 ? total / result.duration : 0,
    latency: {
      mean: result.latency.mean,
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
    },
    status,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    feedEmpty: feed.empty,
    feedLeft: feed.left,
  };
}

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

async function runJob(job: LoadJob): Promise<LoadResult> {
  const start = monotonicUs();
  const server0 = job.serverPid ? cpuSeconds(job.serverPid) : undefined;
  const client0 = process.cpuUsage();
  const t0 = performance.now();
  const result = job.rate ? await runPaced(job, job.rate) : await runClosed(job);
  const wall = (performance.now() - t0) / 1000;
  const server1 = job.serverPid ? cpuSeconds(job.serverPid) : undefined;
  const client = process.cpuUsage(client0);
  return {
    ...result,
    ...(server0 !== undefined && server1 !== undefined ? { serverCpuPct: ((server1 - server0) / wall) * 100 } : {}),
    clientCpuPct: ((client.user + client.system) / 1e6 / wall) * 100,
    windowUs: [start, monotonicUs()],
  };
}

if (!process.send) {
  console.error('bench/lib/load.ts is started by bench/run.ts');
  process.exit(2);
}
process.once('disconnect', () => process.exit(0));
process.on('message', (msg: { id: number; job: LoadJob }) => {
  runJob(msg.job).then(
    (result) => process.send!({ id: msg.id, result }),
    (err: Error) => process.send!({ id: msg.id, error: err.stack ?? err.message }),
  );
});
process.send({ id: 0, ready: true });
