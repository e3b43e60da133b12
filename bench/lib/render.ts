// Re-renders the Markdown report of a results JSON (summaries and targets recomputed from the
// raw repetitions), e.g. after a change to the report format, or to make a quieter run the
// baseline:
//   node --import tsx bench/lib/render.ts bench/results/latest.json > report.md
//   node --import tsx bench/lib/render.ts bench/results/bench-…-full.json --baseline
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { evaluateTargets, renderMarkdown, summarize, type ResultsDoc } from './report.ts';

const [file, flag] = process.argv.slice(2);
if (!file || (flag && flag !== '--baseline')) {
  console.error('usage: node --import tsx bench/lib/render.ts RESULTS.json [--baseline]');
  process.exit(2);
}
const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as ResultsDoc;
doc.profiles ??= [];
doc.meta.headline ??= String(doc.meta.date ?? '');
summarize(doc.results, 'koa.hello');
if (doc.targets.length) doc.targets = evaluateTargets(doc.results, 'pg');
const md = renderMarkdown(doc);
if (flag === '--baseline') {
  const baseline = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../BASELINE.md');
  fs.writeFileSync(baseline, md.replace('# Benchmark results', '# Benchmark baseline\n\nThe latest full `npm run bench` (written by bench/run.ts; regenerate rather than edit).'));
  console.error(`written ${path.relative(process.cwd(), baseline)}`);
} else {
  console.log(md);
}
