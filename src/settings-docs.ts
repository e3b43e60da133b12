// The configuration docs, generated from the settings table (src/settings.ts): the full tables of
// docs/configuration.md and the README's short one, each between its markers. `npm run
// docs:settings` writes them; test/unit/settings.test.ts fails, naming the row, when a page and the
// table disagree.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENV_SETTINGS, POLICY, type EnvSetting, type Fixed, type NodeEnv, type PerEnv } from './settings.ts';

const code = (value: string | number) => `\`${value}\``;
const cell = (text: string) => text.replace(/\|/g, '\\|');

function perEnv<T>(value: PerEnv<T>, show: (v: T) => string): string {
  if (value === null || typeof value !== 'object' || !('otherwise' in value)) return show(value as T);
  const named = (Object.entries(value) as Array<[NodeEnv | 'otherwise', T]>).filter(([env]) => env !== 'otherwise');
  return [...named.map(([env, v]) => `${show(v)} in ${env}`), `${show(value.otherwise)} otherwise`].join(', ');
}

export function defaultOf(row: EnvSetting): string {
  if (row.defaultText) return row.defaultText;
  switch (row.type) {
    case 'bool':
      return perEnv(row.default, (on) => code(on ? row.on[0]! : row.off[0]!));
    case 'proxy-hops':
      return code('false');
    case 'removed':
      return '—';
    case 'int':
    case 'port':
    case 'string':
    case 'enum':
    case 'path':
      return row.default === undefined ? 'unset' : perEnv<string | number>(row.default, code);
    default:
      return 'unset';
  }
}

export function boundsOf(row: EnvSetting): string {
  switch (row.type) {
    case 'int': {
      const unit = row.unit ? ` ${row.unit}` : '';
      const range = (min: number) => {
        const zero = min === 0 && row.zeroMeans ? ` (${row.zeroMeans})` : '';
        return row.max === undefined ? `${min}${zero} or more${unit}` : `${min}${zero} to ${row.max}${unit}`;
      };
      return perEnv(row.min, range);
    }
    case 'port':
      return '0 to 65535';
    case 'bool':
      return `${row.on.map(code).join(' / ')} or ${row.off.map(code).join(' / ')}`;
    case 'enum':
      return row.values.map(code).join(', ') + (row.unknownIsDefault ? ` (anything else: ${code(defaultOf(row).replace(/`/g, ''))})` : '');
    case 'string':
      return row.maxLength === undefined ? 'any' : `1 to ${row.maxLength} characters, no control or text-direction characters`;
    case 'url':
      return `an absolute ${row.protocols.map(code).join(' or ')} URL${row.public ? ', no query or fragment' : ''}`;
    case 'list':
      return `comma-separated${row.minLengthInProduction ? `; in production ${row.minLengthInProduction}+ characters each` : ''}`;
    case 'host-ports':
      return '`host:port,host:port,…`';
    case 'path':
      return 'a directory';
    case 'proxy-hops':
      return `${code('false')}, ${code('true')} or 0 to ${row.max}`;
    case 'removed':
      return 'refused';
  }
}

export function productionOf(row: EnvSetting): string {
  if (row.devOnly) return 'refused';
  if (row.requiredInProduction) return '**required**';
  if (row.type === 'removed') return 'refused';
  return '';
}

/** The production rule in words, for the short tables (which have no production column). */
function productionNote(row: EnvSetting): string {
  if (row.devOnly) return '. Refused when `NODE_ENV=production`';
  if (!row.requiredInProduction) return '';
  const length = row.type === 'list' && row.minLengthInProduction ? `, ${row.minLengthInProduction}+ characters each,` : '';
  return `. **Required**${length} when \`NODE_ENV=production\``;
}

function meaningOf(row: EnvSetting): string {
  return row.type === 'removed' ? `removed, and refused with what replaced it: ${row.why}` : row.doc;
}

/** A Markdown table: a header row and one row per entry. */
function table(header: string[], rows: string[][]): string[] {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)];
}

export const ENV_HEADER = ['variable', 'type', 'default', 'bounds', 'production', 'meaning'];
export const README_HEADER = ['variable', 'default', 'meaning'];
export const FIXED_HEADER = ['constant', 'value', 'where', 'what', 'why it is fixed'];

