// Summary of a V8 CPU profile (`node --cpu-prof`): where the server's time went, by function
// (self and inclusive time) and by origin (our src/ files, each npm package, Node internals,
// GC). Used by `npm run bench -- --profile CASE`; also runnable on its own:
//   node --import tsx bench/lib/profile.ts FILE.cpuprofile [TOP]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function origin(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const file = url.replace(/^file:\/\//, '');
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (nm) return nm[1]!;
  if (file.startsWith('node:')) return 'node internals';
  if (file.startsWith(ROOT)) return path.relative(ROOT, file);
  return file;
}

function where(frame: CallFrame): string {
  const file = frame.url.replace(/^file:\/\//, '');
  const short = file.startsWith(ROOT) ? path.relative(ROOT, file) : file.replace(/.*node_modules\//, '');
  return `${frame.functionName || '(anonymous)'} ${short ? `${short}:${frame.lineNumber + 1}` : ''}`.trim();
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  busyMs: number;
  byOrigin: { origin: string; selfMs: number; pct: number }[];
  topSelf: { fn: string; selfMs: number; pct: number }[];
  topInclusive: { fn: string; totalMs: number; pct: number }[];
}

/** `windows`: only samples taken within these [start, end] µs ranges (the timed runs). */
export function summarizeProfile(file: string, top = 25, windows: [number, number][] = []): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const selfById = new Map<number, number>();
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    if (windows.length && !windows.some(([a, b]) => t >= a && t <= b)) return;
    selfById.set(id, (selfById.get(id) ?? 0) + delta / 1000);
  });

  let totalMs = 0;
  let idleMs = 0;
  const byOrigin = new Map<string, number>();
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, ms] of selfById) {
    const node = nodes.get(id)!;
    totalMs += ms;
    if (node.callFrame.functionName === '(idle)') {
      idleMs += ms;
      continue;
    }
    const o = origin(node.callFrame);
    byOrigin.set(o, (byOrigin.get(o) ?? 0) + ms);
    const key = where(node.callFrame);
    self.set(key, (self.get(key) ?? 0) + ms);
    // Inclusive: every distinct function on the stack gets the sample once.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = where(nodes.get(cur)!.callFrame);
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + ms);
    }
  }
  const busyMs = totalMs - idleMs;
  const pct = (ms: number) => (busyMs ? (ms / busyMs) * 100 : 0);
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  return {
    totalMs,
    idleMs,
    busyMs,
    byOrigin: sorted(byOrigin).slice(0, top).map(([o, ms]) => ({ origin: o, selfMs: ms, pct: pct(ms) })),
    topSelf: sorted(self).slice(0, top).map(([fn, ms]) => ({ fn, selfMs: ms, pct: pct(ms) })),
    topInclusive: sorted(inclusive)
      .filter(([fn]) => !/^\((root|program)\)/.test(fn))
      .slice(0, top)
      .map(([fn, ms]) => ({ fn, totalMs: ms, pct: pct(ms) })),
  };
}

export function profileMarkdown(s: ProfileSummary, title: string): string {
  const lines = [
    `### ${title}`,
    '',
    `Profiled ${(s.totalMs / 1000).toFixed(1)} s, busy ${(s.busyMs / 1000).toFixed(1)} s (${((s.busyMs / s.totalMs) * 100).toFixed(0)}% of the core), idle ${(s.idleMs / 1000).toFixed(1)} s. Percentages are of busy time.`,
    '',
    '**Self time by origin**',
    '',
    '| origin | self ms | % |',
    '|---|---:|---:|',
    ...s.byOrigin.map((o) => `| ${o.origin} | ${o.selfMs.toFixed(0)} | ${o.pct.toFixed(1)} |`),
    '',
    '**Top functions, self time**',
    '',
    '| function | self ms | % |',
    '|---|---:|---:|',
    ...s.topSelf.map((f) => `| \`${f.fn}\` | ${f.selfMs.toFixed(0)} | ${f.pct.toFixed(1)} |`),
    '',
    '**Top functions, inclusive time** (the function and what it calls)',
    '',
    '| function | total ms | % |',
    '|---|---:|---:|',
    ...s.topInclusive.map((f) => `| \`${f.fn}\` | ${f.totalMs.toFixed(0)} | ${f.pct.toFixed(1)} |`),
  ];
  return lines.join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    console.error('usage: node --import tsx bench/lib/profile.ts FILE.cpuprofile [TOP]');
    process.exit(2);
  }
  console.log(profileMarkdown(summarizeProfile(file, Number(top) || 25), path.basename(file)));
}
