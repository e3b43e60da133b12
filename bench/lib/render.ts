// Re-renders the Markdown report of a results JSON (summaries and targets recomputed from the
// raw repetitions), e.g. after a change to the report format:
//   node --import tsx bench/lib/render.ts bench/results/latest.json > report.md
import fs from 'node:fs';
import { evaluateTargets, renderMarkdown, summarize, type ResultsDoc } from './report.ts';

const file = process.argv[2];
if (!file) {
  console.error('usage: node --import tsx bench/lib/render.ts RESULTS.json');
  process.exit(2);
}
const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as ResultsDoc;
doc.profiles ??= [];
doc.meta.headline ??= String(doc.meta.date ?? '');
summarize(doc.results, 'koa.hello');
if (doc.targets.length) doc.targets = evaluateTargets(doc.results, 'pg');
console.log(renderMarkdown(doc));
