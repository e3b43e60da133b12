// Issue 38 point 8: one supported Node range that every installed package accepts. Reads each
// package's `engines.node` under node_modules (dependencies of dependencies too) and checks that
// both ends of our range satisfy it; package.json and the README state the same range.
// A small range reader (the forms npm packages use: ||, comparators, ^, ~, x, *) stands in for
// the `semver` package, which is not installed here.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
/** The lowest version of each part of our range: what CI runs (docs/testing.md). */
const ENDS = ['22.12.0', '24.0.0'];

type Version = [number, number, number];
const parse = (v: string): Version => v.split('.').map(Number) as Version;
const compare = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** One comparator set ("a b c", all must hold) as [lower, upper) bounds checks. */
function satisfiesSet(version: Version, set: string): boolean {
  const parts = [...set.matchAll(/(>=|<=|>|<|=|\^|~)?\s*v?(\*|x|\d+)(?:\.(\*|x|\d+))?(?:\.(\*|x|\d+))?/g)];
  if (parts.length === 0) return true; // "" or "*"
  return parts.every(([, op = '', ...rest]) => {
    const given = rest.map((p) => (p === undefined || p === 'x' || p === '*' ? undefined : Number(p)));
    if (given[0] === undefined) return true; // "*"
    const base: Version = [given[0], given[1] ?? 0, given[2] ?? 0];
    const precision = given.findIndex((p) => p === undefined); // -1: all three given
    const bump = (i: number): Version => (i === 0 ? [base[0] + 1, 0, 0] : i === 1 ? [base[0], base[1] + 1, 0] : [base[0], base[1], base[2] + 1]);
    const c = compare(version, base);
    switch (op) {
      case '>=': return c >= 0;
      case '>': return precision === -1 ? c > 0 : compare(version, bump(precision - 1)) >= 0;
      case '<=': return precision === -1 ? c <= 0 : compare(version, bump(precision - 1)) < 0;
      case '<': return c < 0;
      case '^': {
        const i = base[0] > 0 || precision === 1 ? 0 : base[1] > 0 || precision === 2 ? 1 : 2;
        return c >= 0 && compare(version, bump(i)) < 0;
      }
      case '~': return c >= 0 && compare(version, bump(precision === 1 ? 0 : 1)) < 0;
      default: return precision === -1 ? c === 0 : c >= 0 && compare(version, bump(precision - 1)) < 0;
    }
  });
}
const satisfies = (version: string, range: string) => range.split('||').some((set) => satisfiesSet(parse(version), set.trim()));

/** Every installed package.json with engines.node, nested node_modules included. */
function installedEngines(dir: string, found: Array<{ name: string; range: string }> = []) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    if (entry.name.startsWith('@')) {
      installedEngines(full, found);
      continue;
    }
    const manifest = path.join(full, 'package.json');
    if (fs.existsSync(manifest)) {
      const { name, version, engines } = JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string; version?: string; engines?: { node?: unknown } };
      if (typeof engines?.node === 'string') found.push({ name: `${name}@${version}`, range: engines.node });
    }
    if (fs.existsSync(path.join(full, 'node_modules'))) installedEngines(path.join(full, 'node_modules'), found);
  }
  return found;
}

describe('the supported Node range', () => {
  it('the range reader reads what npm means', () => {
    const cases: Array<[string, string, boolean]> = [
      ['20.19.0', '^20.19.0 || >=22.12.0', true], ['22.11.0', '^20.19.0 || >=22.12.0', false], ['22.12.0', '>=22.12.0', true],
      ['23.1.0', '^20.0.0 || ^22.0.0 || >=24.0.0', false], ['24.0.0', '^20.0.0 || ^22.0.0 || >=24.0.0', true],
      ['22.12.0', '>= 10.x', true], ['0.5.0', '>= 0.6', false], ['13.8.0', '^10 || ^12 || ^13.7 || ^14 || >=15.0.1', true],
      ['13.6.0', '^13.7', false], ['22.0.0', '*', true], ['22.1.0', '~22.0.0', false], ['22.12.0', '^22.12.0 || >=24.0.0', true],
    ];
    for (const [version, range, expected] of cases) expect(satisfies(version, range), `${version} in ${range}`).toBe(expected);
  });

  it(`both ends of engines.node (${pkg.engines.node}) satisfy every installed package's engines`, () => {
    const engines = installedEngines(path.join(ROOT, 'node_modules'));
    expect(engines.length).toBeGreaterThan(50);
    for (const end of ENDS) expect(satisfies(end, pkg.engines.node), `${end} is an end of ${pkg.engines.node}`).toBe(true);
    const refusing = ENDS.flatMap((end) => engines.filter((e) => !satisfies(end, e.range)).map((e) => `${e.name} (${e.range}) refuses Node ${end}`));
    expect(refusing).toEqual([]);
    // Below the range, something refuses: the lower end is not arbitrary.
    expect(engines.some((e) => !satisfies('22.11.0', e.range))).toBe(true);
  });

  it('the README states the same range', () => {
    expect(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')).toContain(`\`${pkg.engines.node}\``);
  });
});
