// Issue 46: a test waits for a condition (test/support/eventually.ts), never for a fixed time. A
// fixed wait is slow where the machine is fast and fails where it is slow (the reason the suite ran
// one file at a time: a 50 ms wait under load). Where a rule depends on time, the system takes a
// clock the test moves. The few files whose subject is time itself are listed here with why.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const TEST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Files that may wait a fixed time, each with its reason. */
const ALLOWED: Record<string, string> = {
  'adapters.contract.test.ts': "the stores' own expiry (a Redis TTL, SQL expires_at against now()) on real time, proven once per store",
  'org-consent.test.ts': 'concurrent install and uninstall: the uninstall polls for the installation at 0-3 ms apart, a different spacing each round, to vary the interleavings (a stagger, not a wait for a condition; setImmediate turns would not span a database round trip)',
  'org-installs.test.ts': 'concurrent install, authorization and uninstall: each starts 0-3 ms late, a different offset each round, to vary the interleavings (a stagger, not a wait for a condition; setImmediate turns would not span a database round trip)',
  'webhook-fairness.test.ts': "its subject is a delay: while tarpits hold attempts for the 5-s timeout, the worker slots poll for 1.5 s so that a broken per-owner limit would have let the tarpits take them (no event says a slot polled and left a job)",
};

/** Each way of waiting a fixed time, with a line that must be caught (so that no rule is vacuous). */
const RULES: Array<{ what: string; pattern: RegExp; example: string }> = [
  { what: 'a sleep', pattern: /(?<![.\w])sleep\(/, example: 'await sleep(100);' },
  { what: 'a timer that resolves a promise', pattern: /(?<![.\w])setTimeout\(\s*(r|res|resolve|done|wake)\s*[,)]|(?<![.\w])setTimeout\(\s*\(\)\s*=>\s*(r|res|resolve)\(/, example: 'await new Promise((r) => setTimeout(r, 50));' },
  { what: "node's promise timers", pattern: /timers\/promises/, example: "import { setTimeout as wait } from 'node:timers/promises';" },
];

function testFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'artifacts' ? [] : testFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('no fixed waits in tests', () => {
  it('each rule catches its example and passes the polling helper and a deadline', () => {
    for (const rule of RULES) expect(rule.pattern.test(rule.example), rule.what).toBe(true);
    for (const rule of RULES) {
      expect(rule.pattern.test('await eventually(() => expect(x).toBe(1));'), rule.what).toBe(false);
      expect(rule.pattern.test("const timer = setTimeout(() => { child.kill(); reject(new Error('late')); }, 30_000);"), rule.what).toBe(false);
      expect(rule.pattern.test('req.setTimeout(2_000, () => reject(new Error("no answer")));'), rule.what).toBe(false);
    }
  });

  it('no test file waits a fixed time, except those about time itself', () => {
    const found: string[] = [];
    for (const file of testFiles(TEST)) {
      const name = path.relative(TEST, file).split(path.sep).join('/');
      if (name === 'unit/no-fixed-waits.test.ts' || name in ALLOWED) continue;
      fs.readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (line.trimStart().startsWith('//')) return;
          for (const rule of RULES) if (rule.pattern.test(line)) found.push(`test/${name}:${i + 1}: ${rule.what} (wait with eventually(), test/support/eventually.ts): ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });

  it('every allowed file exists and still needs its place', () => {
    for (const name of Object.keys(ALLOWED)) {
      const text = fs.readFileSync(path.join(TEST, name), 'utf8');
      expect(RULES.some((rule) => text.split('\n').some((line) => rule.pattern.test(line))), `${name} no longer waits: remove it from ALLOWED`).toBe(true);
    }
  });
});
