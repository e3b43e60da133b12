// Medians of the repetitions, ratios to the anchors, the targets, and the Markdown report.
import type { Sample } from './load.ts';

export interface CaseInfo {
  id: string;
  label: string;
  /** The server's name: ours, or the anchor's. */
  server: string;
  /** The case whose median this one is divided by (its anchor, run right before it). */
  anchor?: string;
  paced?: boolean;
}

export interface CaseResult extends CaseInfo {
  samples: Sample[];
  error?: string;
}

export function median(values: number[]): number {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (!v.length) return NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

const opt = (values: (number | undefined)[]) => (values.some((v) => v !== undefined) ? median(values.map((v) => v ?? NaN)) : undefined);

/** A run whose feed ran short (spent tokens presented again) measured something else: left out. */
const valid = (x: Sample) => x.feedShort === 0;

export type Summary = NonNullable<ReturnType<typeof summarize>>;

export function summarize(r: CaseResult, byId: Map<string, CaseResult>) {
  const s = r.samples.filter(valid);
  if (!s.length) return undefined;
  const rps = s.map((x) => x.rps);
  const anchor = r.anchor ? byId.get(r.anchor)?.samples : undefined;
  // Per repetition: ours ÷ the anchor run right before it, both valid.
  const ratios = anchor ? r.samples.map((x, i) => (valid(x) && anchor[i] && valid(anchor[i]) ? x.rps / anchor[i].rps : NaN)).filter(Number.isFinite) : [];
  const anchorMedian = anchor?.length ? median(anchor.filter(valid).map((x) => x.rps)) : NaN;
  const last = s.at(-1)!;
  return {
    rps: median(rps),
    rpsMin: Math.min(...rps),
    rpsMax: Math.max(...rps),
    p50: median(s.map((x) => x.p50)),
    p99: median(s.map((x) => x.p99)),
    p99Max: Math.max(...s.map((x) => x.p99)),
    late: opt(s.map((x) => x.late)),
    exact: s.every((x) => x.exact),
    unexpected: s.reduce((n, x) => n + x.errors + Object.entries(x.status).reduce((m, [code, c]) => m + (code === '200' ? 0 : c), 0), 0),
    status429: s.reduce((n, x) => n + (x.status['429'] ?? 0), 0),
    feedShort: r.samples.reduce((n, x) => n + x.feedShort, 0),
    ...(Number.isFinite(anchorMedian) ? { ratio: median(rps) / anchorMedian, ratioMin: Math.min(...ratios), ratioMax: Math.max(...ratios) } : {}),
    serverCpu: opt(s.map((x) => x.serverCpu)),
    foreignCpuMax: Math.max(...s.map((x) => x.foreignCpu ?? 0)),
    redisCmds: opt(s.map((x) => x.redisCmds)),
    redisReads: opt(s.map((x) => x.redisReads)),
    redisShared: s.some((x) => x.redisShared),
    sqlXacts: opt(s.map((x) => x.sqlXacts)),
    sqlRows: opt(s.map((x) => x.sqlRows)),
    ...(last.redisBreakdown ? { breakdown: last.redisBreakdown } : {}),
  };
}

export const fmt = {
  n: (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? '–' : v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(1)),
  ms: (v: number) => (!Number.isFinite(v) ? '–' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)),
  x: (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? '–' : `${v.toFixed(2)}×`),
  per: (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(2)),
};

export function resultsTable(results: CaseResult[], sums: Map<string, Summary>): string {
  const rows = [
    '| case | server | req/s (median) | min–max | p50 ms | p99 ms | ratio (per-rep range) | unexpected | server CPU | SQL xacts / req | SQL rows / req | Redis cmds / req | Redis reads / req |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of results) {
    const s = sums.get(r.id);
    if (!s) {
      rows.push(`| ${r.label} | ${r.server} | ${r.error ? `failed: ${r.error.split('\n')[0]!.slice(0, 100)}` : 'not run'} |||||||||||`);
      continue;
    }
    const ratio = s.ratio === undefined ? '–' : `**${fmt.x(s.ratio)}** (${fmt.x(s.ratioMin)}–${fmt.x(s.ratioMax)})`;
    const bad = s.unexpected + s.feedShort ? `**${s.unexpected}**${s.feedShort ? `, ${s.feedShort} spent tokens` : ''}` : '0';
    const shared = s.redisShared ? '*' : '';
    rows.push(
      `| ${r.label} | ${r.server} | ${r.paced ? `${fmt.n(s.rps)} (paced)` : fmt.n(s.rps)} | ${fmt.n(s.rpsMin)}–${fmt.n(s.rpsMax)} | ${fmt.ms(s.p50)} | ${fmt.ms(s.p99)}${s.late !== undefined ? (s.exact ? ' (exact)' : ` (bound; sends late ${fmt.ms(s.late)})`) : ''} | ${ratio} | ${bad} | ${s.serverCpu === undefined ? '–' : `${s.serverCpu.toFixed(0)}%`} | ${fmt.per(s.sqlXacts)} | ${fmt.per(s.sqlRows)} | ${fmt.per(s.redisCmds)}${shared} | ${fmt.per(s.redisReads)}${shared} |`,
    );
  }
  return rows.join('\n');
}

export interface Target {
  target: string;
  measured: string;
  met: boolean | undefined;
}

export function targetsTable(targets: Target[]): string {
  return ['| target | measured | |', '|---|---|---|', ...targets.map((t) => `| ${t.target} | ${t.measured} | ${t.met === undefined ? '–' : t.met ? 'met' : '**missed**'} |`)].join('\n');
}
