// The settings table (src/settings.ts) is the one place a setting or a policy number is written:
// the pages generated from it say what it says (defaults included), every variable the code reads
// is a row of it, loadConfig applies each row's default and bounds, and the modules apply the
// table's fixed numbers.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { ENV_SETTINGS, POLICY, forEnv } from '../../src/settings.ts';
import { generatedRegions, regionIn } from '../../src/settings-docs.ts';
import { ACCESS_TOKEN_TTL, AUTHORIZATION_CODE_TTL } from '../../src/oauth/provider.ts';
import { UNREVIEWED_REFRESH_TTL } from '../../src/cimd/clients.ts';
import { MAX_CLIENTS_PER_OWNER } from '../../src/clients/service.ts';
import { TOKEN_BODY_LIMIT } from '../../src/oauth/request-shims.ts';
import { DEFAULT_LOG_N } from '../../src/accounts/password.ts';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');

/** A table's rows by their first cell, each as its cells (the header row and the rule left out). */
function rowsOf(lines: string[]): { header: string[]; rows: Map<string, string[]> } {
  const cells = (line: string) =>
    line
      .replace(/^\|\s?|\s?\|$/g, '')
      .split(/(?<!\\)\|/)
      .map((c) => c.trim());
  const [head = '', , ...body] = lines.filter((line) => line.startsWith('|'));
  return { header: cells(head), rows: new Map(body.map((line) => [cells(line)[0]!, cells(line)])) };
}

/** Sentences naming each row where a page and the settings table disagree. */
function disagreements(file: string, text: string, marker: string, expected: string[]): string[] {
  const actual = regionIn(text, marker);
  if (!actual) return [`${file} has no generated ${marker} table (its markers are missing): run npm run docs:settings`];
  const want = rowsOf(expected);
  const have = rowsOf(actual);
  const found: string[] = [];
  for (const [key, cells] of want.rows) {
    const got = have.rows.get(key);
    if (!got) {
      found.push(`${file} has no row for ${key}, which the settings table (src/settings.ts) has`);
      continue;
    }
    want.header.forEach((column, i) => {
      if (got[i] !== cells[i]) found.push(`${file}'s row for ${key} says ${column} "${got[i] ?? ''}", the settings table (src/settings.ts) says "${cells[i]}"`);
    });
  }
  for (const key of have.rows.keys()) {
    if (!want.rows.has(key)) found.push(`${file} has a row for ${key}, which the settings table (src/settings.ts) does not`);
  }
  if (!found.length && actual.join('\n') !== expected.join('\n')) found.push(`${file}'s ${marker} table differs from the settings table in its header or order: run npm run docs:settings`);
  return found;
}

describe('the pages generated from the settings table', () => {
  for (const { file, marker, lines } of generatedRegions()) {
    it(`${file} (${marker}) says what src/settings.ts says`, () => {
      expect(disagreements(file, read(file), marker, lines)).toEqual([]);
    });
  }

  it('name the row, and the column, where a page differs (a default edited in the README)', () => {
    const { file, marker, lines } = generatedRegions().find((r) => r.file === 'README.md')!;
    const edited = read(file).replace('| `PORT` | `3000` |', '| `PORT` | `3001` |');
    expect(disagreements(file, edited, marker, lines)).toEqual([`README.md's row for \`PORT\` says default "\`3001\`", the settings table (src/settings.ts) says "\`3000\`"`]);
    const dropped = read(file).replace(/^\| `HOST` .*\n/m, '');
    expect(disagreements(file, dropped, marker, lines)).toEqual(['README.md has no row for `HOST`, which the settings table (src/settings.ts) has']);
  });

  it('keep the README short: its table is the newcomer\'s, the full one is docs/configuration.md', () => {
    expect(read('README.md').split('\n').length).toBeLessThan(300);
    expect(read('README.md')).toContain('[docs/configuration.md](docs/configuration.md)');
    expect(ENV_SETTINGS.filter((row) => row.readme).length).toBeLessThan(ENV_SETTINGS.length / 2);
  });
});

