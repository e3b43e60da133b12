// The open-loop load generator. wrk cannot pace: its Lua delay() spaces requests per connection and
// its latency starts when a request is sent, which hides the queue behind a stall. This sends at a
// fixed rate whatever the answers, over at most `connections` keep-alive sockets, and counts each
// latency from the moment the request was due. Run by load.ts on the load core; prints BENCH_JSON.
import fs from 'node:fs';
import http from 'node:http';
import type { Job } from './load.ts';

const job = JSON.parse(process.argv[2]!) as Job & { rate: number };
const lines = job.feed ? fs.readFileSync(job.feed, 'utf8').split('\n').filter(Boolean) : [''];
const url = new URL(job.url);
const agent = new http.Agent({ keepAlive: true, maxSockets: job.connections });
const [latencies, late, status] = [[] as number[], [] as number[], {} as Record<string, number>];
let [errors, sent, inFlight] = [0, 0, 0];
const start = performance.now() + 5;
const measuredFrom = start + 1000; // the first second opens the sockets: its latencies are not counted
const end = measuredFrom + job.seconds * 1000;

function fire(due: number): void {
  if (due >= measuredFrom) late.push(performance.now() - due); // this loop's own delay: a busy load core
  const [auth = '', body = ''] = lines[sent++ % lines.length]!.split('\t');
  const headers = { ...job.headers, ...(auth ? { authorization: auth } : {}), ...(body ? { 'content-length': Buffer.byteLength(body) } : {}) };
  inFlight++;
  const req = http.request({ agent, host: url.hostname, port: url.port, path: url.pathname, method: job.method, headers }, (res) => {
    res.resume().on('end', () => {
      if (due >= measuredFrom) latencies.push(performance.now() - due);
      status[res.statusCode!] = (status[res.statusCode!] ?? 0) + 1;
      inFlight--;
    });
  });
  req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
  req.on('error', () => void (errors++, inFlight--));
  req.end(body || undefined);
}

// Timers fire a millisecond late at best: each wake-up sends every request that is due by then.
const due = (i: number) => start + (i * 1000) / job.rate;
for (let i = 0; due(i) < end; ) {
  while (due(i) <= performance.now() && due(i) < end) fire(due(i++));
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, due(i) - performance.now())));
}
for (let waited = 0; inFlight > 0 && waited < 10_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
const pct = (v: number[], p: number) => (v.sort((a, b) => a - b)[Math.ceil((p / 100) * v.length) - 1] ?? NaN) * 1000;
const wrapped = job.once ? Math.max(0, sent - lines.length) : 0;
const result = { requests: latencies.length, durationUs: (end - measuredFrom) * 1000, errors, timeouts: 0, wrapped, p50Us: pct(latencies, 50), p99Us: pct(latencies, 99), lateP99Us: pct(late, 99), status };
console.log(`BENCH_JSON ${JSON.stringify(result)}`);
agent.destroy();
