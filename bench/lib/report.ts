// Summaries of the repetitions (medians and spread), the results table, the targets, and the
// Markdown and JSON documents written under bench/results/ and to bench/BASELINE.md.

export interface Sample {
  rps: number;
  p50: number;
  p99: number;
  total: number;
  /** Requests the server answered during the sample, when more than `total` (a paced run's warm-in). */
  served?: number;
  /** Responses with a status other than the case's expected one (429s not included). */
  unexpected: number;
  non2xx: number;
  status429: number;
  errors: number;
  status: Record<string, number>;
  durationSec: number;
  /** CPU used during the timed run, in % of one core: the server under load, and the load side. */
  serverCpuPct?: number;
  clientCpuPct?: number;
  /** Start and end of the timed run on the monotonic clock (µs), to cut CPU profiles to it. */
  windowUs?: [number, number];
  /** SQL queries, Redis commands and Redis round trips per request during the timed run. */
  sqlPerReq?: number;
  redisCmdsPerReq?: number;
  redisTripsPerReq?: number;
  /** Per request: each SQL statement and each Redis command name. */
  storageBreakdown?: { sql: Record<string, number>; redis: Record<string, number> };
  /** CPU used by processes outside the benchmark during the sample, in % of one core. */
  foreignCpuPct?: number;
  /** Our server only: % of the run's requests that spent over 10 ms inside it (its /metrics histogram). */
  serverOver10msPct?: number;
  note?: string;
}

export interface CaseInfo {
  id: string;
  label: string;
  server: 'ours' | 'bare' | 'koa';
  storage: string;
  expectStatus: number;
  /** The bare oidc-provider case this one is compared with. */
  reference?: string;
  /** What is measured, in a few words (for the notes under the table). */
  what: string;
  /** Paced at a fixed rate (latency below saturation): its req/s is the offered rate, no ratios. */
  paced?: boolean;
}

export interface Summary {
  reps: number;
  rps: number;
  rpsMin: number;
  rpsMax: number;
  /** Half the min–max range, relative to the median, in %. */
  spreadPct: number;
  p50: number;
  p99: number;
  p99Max: number;
  unexpected: number;
  non2xx: number;
  status429: number;
  errors: number;
  total: number;
  serverCpuPct?: number;
  clientCpuPct?: number;
  sqlPerReq?: number;
  redisCmdsPerReq?: number;
  redisTripsPerReq?: number;
  serverOver10msPct?: number;
  foreignCpuMaxPct?: number;
  /** Repetitions during which processes outside the benchmark used more than NOISY_PCT of a core. */
  noisyReps?: number;
  /** The same medians over the undisturbed repetitions only (when some were disturbed). */
  quiet?: { reps: number; rps: number; p50: number; p99: number };
  vsKoa?: number;
  vsBare?: number;
}

export interface CaseResult extends CaseInfo {
  samples: Sample[];
  summary?: Summary;
  error?: string;
}

/** Foreign CPU (% of one core) above which a repetition counts as disturbed. */
export const NOISY_PCT = 25;

