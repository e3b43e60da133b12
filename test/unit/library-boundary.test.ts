// Issue 34 item 1, issue 48 item 1: every reach past a library's published API is in one seam:
// oidc-provider's and knex's in src/seams/oidc-provider.ts, pino's, ioredis's, knex-pglite's and
// prom-client's in their files of src/seams/. Any other file in src/
// that reaches so fails this test, named with its line.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
const ALLOWED = new Set(['seams/oidc-provider.ts', 'seams/oidc-provider-internals.d.ts']);
const SEAMS = 'seams/';

/** Each reach into library internals, with a line that must be caught (so that no rule is vacuous). */
const RULES: Array<{ what: string; pattern: RegExp; example: string }> = [
  { what: 'a deep import of oidc-provider', pattern: /['"]oidc-provider\//, example: "import x from 'oidc-provider/lib/helpers/weak_cache.js';" },
  { what: 'the declarations of its internals', pattern: /oidc-provider-internals/, example: '/// <reference path="./oidc-provider-internals.d.ts" />' },
  { what: 'its private state (weak_cache, lru, dynamicClients)', pattern: /\bweak_cache\b|\blru\.js\b|\bdynamicClients\b/, example: 'internals.dynamicClients = x;' },
  {
    what: "its models' unpublished methods",
    pattern: /\b(BaseModel|instantiate|generateTokenId|getValueAndPayload|remainingTTL)\b|\.verify\(\s*stored\b/,
    example: 'token.jti = token.generateTokenId();',
  },
  { what: 'its error details', pattern: /\berror_detail\b|'(refresh token already used|authorization code already consumed)'/, example: "if (err.error_detail === 'x') {}" },
  { what: 'a request body handed over outside the seam (req.body, a Proxy)', pattern: /\{\s*body\??\s*:\s*unknown\s*\}|\breq\.body\b|\bnew Proxy\(\s*(ctx\.)?req\b/, example: 'const body = (ctx.req as { body?: unknown }).body;' },
  { what: "knex's executionPromise", pattern: /\bexecutionPromise\b/, example: 'const committed = (db as { executionPromise?: Promise<unknown> }).executionPromise;' },
];

/** The reaches of the other libraries, each with the seam it belongs in. */
const SEAM_RULES: Array<{ what: string; seam: string; pattern: RegExp; example: string }> = [
  { what: "pino's symbols (a logger's stream and bindings)", seam: 'pino.ts', pattern: /\.symbols\b|\b(streamSym|chindingsSym)\b/, example: 'const { streamSym } = pino.symbols;' },
  { what: "ioredis's offline queue switched at run time", seam: 'ioredis.ts', pattern: /options\.enableOfflineQueue\s*=/, example: 'client.options.enableOfflineQueue = false;' },
  { what: "ioredis's socket", seam: 'ioredis.ts', pattern: /\.stream\.(cork|uncork)\(/, example: 'client.stream.cork();' },
  { what: "knex-pglite's and knex's client methods", seam: 'knex-pglite.ts', pattern: /\b(_acquireOnlyConnection|destroyRawConnection|processResponse)\b|from 'knex-pglite'/, example: 'override processResponse(obj, runner) {}' },
  { what: "prom-client's registry given a metric of our own", seam: 'prom-client.ts', pattern: /\.registerMetric\(/, example: 'registry.registerMetric(metric as unknown as Metric);' },
];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('the library boundary (src/seams/)', () => {
  it('each rule catches what it names', () => {
    for (const rule of [...RULES, ...SEAM_RULES]) expect(rule.pattern.test(rule.example), rule.what).toBe(true);
  });

  it('no file in src/ but the seams reaches into a library\'s internals', () => {
    const found: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const name = path.relative(SRC, file).split(path.sep).join('/');
      const lines = fs.readFileSync(file, 'utf8').split('\n');
      lines.forEach((line, i) => {
        if (!ALLOWED.has(name)) for (const rule of RULES) if (rule.pattern.test(line)) found.push(`src/${name}:${i + 1}: ${rule.what} (move it into src/seams/oidc-provider.ts): ${line.trim()}`);
        if (!name.startsWith(SEAMS)) for (const rule of SEAM_RULES) if (rule.pattern.test(line)) found.push(`src/${name}:${i + 1}: ${rule.what} (move it into src/seams/${rule.seam}): ${line.trim()}`);
      });
    }
    expect(found, `reaches past a library's published API outside its seam:\n${found.join('\n')}`).toEqual([]);
  });

  it('the seams are where those reaches are (the scan looks at the right files)', () => {
    const library = fs.readFileSync(path.join(SRC, 'seams/oidc-provider.ts'), 'utf8');
    for (const rule of RULES.filter((r) => !r.what.startsWith('the declarations'))) expect(rule.pattern.test(library), rule.what).toBe(true);
    for (const rule of SEAM_RULES) expect(rule.pattern.test(fs.readFileSync(path.join(SRC, SEAMS, rule.seam), 'utf8')), rule.what).toBe(true);
  });
});