describe('every variable the code reads is a row of the settings table', () => {
  const sourceFiles = (dir: string): string[] =>
    fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) return sourceFiles(rel);
      return entry.name.endsWith('.ts') ? [rel] : [];
    });
  const names = new Set(ENV_SETTINGS.map((row) => row.name));

  /** `process.env.X`, `process.env['X']` and `env.X` reads, with where they are. */
  function readsIn(file: string, text: string): Array<{ name: string; at: string }> {
    return text.split('\n').flatMap((line, i) =>
      [...line.matchAll(/\b(?:process\.)?env(?:\.([A-Z][A-Z0-9_]*)\b|\[['"]([A-Z][A-Z0-9_]*)['"]\])/g)].map((m) => ({ name: (m[1] ?? m[2])!, at: `${file}:${i + 1}` })),
    );
  }

  it('in src/', () => {
    const reads = sourceFiles('src').flatMap((file) => readsIn(file, read(file)));
    expect(reads.map((r) => r.name)).toContain('NODE_ENV'); // the scan finds reads (src/views.ts)
    const unknown = reads.filter((r) => !names.has(r.name)).map((r) => `${r.at} reads ${r.name}, which is not a row of the settings table (src/settings.ts)`);
    expect(unknown).toEqual([]);
  });

  it('and the scan would name one that is not', () => {
    expect(readsIn('src/x.ts', "const a = process.env.SOME_NEW_SETTING; const b = env['OTHER'];").filter((r) => !names.has(r.name))).toEqual([
      { name: 'SOME_NEW_SETTING', at: 'src/x.ts:1' },
      { name: 'OTHER', at: 'src/x.ts:1' },
    ]);
  });

  it('by loadConfig: every variable it looks up is a row, and every row is looked up', () => {
    const looked = new Set<string>();
    const watched = (env: Record<string, string>) =>
      new Proxy(env, {
        get(target, key) {
          if (typeof key === 'string') looked.add(key);
          return target[key as string];
        },
      });
    loadConfig(watched({}));
    loadConfig(watched({ REDIS_SENTINELS: 'h:1', REDIS_SENTINEL_NAME: 'm' }));
    loadConfig(watched({ UPSTREAM_ISSUER: 'https://id.example.com', UPSTREAM_CLIENT_ID: 'c', UPSTREAM_CLIENT_SECRET: 's' }));
    expect([...looked].filter((name) => !names.has(name))).toEqual([]);
    expect([...names].filter((name) => !looked.has(name))).toEqual([]);
  });
});

describe('loadConfig applies the table', () => {
  const PRODUCTION = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', COOKIE_KEYS: 'k'.repeat(32), DATA_ENCRYPTION_KEYS: 'd'.repeat(32) };

  it("with each int row's default and bounds, and the refusal naming the variable", () => {
    for (const row of ENV_SETTINGS) {
      if (row.type !== 'int') continue;
      const min = forEnv(row.min, 'development');
      const refused = new RegExp(`^${row.name} must be `);
      expect(() => loadConfig({ [row.name]: String(row.max ?? min) }), row.name).not.toThrow();
      if (row.max !== undefined) expect(() => loadConfig({ [row.name]: String(row.max! + 1) }), row.name).toThrow(refused);
      if (min > 0) expect(() => loadConfig({ [row.name]: String(min - 1) }), row.name).toThrow(refused);
      expect(() => loadConfig({ [row.name]: 'x' }), row.name).toThrow(refused);
    }
    const config = loadConfig({});
    expect(config.databasePoolMax).toBe(10);
    expect(config.refreshGraceSeconds).toBe(10);
    expect(config.secretExpiryNoticeSeconds).toBe(14 * 86_400);
    expect(config.passwordHashLogN).toBe(DEFAULT_LOG_N);
    expect(() => loadConfig({ REFRESH_GRACE_SECONDS: '61' })).toThrow('REFRESH_GRACE_SECONDS must be a whole number of seconds from 0 (off) to 60, got "61"');
    expect(() => loadConfig({ SECRET_EXPIRY_NOTICE_DAYS: '0' })).toThrow('SECRET_EXPIRY_NOTICE_DAYS must be a whole number of days from 1 to 90, got "0"');
    expect(() => loadConfig({ PASSWORD_HASH_LOG_N: '16' })).toThrow('PASSWORD_HASH_LOG_N must be a whole number from 17 to 20, got "16"');
    expect(loadConfig({ NODE_ENV: 'test', PASSWORD_HASH_LOG_N: '10' }).passwordHashLogN).toBe(10);
    expect(() => loadConfig({ TRUST_PROXY: '11' })).toThrow('TRUST_PROXY must be false, true or the number of proxies in front of the server (0 to 10), got "11"');
  });

  it('with the per-environment defaults and the production rules', () => {
    expect(loadConfig({})).toMatchObject({ logFormat: 'pretty', logLevel: 'info', cimd: { enabled: true } });
    expect(loadConfig({ NODE_ENV: 'test' })).toMatchObject({ logFormat: 'json', logLevel: 'silent' });
    expect(loadConfig(PRODUCTION)).toMatchObject({ env: 'production', logFormat: 'json', logLevel: 'info', cimd: { enabled: false } });
    expect(loadConfig({ NODE_ENV: 'staging' }).env).toBe('development');
    for (const row of ENV_SETTINGS.filter((r) => r.devOnly)) {
      expect(() => loadConfig({ ...PRODUCTION, [row.name]: 'true' }), row.name).toThrow(`${row.name}=true is for development only; NODE_ENV=production refuses it`);
    }
    for (const row of ENV_SETTINGS.filter((r) => r.requiredInProduction)) {
      expect(() => loadConfig({ ...PRODUCTION, [row.name]: '' }), row.name).toThrow(`NODE_ENV=production refuses development defaults; set ${row.name} (${row.requiredInProduction})`);
    }
    for (const row of ENV_SETTINGS.filter((r) => r.type === 'removed')) {
      expect(() => loadConfig({ [row.name]: '1' }), row.name).toThrow(new RegExp(`^${row.name} is no longer supported: `));
    }
    expect(() => loadConfig({ DYNAMIC_REGISTRATION: 'yes' })).toThrow('DYNAMIC_REGISTRATION must be off or open, got "yes"');
    expect(() => loadConfig({ FAST_PATHS: 'no' })).toThrow('FAST_PATHS must be on or off, got "no"');
  });
});

describe('the fixed policy numbers', () => {
  it('are what the modules apply (imported, not written again)', () => {
    expect(ACCESS_TOKEN_TTL).toBe(POLICY.ACCESS_TOKEN_TTL.value);
    expect(AUTHORIZATION_CODE_TTL).toBe(POLICY.AUTHORIZATION_CODE_TTL.value);
    expect(UNREVIEWED_REFRESH_TTL).toBe(7 * 86_400);
    expect(MAX_CLIENTS_PER_OWNER).toBe(POLICY.MAX_CLIENTS_PER_OWNER.value);
    expect(TOKEN_BODY_LIMIT).toBe(16 * 1024);
    for (const [name, entry] of Object.entries(POLICY)) {
      expect(entry.setting, name).toBe(false);
      expect(fs.existsSync(path.join(ROOT, entry.where)), `${name}: ${entry.where}`).toBe(true);
      expect(read(entry.where), `${name} is applied in ${entry.where}`).toContain(`POLICY.${name}.value`);
    }
  });

  it('are no setting too (a number is either a row or a constant)', () => {
    const names = new Set(ENV_SETTINGS.map((row) => row.name));
    expect(Object.keys(POLICY).filter((name) => names.has(name))).toEqual([]);
  });
});
