// Issue 48 item 2: the layers of src/ (.dependency-cruiser.cjs, the floors written once as data),
// held to the real import graph: an import that breaks one fails here with the rule's sentence,
// as `npm run check:layers` fails CI. The map of docs/architecture.md names every folder of src/.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('the layers of src/', () => {
  it('every import keeps to the floors, with no circle', async () => {
    const options = await extractDepcruiseOptions(path.join(ROOT, '.dependency-cruiser.cjs'));
    const result = await cruise(['src'], { ...options, baseDir: ROOT, outputType: 'json' }, {}, { tsConfig: extractTSConfig(path.join(ROOT, 'tsconfig.json')) });
    const summary = (typeof result.output === 'string' ? JSON.parse(result.output) : result.output).summary as { violations: IViolation[]; totalCruised: number };
    expect(summary.totalCruised).toBeGreaterThan(100); // the tree was read
    const broken = summary.violations.map((v) => {
      const rule = options.ruleSet?.forbidden?.find((r) => r.name === v.rule.name);
      return `${v.from} → ${v.cycle?.length ? v.cycle.map((c) => (typeof c === 'string' ? c : c.name)).join(' → ') : v.to}: ${v.rule.name}: ${rule?.comment ?? ''}`;
    });
    expect(broken, broken.join('\n')).toEqual([]);
  }, 60_000);
});

describe("docs/architecture.md's module map", () => {
  const doc = fs.readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
  const map = doc.slice(doc.indexOf('## Module map'), doc.indexOf('\n## ', doc.indexOf('## Module map') + 1));
  const named = new Set([...map.matchAll(/^\| `src\/([^`/]+)\/`/gm)].map((m) => m[1]!));
  const folders = fs
    .readdirSync(path.join(ROOT, 'src'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);

  it('names every folder of src/', () => {
    const missing = folders.filter((folder) => !named.has(folder)).map((f) => `src/${f}/ is not in the module map`);
    expect(missing, missing.join('\n')).toEqual([]);
  });

  it('names no folder that does not exist', () => {
    const gone = [...named].filter((folder) => !folders.includes(folder)).map((f) => `the module map names src/${f}/, which does not exist`);
    expect(gone, gone.join('\n')).toEqual([]);
  });
});
