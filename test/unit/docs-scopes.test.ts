// docs/scopes.md documents the scope catalogue for people who only have the repository: it must
// list exactly the scopes of SCOPE_CATALOGUE (src/scopes.ts), each once, with its plain words.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LEGACY_FULL_ACCESS, SCOPE_CATALOGUE } from '../../src/scopes.ts';

const DOC = 'docs/scopes.md';
const text = fs.readFileSync(new URL(`../../${DOC}`, import.meta.url), 'utf8');

/** The catalogue tables' rows: `| \`NAME\` | access | plain words | calls |`. */
const rows = [...text.matchAll(/^\|\s*`([A-Z][A-Z_]*)`\s*\|([^\n]*)$/gm)].map((m) => ({ name: m[1]!, rest: m[2]! }));
/** Every scope-shaped name written anywhere on the page, in rows or in prose. */
const mentioned = new Set(text.match(/\b[A-Z][A-Z_]*_(?:READ|WRITE)\b/g) ?? []);
const catalogue = new Set(SCOPE_CATALOGUE.map((s) => s.name));

describe(DOC, () => {
  it('has a row for every scope of the catalogue, and only once', () => {
    const listed = rows.map((r) => r.name);
    const missing = [...catalogue].filter((name) => !listed.includes(name));
    expect(missing, `${DOC} misses these scopes of src/scopes.ts`).toEqual([]);
    const twice = listed.filter((name, i) => listed.indexOf(name) !== i);
    expect(twice, `${DOC} lists these scopes more than once`).toEqual([]);
  });

  it('names no scope that does not exist', () => {
    const unknown = [...new Set([...rows.map((r) => r.name), ...mentioned])].filter((name) => !catalogue.has(name));
    expect(unknown, `${DOC} names scopes that are not in src/scopes.ts`).toEqual([]);
  });

  it("shows each scope's plain words as the consent page does", () => {
    const wrong = SCOPE_CATALOGUE.filter((s) => !rows.find((r) => r.name === s.name)?.rest.includes(s.description)).map((s) => `${s.name}: "${s.description}"`);
    expect(wrong, `${DOC} does not show these descriptions of src/scopes.ts word for word`).toEqual([]);
  });

  it('explains the legacy full-access marker', () => {
    expect(text).toContain(`\`${LEGACY_FULL_ACCESS}\``);
  });
});