export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function summarize(results: CaseResult[], koaId: string): void {
  const byId = new Map(results.map((r) => [r.id, r]));
  for (const r of results) {
    if (r.samples.length === 0) continue;
    const rps = r.samples.map((s) => s.rps);
    const med = median(rps);
    r.summary = {
      reps: r.samples.length,
      rps: med,
      rpsMin: Math.min(...rps),
      rpsMax: Math.max(...rps),
      spreadPct: med > 0 ? ((Math.max(...rps) - Math.min(...rps)) / 2 / med) * 100 : NaN,
      p50: median(r.samples.map((s) => s.p50)),
      p99: median(r.samples.map((s) => s.p99)),
      p99Max: Math.max(...r.samples.map((s) => s.p99)),
      unexpected: sum(r.samples.map((s) => s.unexpected)),
      non2xx: sum(r.samples.map((s) => s.non2xx)),
      status429: sum(r.samples.map((s) => s.status429)),
      errors: sum(r.samples.map((s) => s.errors)),
      total: sum(r.samples.map((s) => s.total)),
      ...optionalMedian('serverCpuPct', r.samples.map((s) => s.serverCpuPct)),
      ...optionalMedian('clientCpuPct', r.samples.map((s) => s.clientCpuPct)),
      ...optionalMedian('sqlPerReq', r.samples.map((s) => s.sqlPerReq)),
      ...optionalMedian('redisCmdsPerReq', r.samples.map((s) => s.redisCmdsPerReq)),
      ...optionalMedian('redisTripsPerReq', r.samples.map((s) => s.redisTripsPerReq)),
      ...optionalMedian('serverOver10msPct', r.samples.map((s) => s.serverOver10msPct)),
    };
    const foreign = r.samples.map((s) => s.foreignCpuPct).filter((v): v is number => v !== undefined);
    if (foreign.length) {
      r.summary.foreignCpuMaxPct = Math.max(...foreign);
      r.summary.noisyReps = foreign.filter((f) => f > NOISY_PCT).length;
      const quiet = r.samples.filter((s) => s.foreignCpuPct !== undefined && s.foreignCpuPct <= NOISY_PCT);
      if (r.summary.noisyReps > 0 && quiet.length > 0) {
        r.summary.quiet = {
          reps: quiet.length,
          rps: median(quiet.map((s) => s.rps)),
          p50: median(quiet.map((s) => s.p50)),
          p99: median(quiet.map((s) => s.p99)),
        };
      }
    }
  }
  const koa = byId.get(koaId)?.summary?.rps;
  for (const r of results) {
    if (!r.summary || r.paced) continue;
    if (koa) r.summary.vsKoa = r.summary.rps / koa;
    const ref = r.reference ? byId.get(r.reference)?.summary : undefined;
    // A reference that failed requests did not do the same work: no ratio against it.
    if (ref && ref.unexpected + ref.errors <= 0.001 * ref.total) r.summary.vsBare = r.summary.rps / ref.rps;
  }
}

function optionalMedian<K extends string>(key: K, values: (number | undefined)[]): Partial<Record<K, number>> {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length ? ({ [key]: median(known) } as Record<K, number>) : {};
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

const fmt = {
  rps: (n: number) => (Number.isFinite(n) ? (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1)) : '–'),
  ms: (n: number) => (Number.isFinite(n) ? (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2)) : '–'),
  ratio: (n: number | undefined) => (n !== undefined && Number.isFinite(n) ? `${n.toFixed(2)}×` : '–'),
  pct: (n: number) => (Number.isFinite(n) ? `±${n.toFixed(1)}%` : '–'),
};

function serverLabel(r: CaseResult): string {
  const name = r.server === 'ours' ? `ours (${r.storage})` : r.server === 'bare' ? 'bare oidc-provider' : 'Koa hello';
  return r.paced ? `${name}, paced` : name;
}

