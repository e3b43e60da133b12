// Issue 48 item 1: every reach past a library's published API lives in src/seams/. Each seam
// names the library files it was checked against, by sha256; an upgrade that changes one fails
// here, naming the file and what of it the seam relies on: read the change, bring the seam in
// line, then update its fingerprint.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { UpstreamFile } from '../../src/seams/upstream.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SEAMS = path.join(ROOT, 'src/seams');
const seamFiles = fs.readdirSync(SEAMS).filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts') && name !== 'upstream.ts');

describe('the seams to the libraries (src/seams/)', () => {
  it('each seam names the library files it relies on', async () => {
    expect(seamFiles.length).toBeGreaterThanOrEqual(5);
    for (const name of seamFiles) {
      const { UPSTREAM } = (await import(path.join(SEAMS, name))) as { UPSTREAM?: readonly UpstreamFile[] };
      expect(UPSTREAM?.length, `src/seams/${name} exports no UPSTREAM`).toBeGreaterThan(0);
    }
  });

  it('those files are unchanged since each seam was checked against them', async () => {
    const changed: string[] = [];
    for (const name of seamFiles) {
      const { UPSTREAM } = (await import(path.join(SEAMS, name))) as { UPSTREAM: readonly UpstreamFile[] };
      for (const { file, sha256, what } of UPSTREAM) {
        const actual = createHash('sha256').update(fs.readFileSync(path.join(ROOT, 'node_modules', file))).digest('hex');
        if (actual !== sha256) changed.push(`${file} changed: review src/seams/${name} (${what})`);
      }
    }
    expect(changed, changed.join('\n')).toEqual([]);
  });
});
