// Whoever adopts the server needs to know they may (a licence), how to report a flaw (a security
// policy), and which version they run and what changed in it (the changelog, `GET /health`).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../../src/version.ts';

const root = new URL('../../', import.meta.url);
const read = (name: string) => readFileSync(new URL(name, root), 'utf8');
const pkg = JSON.parse(read('package.json')) as { version: string; license?: string };
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?$/;

describe('release files', () => {
  it('licenses the project under Apache-2.0, in package.json, package-lock.json and LICENSE', () => {
    expect(pkg.license).toBe('Apache-2.0');
    expect((JSON.parse(read('package-lock.json')) as { packages: Record<string, { license?: string }> }).packages['']?.license).toBe('Apache-2.0');
    const licence = read('LICENSE');
    expect(licence).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    expect(licence).toContain('END OF TERMS AND CONDITIONS');
    expect(read('NOTICE')).toMatch(/Apache License, Version 2\.0/);
  });

  it('has a security policy that says how to report, what is supported and how fixes are announced', () => {
    const policy = read('SECURITY.md');
    for (const heading of ['## Reporting a vulnerability', '## Supported versions', '## How fixes are announced']) expect(policy).toContain(heading);
  });

  it('reports the semantic version of package.json, whose release heads the changelog', () => {
    expect(pkg.version).toMatch(SEMVER);
    expect(VERSION).toBe(pkg.version);
    const changelog = read('CHANGELOG.md');
    const releases = [...changelog.matchAll(/^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$/gm)].map((m) => ({ version: m[1]!, date: m[2] }));
    expect(releases[0]?.version).toBe('Unreleased');
    expect(releases[1]).toEqual({ version: pkg.version, date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) });
    for (const r of releases.slice(1)) expect(r.version).toMatch(SEMVER);
  });
});