export function envTable(): string[] {
  return table(ENV_HEADER, ENV_SETTINGS.map((row) => [code(row.name), row.type, defaultOf(row), boundsOf(row), productionOf(row), meaningOf(row)]));
}

/** A short table (variable, default, meaning) of some rows, its links made relative to `linkBase`. */
function shortTable(rows: readonly EnvSetting[], linkBase: '' | 'docs/'): string[] {
  const relink = (text: string) => (linkBase ? text.replace(/\]\((?!https?:|#)([^)]+)\)/g, `](${linkBase}$1)`) : text);
  return table(README_HEADER, rows.map((row) => [code(row.name), relink(defaultOf(row)), relink(meaningOf(row) + productionNote(row))]));
}

/** The README's short table: the rows marked `readme` (what a newcomer sets). */
export const readmeTable = () => shortTable(ENV_SETTINGS.filter((row) => row.readme), 'docs/');

/** docs/agents.md's settings: metadata documents and open registration. */
export const agentsTable = () => shortTable(ENV_SETTINGS.filter((row) => row.name.startsWith('CIMD_') || row.name === 'DYNAMIC_REGISTRATION'), '');

const UNIT_SECONDS: Array<[number, string]> = [
  [86_400, 'day'],
  [3600, 'hour'],
  [60, 'minute'],
];

export function valueOf(entry: Fixed): string {
  const { value, unit } = entry;
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  switch (unit) {
    case 'seconds': {
      const [size, word] = UNIT_SECONDS.find(([size]) => value >= size && value % size === 0) ?? [1, 'second'];
      return size === 1 ? plural(value, 'second') : `${plural(value / size, word)} (${value} s)`;
    }
    case 'milliseconds':
      return value % 1000 === 0 ? `${plural(value / 1000, 'second')} (${value} ms)` : `${value} ms`;
    case 'bytes':
      return value % 1024 === 0 ? `${value / 1024} KiB (${value} bytes)` : `${value} bytes`;
    case 'count':
      return String(value);
    case 'per minute':
      return `${value} a minute`;
    case 'per hour':
      return `${value} an hour`;
    case 'days':
      return plural(value, 'day');
    case 'hours':
      return plural(value, 'hour');
    case 'characters':
      return plural(value, 'character');
  }
}

export function fixedTable(): string[] {
  return table(FIXED_HEADER, Object.entries(POLICY).map(([name, entry]) => [code(name), valueOf(entry), code(entry.where), entry.doc, entry.why]));
}

/** Each generated region: the file, its marker, and the lines between the markers. */
export function generatedRegions(): Array<{ file: string; marker: string; lines: string[] }> {
  return [
    { file: 'README.md', marker: 'settings:readme', lines: readmeTable() },
    { file: 'docs/configuration.md', marker: 'settings:env', lines: envTable() },
    { file: 'docs/configuration.md', marker: 'settings:fixed', lines: fixedTable() },
    { file: 'docs/agents.md', marker: 'settings:agents', lines: agentsTable() },
  ];
}

export const begin = (marker: string) => `<!-- ${marker}:begin (generated from src/settings.ts by npm run docs:settings) -->`;
export const end = (marker: string) => `<!-- ${marker}:end -->`;

/** The lines between a region's markers in a page, or undefined when a marker is missing. */
export function regionIn(text: string, marker: string): string[] | undefined {
  const lines = text.split('\n');
  const from = lines.indexOf(begin(marker));
  const to = lines.indexOf(end(marker));
  if (from < 0 || to < from) return undefined;
  return lines.slice(from + 1, to);
}

/** The page with the region between its markers replaced. */
export function withRegion(text: string, marker: string, region: string[]): string {
  const lines = text.split('\n');
  const from = lines.indexOf(begin(marker));
  const to = lines.indexOf(end(marker));
  if (from < 0 || to < from) throw new Error(`no ${begin(marker)} … ${end(marker)} markers`);
  return [...lines.slice(0, from + 1), ...region, ...lines.slice(to)].join('\n');
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const { file, marker, lines } of generatedRegions()) {
    const full = path.join(ROOT, file);
    const before = fs.readFileSync(full, 'utf8');
    const after = withRegion(before, marker, lines);
    if (after !== before) fs.writeFileSync(full, after);
    console.log(`${file} (${marker}): ${after === before ? 'unchanged' : 'written'}`);
  }
}
