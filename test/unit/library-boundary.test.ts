// Issue 34 item 1: src/fast/library.ts is the only file that reaches past the published APIs of
// oidc-provider and knex. Any other file in src/ that does fails this test, named with its line.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
const ALLOWED = new Set(['fast/library.ts', 'fast/oidc-provider-internals.d.ts']);

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
  { what: 'a request body handed over outside library.ts (req.body, a Proxy)', pattern: /\{\s*body\??\s*:\s*unknown\s*\}|\breq\.body\b|\bnew Proxy\(\s*(ctx\.)?req\b/, example: 'const body = (ctx.req as { body?: unknown }).body;' },
  { what: "knex's executionPromise", pattern: /\bexecutionPromise\b/, example: 'const committed = (db as { executionPromise?: Promise<unknown> }).executionPromise;' },
];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('the library boundary (src/fast/library.ts)', () => {
  it('each rule catches what it names', () => {
    for (const rule of RULES) expect(rule.pattern.test(rule.example), rule.what).toBe(true);
  });

  it('no file in src/ but src/fast/library.ts reaches into oidc-provider or knex internals', () => {
    const found: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const name = path.relative(SRC, file).split(path.sep).join('/');
      if (ALLOWED.has(name)) continue;
      fs.readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const rule of RULES) if (rule.pattern.test(line)) found.push(`src/${name}:${i + 1}: ${rule.what}: ${line.trim()}`);
        });
    }
    expect(found, `move these into src/fast/library.ts:\n${found.join('\n')}`).toEqual([]);
  });

  it('library.ts is where those reaches are (the scan looks at the right files)', () => {
    const library = fs.readFileSync(path.join(SRC, 'fast/library.ts'), 'utf8');
    for (const rule of RULES.filter((r) => !r.what.startsWith('the declarations'))) expect(rule.pattern.test(library), rule.what).toBe(true);
  });
});
