// The layers of src/, written once: which folder may import which (docs/architecture.md, "Floors").
// `npm run check:layers` (dependency-cruiser) holds the real import graph to them, in CI and in
// test/unit/layers.test.ts; a new import that breaks one fails with the rule's sentence.
//
// FLOORS runs from the top down. A file may import its own folder and any floor below its own,
// never a floor above (an arrow running back up) and never a neighbour on its own floor.
// Each entry: a name, what stands on it (folders of src/ with a trailing slash, or files of
// src/), and what the floor holds.
const FLOORS = [
  { name: 'composition', holds: ['main.ts', 'system.ts', 'app.ts', 'settings-docs.ts'], what: 'the process, the composition root and the Koa apps it builds' },
  { name: 'fast path', holds: ['fast/'], what: 'the hot-path listener and the two plain cases of the back channel' },
  { name: 'doors', holds: ['web/', 'admin/'], what: 'the pages and the operator scripts' },
  { name: 'demo', holds: ['demo.ts'], what: 'the first start of the embedded demo' },
  { name: 'api', holds: ['api/', 'leak-reports/', 'apps-with-access/'], what: 'the API routes for programs, the leaked-credential reports, the record of apps with access' },
  { name: 'protocol', holds: ['oauth/'], what: 'the provider, its configuration and what the token endpoints add' },
  { name: 'organizations', holds: ['orgs/'], what: 'organizations, installations and tokens bound to them' },
  { name: 'client kinds, above the registry', holds: ['registration/', 'client-lookup/', 'review/'], what: 'RFC 7591 registration, the lookup of any kind of client by id, the review of metadata-document and registered clients' },
  { name: 'metadata documents', holds: ['cimd/'], what: 'clients described by a metadata document (CIMD)' },
  { name: 'registry', holds: ['clients/'], what: 'the registry of clients, their secrets and settings' },
  { name: 'directory', holds: ['directory/'], what: 'what every kind of client shares: statuses, the provider view, its facts' },
  { name: 'people and messages', holds: ['accounts/', 'webhooks/', 'limits/'], what: 'accounts, webhook delivery, the limiter counters' },
  { name: 'transport', holds: ['http/'], what: 'what every HTTP answer carries' },
  { name: 'storage', holds: ['storage/'], what: 'the stores: SQL, Redis, caches' },
  { name: 'formats', holds: ['credentials/'], what: 'the format of every credential this server issues' },
  { name: 'seams', holds: ['seams/'], what: 'every reach past a library\'s published API' },
  { name: 'ground', holds: ['*.ts'], what: 'the settings, the configuration, the logger and the small shared helpers' },
];

/**
 * Arrows the floors would refuse and that stay for now, each with its reason (also in
 * docs/architecture.md, "Floors"): from a file, to a file, why.
 */
const KNOWN_EXCEPTIONS = [];

/** Circles still in src/, each with its reason (docs/architecture.md): the files whose arrows may close one. */
const KNOWN_CIRCLES = [];

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const FILES = FLOORS.flatMap((f) => f.holds.filter((h) => !h.endsWith('/') && h !== '*.ts'));
/** One hold as a pattern, leaving out the files inside it that stand on another floor ('*.ts': the files directly in src/). */
function holdPattern(hold) {
  if (!hold.endsWith('/') && hold !== '*.ts') return `${escape(hold)}$`;
  const inside = hold === '*.ts' ? FILES.filter((f) => !f.includes('/')) : FILES.filter((f) => f.startsWith(hold));
  const but = inside.length ? `(?!(${inside.map((f) => escape(hold === '*.ts' ? f : f.slice(hold.length))).join('|')})$)` : '';
  return hold === '*.ts' ? `${but}[^/]+\\.ts$` : `${escape(hold)}${but}`;
}
/** A path pattern of what stands on some floors. */
const pattern = (holds) => `^src/(${holds.map(holdPattern).join('|')})`;
const except = (floor) => KNOWN_EXCEPTIONS.map((e) => e.from).filter((from) => floor.holds.some((h) => from.startsWith(h)));

const floorRules = FLOORS.flatMap((floor, i) => {
  const above = FLOORS.slice(0, i);
  const below = FLOORS.slice(i + 1);
  const neighbours = floor.holds.filter((h) => h.endsWith('/'));
  const rules = [];
  if (above.length) {
    rules.push({
      name: `floor-${floor.name.replace(/\W+/g, '-')}`,
      comment: `src/${floor.holds.join(', src/')} stands on floor "${floor.name}" (${floor.what}): it may import its own folder and the floors below it, ${below.length ? below.map((f) => `"${f.name}"`).join(', ') : 'none'}, never a floor above (.dependency-cruiser.cjs FLOORS)`,
      severity: 'error',
      from: { path: pattern(floor.holds), pathNot: except(floor).map((f) => `^src/${escape(f)}$`) },
      to: { path: pattern(above.flatMap((f) => f.holds)) },
    });
  }
  for (const folder of neighbours) {
    const others = floor.holds.filter((h) => h !== folder && h !== '*.ts');
    if (!others.length) continue;
    rules.push({
      name: `neighbours-${folder.replace(/\W+/g, '-')}`,
      comment: `src/${folder} may not import its neighbours on floor "${floor.name}" (src/${others.join(', src/')}): what both need belongs on a floor below (.dependency-cruiser.cjs FLOORS)`,
      severity: 'error',
      from: { path: `^src/${escape(folder)}` },
      to: { path: pattern(others) },
    });
  }
  return rules;
});

module.exports = {
  forbidden: [
    ...floorRules,
    ...KNOWN_EXCEPTIONS.map((e) => ({
      name: `known-${e.from.replace(/\W+/g, '-')}`,
      comment: `src/${e.from} may reach src/${e.to} only (named exception: ${e.why})`,
      severity: 'error',
      from: { path: `^src/${escape(e.from)}$` },
      to: { path: pattern(FLOORS.slice(0, FLOORS.findIndex((f) => f.holds.some((h) => e.from.startsWith(h)))).flatMap((f) => f.holds)), pathNot: `^src/${escape(e.to)}$` },
    })),
    {
      name: 'no-circle',
      comment: 'files of src/ may not import each other in a circle: break it where the shared part can stand on a floor below both (docs/architecture.md, "Floors")',
      severity: 'error',
      from: { path: '^src/', pathNot: KNOWN_CIRCLES },
      to: { circular: true },
    },
    {
      name: 'fast-path-from-the-composition',
      comment: 'src/fast/ (the fast path) is imported by the composition alone (src/app.ts, src/system.ts); what it shares with the rest lives below it (the library seam in src/seams/oidc-provider.ts)',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/(app|system)\\.ts$', '^src/fast/', ...KNOWN_EXCEPTIONS.map((e) => `^src/${escape(e.from)}$`)] },
      to: { path: '^src/fast/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
