// The README and docs/ stay true to the repository they describe: every relative link reaches a
// file (and a heading, when it names one), every repository path named in backticks exists,
// every `npm run` script they name is in package.json, no page cites a document a cloner does not
// have, and measured figures stay in docs/benchmark.md. (The configuration tables are generated
// from src/settings.ts and checked, row by row, by test/unit/settings.test.ts.)
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');

function markdownUnder(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return markdownUnder(rel);
    return entry.name.endsWith('.md') ? [rel] : [];
  });
}

const PAGES = ['README.md', ...markdownUnder('docs')];

/** The page's prose: fenced code blocks blanked out (line numbers kept). */
function prose(text: string): string {
  let fenced = false;
  return text
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line;
    })
    .join('\n');
}

/** GitHub's heading anchors: lower case, punctuation dropped, each space a hyphen, repeats numbered. */
function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const words = match[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text only
      .replace(/<[^>]+>/g, '')
      .replace(/[`*~]/g, '');
    const slug = words.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** Relative link targets of a page's prose, with their line: inline links and reference definitions. */
function relativeLinks(text: string): Array<{ target: string; line: number }> {
  const links: Array<{ target: string; line: number }> = [];
  prose(text)
    .split('\n')
    .forEach((raw, i) => {
      const line = raw.replace(/`[^`]*`/g, ''); // a link inside a code span is text
      const targets = [
        ...[...line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
        ...[...line.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/g)].map((m) => m[1]!),
      ];
      for (const target of targets) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        links.push({ target, line: i + 1 });
      }
    });
  return links;
}

/** Why a relative link of `page` does not resolve, or null. */
function brokenLink(page: string, target: string): string | null {
  const [file, fragment] = target.split('#', 2) as [string, string | undefined];
  const resolved = file ? path.posix.normalize(path.posix.join(path.posix.dirname(page), decodeURIComponent(file))) : page;
  if (resolved.startsWith('..')) return `${resolved} is outside the repository`;
  if (!fs.existsSync(path.join(ROOT, resolved))) return `${resolved} does not exist`;
  if (fragment === undefined) return null;
  if (!resolved.endsWith('.md')) return `#${fragment} on a file that is not markdown`;
  if (!headingAnchors(read(resolved)).has(fragment)) return `${resolved} has no heading #${fragment}`;
  return null;
}

const PATH_PREFIXES = ['src', 'test', 'docs', 'migrations', 'deploy', 'views', 'bench'];
const PATH_IN_SPAN = new RegExp(`(?:^|[\\s(])((?:${PATH_PREFIXES.join('|')})/[^\\s\`,;:)]*|\\.ci/run)`, 'g');