export function resultsTable(results: CaseResult[]): string {
  const head = ['case', 'server', 'req/s (median)', 'spread', 'p50 ms', 'p99 ms', 'non-2xx', '429', 'vs Koa hello', 'vs bare oidc-provider'];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((h, i) => (i < 2 ? '---' : '---:')).join('|')}|`];
  for (const r of results) {
    const s = r.summary;
    const server = serverLabel(r);
    if (!s) {
      lines.push(`| ${r.label} | ${server} | ${r.error ? `failed: ${r.error.split('\n')[0]!.slice(0, 80)}` : 'not run'} | | | | | | | |`);
      continue;
    }
    const non2xx = r.expectStatus === 200 ? String(s.unexpected) : `${s.unexpected} unexpected (${r.expectStatus} expected)`;
    lines.push(
      `| ${r.label} | ${server} | ${fmt.rps(s.rps)} | ${fmt.pct(s.spreadPct)} (${fmt.rps(s.rpsMin)}–${fmt.rps(s.rpsMax)}) | ${fmt.ms(s.p50)} | ${fmt.ms(s.p99)} | ${non2xx}${s.errors ? `, ${s.errors} socket errors` : ''} | ${s.status429} | ${fmt.ratio(s.vsKoa)} | ${fmt.ratio(s.vsBare)} |`,
    );
  }
  return lines.join('\n');
}

/** Where the time goes: CPU of the server and of the load side, foreign CPU, storage round trips. */
export function diagnosticsTable(results: CaseResult[]): string {
  const pct = (n: number | undefined) => (n === undefined ? '–' : `${n.toFixed(0)}%`);
  const per = (n: number | undefined) => (n === undefined ? '–' : n.toFixed(2));
  const lines = [
    '| case | server | server CPU | load side CPU | foreign CPU: worst rep (reps above 25%) | undisturbed reps only: req/s, p99 ms | SQL queries / req | Redis commands / req | Redis round trips / req | over 10 ms inside our server |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of results) {
    const s = r.summary;
    if (!s) continue;
    const server = serverLabel(r);
    lines.push(`| ${r.label} | ${server} | ${pct(s.serverCpuPct)} | ${pct(s.clientCpuPct)} | ${pct(s.foreignCpuMaxPct)}${s.noisyReps !== undefined ? ` (${s.noisyReps}/${s.reps})` : ''} | ${s.quiet ? `${fmt.rps(s.quiet.rps)}, ${fmt.ms(s.quiet.p99)} (${s.quiet.reps} reps)` : s.noisyReps === 0 ? 'all' : s.noisyReps ? 'none' : '–'} | ${per(s.sqlPerReq)} | ${per(s.redisCmdsPerReq)} | ${per(s.redisTripsPerReq)} | ${s.serverOver10msPct === undefined ? '–' : `${s.serverOver10msPct.toFixed(2)}%`} |`);
  }
  return lines.join('\n');
}

export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean | undefined;
}

export function targetsTable(targets: TargetCheck[]): string {
  const lines = ['| target | measured | |', '|---|---|---|'];
  for (const t of targets) lines.push(`| ${t.target} | ${t.measured} | ${t.met === undefined ? 'not measured' : t.met ? '**met**' : '**missed**'} |`);
  return lines.join('\n');
}

export function evaluateTargets(results: CaseResult[], prefix = 'pg', connections = 32): TargetCheck[] {
  const get = (id: string) => results.find((r) => r.id === id)?.summary;
  const check = get(`${prefix}.check`);
  const me = get(`${prefix}.me`);
  const refresh = get(`${prefix}.refresh`);
  const code = get(`${prefix}.code`);
  const bad = get(`${prefix}.badauth`);
  const out: TargetCheck[] = [];
  const ratio = (s: Summary | undefined, min: number, name: string) =>
    out.push({ target: `${name} ≥ ${min.toFixed(1)}× bare oidc-provider`, measured: s?.vsBare !== undefined ? fmt.ratio(s.vsBare) : '–', met: s?.vsBare !== undefined ? s.vsBare >= min : undefined });
  // At saturation (closed loop), `connections` requests are always in flight, so the mean latency
  // is connections / throughput (Little's law): a p99 below that is impossible at that rate.
  const saturated = (s: Summary, bare: Summary | undefined) =>
    `; at saturation the mean is at least ${connections} / ${fmt.rps(s.rps)} req/s = ${fmt.ms((connections / s.rps) * 1000)} ms${bare ? `, and bare oidc-provider's p99 in this run is ${fmt.ms(bare.p99)} ms` : ''}`;
  // Where the time went: inside our server (its own latency histogram) or outside it.
  const inside = (s: Summary, max: number) =>
    max === 10 && s.serverOver10msPct !== undefined ? `; inside our server ${s.serverOver10msPct.toFixed(2)}% of requests took over 10 ms` : '';
  const p99 = (s: Summary | undefined, max: number, name: string, bare?: Summary | null) =>
    out.push({
      target: `${name} p99 ≤ ${max} ms`,
      measured: s
        ? `${fmt.ms(s.p99)} ms (median of reps; worst rep ${fmt.ms(s.p99Max)} ms${s.quiet ? `; ${fmt.ms(s.quiet.p99)} ms over the ${s.quiet.reps} undisturbed reps` : ''}${bare !== undefined ? saturated(s, bare ?? undefined) : ''}${inside(s, max)})`
        : '–',
      met: s ? s.p99 <= max : undefined,
    });
  ratio(check, 1.0, 'GET /v2/auth/check');
  p99(check, 10, 'GET /v2/auth/check', get('bare.check') ?? null);
  const pacedLabel = (id: string) => results.find((r) => r.id === id)?.label.replace(/^.* at /, 'at ') ?? '';
  p99(get(`${prefix}.check@paced`), 10, `GET /v2/auth/check ${pacedLabel(`${prefix}.check@paced`)} (open loop)`);
  ratio(me, 0.7, 'GET /v2/me');
  ratio(refresh, 1.0, 'refresh_token grant');
  p99(refresh, 50, 'refresh_token grant', get('bare.refresh') ?? null);
  p99(get(`${prefix}.refresh@paced`), 50, `refresh_token grant ${pacedLabel(`${prefix}.refresh@paced`)} (open loop)`);
  if (bad && refresh) {
    const cheaper = bad.rps >= refresh.rps && bad.p50 <= refresh.p50;
    out.push({
      target: 'failed client authentication costs no more than a successful token request',
      measured: `${fmt.rps(bad.rps)} req/s, p50 ${fmt.ms(bad.p50)} ms vs refresh ${fmt.rps(refresh.rps)} req/s, p50 ${fmt.ms(refresh.p50)} ms${code ? ` (code exchange ${fmt.rps(code.rps)} req/s)` : ''}`,
      met: cheaper,
    });
  } else out.push({ target: 'failed client authentication costs no more than a successful token request', measured: '–', met: undefined });
  const success = results.filter((r) => r.server === 'ours' && r.expectStatus === 200 && r.summary);
  const bad2xx = success.filter((r) => r.summary!.unexpected + r.summary!.status429 + r.summary!.errors > 0);
  out.push({
    target: 'zero non-2xx in the success cases (ours)',
    measured: bad2xx.length ? bad2xx.map((r) => `${r.label} (${r.storage}): ${r.summary!.unexpected + r.summary!.status429} non-2xx, ${r.summary!.errors} errors`).join('; ') : `0 in ${success.length} cases`,
    met: success.length ? bad2xx.length === 0 : undefined,
  });
  return out;
}

export interface MemoryPoint {
  server: string;
  when: string;
  rssMiB: number;
  peakMiB: number;
}

export function memoryTable(points: MemoryPoint[]): string {
  const lines = ['| server | when | RSS MiB | peak RSS MiB |', '|---|---|---:|---:|'];
  for (const p of points) lines.push(`| ${p.server} | ${p.when} | ${p.rssMiB.toFixed(1)} | ${p.peakMiB.toFixed(1)} |`);
  return lines.join('\n');
}

export interface ResultsDoc {
  meta: { headline: string; [key: string]: unknown };
  results: CaseResult[];
  targets: TargetCheck[];
  memory: MemoryPoint[];
  profiles: string[];
}

/** The Markdown report (bench/results/*.md, bench/BASELINE.md) of a run. */
export function renderMarkdown({ meta, results, targets, memory, profiles }: ResultsDoc): string {
  const mainRows = results.filter((r) => r.server !== 'ours' || r.id.startsWith('pg.'));
  const pgliteRows = results.filter((r) => r.id.startsWith('pglite.'));
  return [
    '# Benchmark results',
    '',
    meta.headline,
    '',
    ...(mainRows.length ? ['## PostgreSQL + Redis, with the references', '', resultsTable(mainRows), ''] : []),
    ...(pgliteRows.length ? ['## Embedded PGlite (the zero-configuration default, development mode)', '', resultsTable(pgliteRows), ''] : []),
    'req/s: median of the timed repetitions (flows/s for the interactive flow); spread: half the min–max range; p50/p99: medians over the repetitions of each one’s percentile ' +
      '(autocannon reports whole milliseconds; the paced rows are measured to 0.01 ms from each request’s due time). ' +
      'non-2xx: responses other than the expected status (429 counted apart); ratios divide medians measured in this same run. ' +
      '“bare oidc-provider” rows: GET /me (userinfo) is its bearer verification, the reference for /v2/auth/check and /v2/me.',
    '',
    ...(targets.length ? ['## Targets', '', targetsTable(targets), ''] : []),
    '## Diagnostics',
    '',
    diagnosticsTable(results),
    '',
    'server CPU: the server under load, in % of its core, during the timed runs (below ~95% it waits: for PostgreSQL/Redis, or for the load side); ' +
      'load side: the autocannon process (or, for flows, the runner); foreign CPU: everything on the machine outside the benchmark, its PostgreSQL backends and Redis ' +
      `(a repetition above ${NOISY_PCT}% of a core counts as disturbed; the next column repeats the medians without those); ` +
      'SQL queries, Redis commands and Redis round trips (a MULTI or pipeline is one) per request, counted inside our server by bench/lib/probe.ts.',
    '',
    ...(memory.length ? ['## Memory (RSS from /proc)', '', memoryTable(memory), ''] : []),
    '## What each case does',
    '',
    ...results.map(
      (r) =>
        `- \`${r.id}\` — ${r.what}${r.samples.some((s) => s.note) ? ` (notes: ${[...new Set(r.samples.map((s) => s.note).filter(Boolean))].join('; ')})` : ''}${r.error ? ` — **failed**: ${r.error.split('\n')[0]}` : ''}`,
    ),
    '',
    ...(profiles.length ? ['## CPU profile', '', ...profiles, ''] : []),
  ].join('\n');
}