/** Repository paths named in the page's code spans (prose only), with their line. */
function namedPaths(text: string): Array<{ name: string; line: number }> {
  const names: Array<{ name: string; line: number }> = [];
  prose(text)
    .split('\n')
    .forEach((line, i) => {
      for (const span of line.matchAll(/`([^`]+)`/g)) {
        for (const m of span[1]!.matchAll(PATH_IN_SPAN)) names.push({ name: m[1]!.replace(/[.]+$/, ''), line: i + 1 });
      }
    });
  return names;
}

/** `a.{md,json}` → `a.md`, `a.json`. */
function expandBraces(name: string): string[] {
  const m = /\{([^{}]*)\}/.exec(name);
  if (!m) return [name];
  return m[1]!.split(',').flatMap((alt) => expandBraces(name.slice(0, m.index) + alt + name.slice(m.index + m[0].length)));
}

const IGNORED = read('.gitignore')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#') && l.endsWith('/'));

/** A named path exists: as a file or folder, as a glob (`views/developer-*.ejs`) with a match, or under a git-ignored folder the code writes (`test/artifacts/`). */
function pathExists(name: string): boolean {
  if (IGNORED.some((dir) => name === dir || name.startsWith(dir) || `${name}/` === dir)) return true;
  if (!name.includes('*')) return fs.existsSync(path.join(ROOT, name));
  const dir = name.slice(0, name.lastIndexOf('/', name.indexOf('*')) + 1);
  const pattern = new RegExp(`^${name.replace(/[.+?^$()[\]\\|]/g, '\\$&').replace(/\*\*/g, '\0').replace(/\*/g, '[^/]*').replace(/\0/g, '.*')}$`);
  const walk = (rel: string): string[] =>
    fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true }).flatMap((e) => {
      const child = path.posix.join(rel, e.name);
      return e.isDirectory() ? [child, ...walk(child)] : [child];
    });
  return fs.existsSync(path.join(ROOT, dir)) && walk(dir.replace(/\/$/, '')).some((f) => pattern.test(f));
}

const SCRIPTS = Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts);

/** `npm run [--flags] NAME`, `npm start`, `npm test` anywhere on the page, code blocks included. */
function namedScripts(text: string): Array<{ name: string; line: number }> {
  const names: Array<{ name: string; line: number }> = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(/\bnpm run(?:\s+--?[a-z][\w-]*)*\s+([a-z][\w:.-]*)/g)) names.push({ name: m[1]!, line: i + 1 });
    for (const m of line.matchAll(/\bnpm (start|test)\b/g)) names.push({ name: m[1]!, line: i + 1 });
  });
  return names;
}

describe('the README and docs/', () => {
  it('reads every page', () => {
    expect(PAGES).toContain('README.md');
    expect(PAGES).toContain('docs/architecture.md');
  });

  it.each(PAGES)('%s: every relative link reaches a file, and the heading it names', (page) => {
    const broken = relativeLinks(read(page)).flatMap(({ target, line }) => {
      const why = brokenLink(page, target);
      return why ? [`${page}:${line}: (${target}): ${why}`] : [];
    });
    expect(broken).toEqual([]);
  });

  it.each(PAGES)('%s: every repository path named in backticks exists', (page) => {
    const missing = namedPaths(read(page)).flatMap(({ name, line }) =>
      expandBraces(name).every(pathExists) ? [] : [`${page}:${line}: \`${name}\``],
    );
    expect(missing).toEqual([]);
  });

  it.each(PAGES)('%s: every npm script it names is in package.json', (page) => {
    const unknown = namedScripts(read(page)).flatMap(({ name, line }) => (SCRIPTS.includes(name) ? [] : [`${page}:${line}: npm run ${name}`]));
    expect(unknown).toEqual([]);
  });

  it.each(PAGES.filter((p) => p !== 'docs/benchmark.md'))('%s: no measured rates, microseconds or ratios (they live in docs/benchmark.md)', (page) => {
    const figures = prose(read(page))
      .split('\n')
      .flatMap((line, i) => [...line.matchAll(/\d[\d,.]*\s?(?:req\/s|µs)|\b\d+(?:\.\d+)?×(?!\d)/g)].map((m) => `${page}:${i + 1}: ${m[0]}`));
    expect(figures).toEqual([]);
  });
});

describe('shipped files', () => {
  // A clone holds only the repository: a citation of a document outside it cannot be followed.
  const OUTSIDE = /\bCONTRACT\b|\bspec (?:\d|§)|service-spec|\.\.\/shared\/|\bresearch\//;
  const filesUnder = (dir: string): string[] =>
    fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = path.posix.join(dir, e.name);
      return e.isDirectory() ? filesUnder(rel) : [rel];
    });
  const files = [...PAGES, ...['src', 'views', 'deploy', 'migrations'].flatMap((dir) => filesUnder(dir))];

  it('cite no document outside the repository', () => {
    const citations = files.flatMap((file) =>
      read(file)
        .split('\n')
        .flatMap((line, i) => (OUTSIDE.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(citations).toEqual([]);
  });

  it('point only to docs/ pages that exist', () => {
    const missing = files.flatMap((file) =>
      [...read(file).matchAll(/\bdocs\/[\w./-]*\.md\b/g)].map((m) => m[0]).filter((doc) => !fs.existsSync(path.join(ROOT, doc))).map((doc) => `${file}: ${doc}`),
    );
    expect(missing).toEqual([]);
  });
});
