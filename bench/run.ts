// `npm run bench`: our server (src/main.ts, its own process, PostgreSQL + Redis, production mode)
// against the pinned bench anchors (docs/benchmark.md; BENCH_ANCHORS_DIR), each of our cases right after its anchor in
// every repetition, with wrk as the load generator. `--scale` adds the scale figures (lib/scale.ts).
// Results: bench/results/latest.{md,json}; a full run also writes bench/BASELINE.md.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { BENCH, CORES, HAS_TASKSET, ROOT, cleanupAll, freePort, onCleanup, pinSelf, pinStorage, rssMiB, startAnchor, startDpopAnchor, startOurs, type Server } from './lib/procs.ts';
import { dpopKey, dpopLines } from './lib/dpop.ts';
import { ensureWrk, writeFeed, type Job } from './lib/load.ts';
import { createDatabase, flushRedis, ourEnv, Seeder, type BenchClient } from './lib/seed.ts';
import { PgMeter, RedisMeter } from './lib/stores.ts';
import { runRounds, tokenBudget, type Step } from './lib/rounds.ts';
import { fmt, resultsTable, summarize, targetsTable, type CaseResult, type Summary, type Target } from './lib/report.ts';
import { runScale, type ScaleResult } from './lib/scale.ts';
import { hostSteadiness, STEADY_SPREAD } from './lib/host.ts';

const USAGE = `npm run bench -- [options]
  --quick            smoke run: 1 repetition of 3 s per case, 1 s warm-up, 15 s burst (no BASELINE.md)
  --reps N           timed repetitions (default 3)     --duration S   seconds per run (default 10)
  --warmup S         seconds of the warm-up round (default 3)
  --connections N    wrk connections (default 32; wrk -t1 always)
  --cases LIST       subset of check,me,refresh,introspection,dpop,paced,burst (default all)
  --scale            also the scale figures: 1,000,000 vs 1,000 access tokens, 10,000 vs 10 clients
  --storage-unpinned leave the local PostgreSQL and Redis on their cores (default: moved to the load core)
  --max-foreign-cpu P  before a timed run, wait while other processes use over P% of a core (default 20)
BENCH_ANCHORS_DIR  the bench anchors' folder (docs/benchmark.md); default: beside this repository, as the team keeps it
BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres): a fresh database is made there
BENCH_REDIS_URL    (default redis://127.0.0.1:6379/9): a reserved logical database, FLUSHED (--scale also the next one)`;

const CASES = ['check', 'me', 'refresh', 'introspection', 'dpop', 'paced', 'burst'] as const;
const { values: a } = parseArgs({
  options: {
    quick: { type: 'boolean' }, reps: { type: 'string' }, duration: { type: 'string' }, warmup: { type: 'string' },
    connections: { type: 'string' }, cases: { type: 'string' }, scale: { type: 'boolean' }, 'storage-unpinned': { type: 'boolean' },
    'max-foreign-cpu': { type: 'string' }, help: { type: 'boolean' },
  },
});
if (a.help) {
  console.log(USAGE);
  process.exit(0);
}
const cases = new Set((a.cases ?? CASES.join(',')).split(','));
for (const c of cases) if (!(CASES as readonly string[]).includes(c)) throw new Error(`--cases: unknown "${c}"`);
const o = {
  quick: Boolean(a.quick),
  reps: Number(a.reps ?? (a.quick ? 1 : 3)),
  duration: Number(a.duration ?? (a.quick ? 3 : 10)),
  warmup: Number(a.warmup ?? (a.quick ? 1 : 3)),
  connections: Number(a.connections ?? 32),
  burstSeconds: a.quick ? 15 : 60,
  maxForeignCpu: Number(a['max-foreign-cpu'] ?? 20),
  quiet: { ms: a.quick ? 20_000 : 90_000 },
  pgUrl: process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
  redisUrl: process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379/9',
};
const full = !o.quick && cases.size === CASES.length;

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const ANCHOR_SECRET = 'bench-secret-0123456789abcdef0123456789abcdef';
const post = (c: { id: string; secret: string }) => `client_id=${encodeURIComponent(c.id)}&client_secret=${encodeURIComponent(c.secret)}`;

const idleSql = (idle: PgMeter['idle']) => (idle ? `${fmt.n(idle.xacts)} transactions and ${fmt.n(idle.rows)} rows a second, the webhook queue's polling` : 'not measured');

async function anchorMint(anchor: Server, kind: string, n: number): Promise<string[]> {
  const res = await fetch(`${anchor.url}/__bench/mint?kind=${kind}&n=${n}`);
  if (!res.ok) throw new Error(`anchor mint: ${res.status}`);
  return (await res.text()).split('\n').filter(Boolean);
}

async function main(): Promise<number> {
  const started = new Date();
  pinSelf();
  const steadiness = [hostSteadiness()];
  const moved = a['storage-unpinned'] ? 0 : pinStorage();
  ensureWrk();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-'));
  onCleanup('remove feeds', () => fs.rmSync(tmp, { recursive: true, force: true }));
  const pinning = HAS_TASKSET ? `servers on core 0 (those not under load at idle priority); wrk and this runner on core 1${moved ? `, with the local PostgreSQL and Redis (moved for the run)` : ''}` : 'NOT pinned (no taskset)';
  console.log(`bench: ${o.quick ? 'QUICK smoke run' : 'full run'}: ${o.reps} × ${o.duration} s per case after a ${o.warmup} s warm-up, wrk -t1 -c${o.connections}; ${pinning}`);

  // Our server and its data. Limits on, not hit: the bench client's budget is raised the operator's
  // way (clients set-rate-limit); the burst client keeps the default.
  const db = await createDatabase(o.pgUrl);
  await flushRedis(o.redisUrl);
  const env = ourEnv(db.url, o.redisUrl, await freePort());
  const seeder = await Seeder.open(env);
  const users = await seeder.users(100);
  const [client] = (await seeder.clients(1, 1_000_000)) as [BenchClient];
  const [burstClient] = (await seeder.clients(1)) as [BenchClient];
  const access = (await seeder.mint('access', [client], users, 1000)).map((t) => t.token);
  const ours = await startOurs('ours', env);
  const redis = new Redis(o.redisUrl);
  onCleanup('close the Redis counter', () => redis.disconnect());
  const meters = { redis: new RedisMeter(redis, Number(new URL(o.redisUrl).pathname.slice(1) || 0)), pg: new PgMeter(o.pgUrl, db.name) };
  const [anchor, hello] = [await startAnchor('oidc'), await startAnchor('hello')];
  // DPoP (RFC 9449): 1,000 tokens bound to one key on each side, a fresh proof (its own jti, this
  // request's htm, htu and ath) for every request, made before each run (the proofs' iat window is 300 s).
  const dpop = cases.has('dpop') ? { key: dpopKey(), anchor: await startDpopAnchor() } : undefined;
  const dpopAccess = dpop ? (await seeder.mint('access', [client], users, 1000, dpop.key.jkt)).map((t) => t.token) : [];
  const anchorDpopAccess = dpop ? (await (await fetch(`${dpop.anchor.url}/__bench/mint?n=1000&jkt=${dpop.key.jkt}`)).text()).split('\n').filter(Boolean) : [];
  const anchorAccess = await anchorMint(anchor, 'access', 1000);
  const anchorClient = (id: string) => ({ id, secret: ANCHOR_SECRET });
  const rss: { server: string; when: string; mib: number }[] = [];
  const memory = (when: string) => [ours, anchor, ...(dpop ? [dpop.anchor] : [])].forEach((s) => rss.push({ server: s.name, when, mib: rssMiB(s.pid) ?? NaN }));
  memory('after start');

  const bearerFeed = (name: string, tokens: string[]) => writeFeed(tmp, name, tokens.map((t) => `Bearer ${t}\t`));
  const feeds = {
    ours: bearerFeed('ours-bearer', access),
    anchor: bearerFeed('anchor-bearer', anchorAccess),
    oursIntrospect: writeFeed(tmp, 'ours-introspect', access.map((t) => `\ttoken=${t}&${post(client)}`)),
    anchorIntrospect: writeFeed(tmp, 'anchor-introspect', anchorAccess.map((t) => `\ttoken=${t}&${post(anchorClient('bench-client'))}`)),
  };
  const budget = tokenBudget();
  const refreshFeed = async (id: string, seconds: number, c: BenchClient | 'anchor', rate?: number) => {
    const n = budget.count(id, seconds, rate);
    const tokens = c === 'anchor' ? await anchorMint(anchor, 'refresh-rotating', n) : (await seeder.mint('refresh', [c], users, n)).map((t) => t.token);
    const creds = post(c === 'anchor' ? anchorClient('bench-client-rotating') : c);
    return writeFeed(tmp, id, tokens.map((t) => `\tgrant_type=refresh_token&refresh_token=${t}&${creds}`));
  };
  /** A feed of DPoP-presented tokens, each line's proof for `htu` (the URL the client calls), used once. */
  const getDpop = (id: string, target: Server, p: string, tokens: string[], htu: string, headers: Record<string, string> = {}) => (seconds: number): Job =>
    ({ url: `${target.url}${p}`, method: 'GET', headers, seconds, connections: o.connections, feed: writeFeed(tmp, id, dpopLines(dpop!.key, tokens, 'GET', htu, budget.count(id, seconds))), once: true });
  const get = (target: Server, p: string, feed?: string, headers: Record<string, string> = {}) => (seconds: number): Job =>
    ({ url: `${target.url}${p}`, method: 'GET', headers, seconds, connections: o.connections, ...(feed ? { feed } : {}) });
  const postForm = (target: Server, p: string, feed: (seconds: number) => Promise<string> | string, once = false) => async (seconds: number): Promise<Job> =>
    ({ url: `${target.url}${p}`, method: 'POST', headers: FORM, seconds, connections: o.connections, feed: await feed(seconds), once });
  const half = (rates: Map<string, number>, id: string) => {
    if (!rates.get(id)) throw new Error(`${id} must run before its paced run`);
    return Math.max(10, Math.round(rates.get(id)! / 2));
  };
  const forwarded = { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/me' };
  const bearer = 'GET /me (AccessToken.find + scope)';
  const TOKEN = '/v2/auth/oauth2/token';
  const steps: Step[] = [{ id: 'anchor.hello', label: 'GET / (Koa hello: the floor)', target: hello, job: get(hello, '/') }];
  const ourStep = (id: string, label: string, job: Step['job'], extra: Partial<Step> = {}): Step => ({ id: `ours.${id}`, label, target: ours, meters, job, ...extra });
  if (cases.has('check')) steps.push(
    { id: 'anchor.check', label: bearer, target: anchor, job: get(anchor, '/me', feeds.anchor) },
    ourStep('check', 'GET /v2/auth/check', get(ours, '/v2/auth/check', feeds.ours, forwarded), { anchor: 'anchor.check' }),
  );
  if (cases.has('me')) steps.push(
    { id: 'anchor.me', label: bearer, target: anchor, job: get(anchor, '/me', feeds.anchor) },
    ourStep('me', 'GET /v2/me', get(ours, '/v2/me', feeds.ours), { anchor: 'anchor.me' }),
  );
  if (cases.has('refresh')) steps.push(
    { id: 'anchor.refresh', label: 'POST /token (refresh, rotating)', target: anchor, job: postForm(anchor, '/token', (s) => refreshFeed('anchor.refresh', s, 'anchor'), true) },
    ourStep('refresh', 'POST token (refresh, rotating)', postForm(ours, TOKEN, (s) => refreshFeed('ours.refresh', s, client), true), { anchor: 'anchor.refresh' }),
  );
  if (cases.has('introspection')) steps.push(
    { id: 'anchor.introspection', label: 'POST /token/introspection', target: anchor, job: postForm(anchor, '/token/introspection', () => feeds.anchorIntrospect) },
    ourStep('introspection', 'POST introspect', postForm(ours, '/v2/auth/oauth2/introspect', () => feeds.oursIntrospect), { anchor: 'anchor.introspection' }),
  );
  if (dpop) {
    const anchorDpop = (id: string): Step => ({ id, target: dpop.anchor, label: "GET /me (the library's userinfo: DPoP proof and bound token)", job: getDpop(id, dpop.anchor, '/me', anchorDpopAccess, `${dpop.anchor.url}/me`) });
    // The check's proof is for the call the client made: forwarded as GET /v2/me to this host.
    steps.push(
      anchorDpop('anchor.dpop-check'),
      ourStep('dpop-check', 'GET /v2/auth/check (DPoP)', getDpop('ours.dpop-check', ours, '/v2/auth/check', dpopAccess, `${ours.url}/v2/me`, forwarded), { anchor: 'anchor.dpop-check' }),
      anchorDpop('anchor.dpop-me'),
      ourStep('dpop-me', 'GET /v2/me (DPoP)', getDpop('ours.dpop-me', ours, '/v2/me', dpopAccess, `${ours.url}/v2/me`), { anchor: 'anchor.dpop-me' }),
    );
  }
  if (cases.has('paced') && cases.has('check')) steps.push(
    ourStep('check@half', 'GET /v2/auth/check, open loop at half its rate', (s, r) => ({ ...get(ours, '/v2/auth/check', feeds.ours, forwarded)(s), rate: half(r, 'ours.check') }), { paced: true }),
    { id: 'anchor.hello@half', label: 'GET / (Koa hello) at that rate: the floor', paced: true, target: hello, job: (s, r) => ({ ...get(hello, '/')(s), rate: half(r, 'ours.check') }) },
  );
  if (cases.has('paced') && cases.has('refresh')) steps.push(
    ourStep('refresh@half', 'POST token (refresh), open loop at half its rate', async (s, r) => ({ ...(await postForm(ours, TOKEN, (x) => refreshFeed('ours.refresh@half', x, client, half(r, 'ours.refresh')), true)(s)), rate: half(r, 'ours.refresh') }), { paced: true }),
    { id: 'anchor.refresh@half', label: 'POST /token (refresh) at that rate: the anchor', paced: true, target: anchor, job: async (s, r) => ({ ...(await postForm(anchor, '/token', (x) => refreshFeed('anchor.refresh@half', x, 'anchor', half(r, 'ours.refresh')), true)(s)), rate: half(r, 'ours.refresh') }) },
  );

  const results = new Map<string, CaseResult>();
  const rounds = { reps: o.reps, duration: o.duration, warmup: o.warmup, maxForeignCpu: o.maxForeignCpu, quiet: o.quiet };
  await runRounds('PostgreSQL + Redis', steps, rounds, results, budget.onRate);
  memory('after the repetitions');
  if (cases.has('burst')) {
    // Abuse limits at their defaults: 4,000 valid refreshes a minute from one address and one client are not throttled.
    const rate = 4000 / 60;
    const burst = ourStep('burst', 'POST token (refresh) at 4,000/min, one client and address, default budget', async (s) => ({ ...(await postForm(ours, TOKEN, (x) => refreshFeed('ours.burst', x, burstClient, rate), true)(s)), rate }), { paced: true });
    await runRounds('burst', [burst], { ...rounds, reps: 1, warmup: 0, duration: o.burstSeconds }, results);
  }
  await meters.pg.close(); // the last window's SQL counts
  for (const s of [anchor, hello, ours, ...(dpop ? [dpop.anchor] : [])]) await s.stop();
  steadiness.push(hostSteadiness());

  const scale = a.scale ? await runScale({ ...rounds, pgUrl: o.pgUrl, redisUrl: o.redisUrl, connections: o.connections, tmp }) : undefined;
  return report(started, results, rss, scale, pinning, meters.pg.idle, steadiness);
}

const git = (args: string[]) => {
  try {
    return execFileSync('git', args, { cwd: ROOT }).toString().trim();
  } catch {
    return '?';
  }
};

function report(started: Date, resultMap: Map<string, CaseResult>, rss: { server: string; when: string; mib: number }[], scale: ScaleResult | undefined, pinning: string, idle: PgMeter['idle'], steadiness: ReturnType<typeof hostSteadiness>[]): number {
  const results = [...resultMap.values()];
  const all = new Map([...resultMap, ...(scale?.results ?? []).map((r) => [r.id, r] as const)]);
  const sums = new Map<string, Summary>();
  for (const r of all.values()) {
    const s = summarize(r, all);
    if (s) sums.set(r.id, s);
  }
  const sum = (id: string) => sums.get(id);
  const ratioTarget = (id: string, name: string, aim = '') => {
    const s = sum(id);
    return { target: `${name} ≥ 1.0× the anchor${aim}`, measured: s?.ratio === undefined ? 'not run' : `${fmt.x(s.ratio)} (${fmt.n(s.rps)} vs ${fmt.n(sum(resultMap.get(id)!.anchor!)?.rps)} req/s)`, met: s?.ratio === undefined ? undefined : s.ratio >= 1 };
  };
  const p99Target = (id: string, name: string, limit: number) => {
    const s = sum(id);
    return { target: `${name} p99 ≤ ${limit} ms at half its saturated rate (open loop)`, measured: s ? `${fmt.ms(s.p99)} ms at ${fmt.n(s.rps)} req/s (worst rep ${fmt.ms(s.p99Max)} ms)` : 'not run', met: s ? s.p99 <= limit : undefined };
  };
  const hot = ['ours.check', 'ours.me', 'ours.refresh', 'ours.introspection'].filter((id) => sum(id));
  const ours = results.filter((r) => r.server === 'ours');
  const bad = ours.reduce((n, r) => n + (sum(r.id)?.unexpected ?? 0) + (sum(r.id)?.feedShort ?? 0), 0);
  const burst = sum('ours.burst');
  const targets: Target[] = [
    ratioTarget('ours.check', '`GET /v2/auth/check`', ' (aim 1.5×)'),
    p99Target('ours.check@half', '`GET /v2/auth/check`', 10),
    ratioTarget('ours.me', '`GET /v2/me`'),
    ratioTarget('ours.introspection', 'introspection'),
    ratioTarget('ours.refresh', 'rotating refresh'),
    p99Target('ours.refresh@half', 'rotating refresh', 50),
    ratioTarget('ours.dpop-check', 'DPoP `GET /v2/auth/check` (its anchor: the library\'s userinfo with a proof)'),
    ratioTarget('ours.dpop-me', 'DPoP `GET /v2/me`'),
    { target: 'no SQL on the check, `/v2/me`, introspection and refresh paths in steady state', measured: hot.map((id) => `${id.slice(5)} ${fmt.per(sum(id)!.sqlXacts)}`).join(', ') + ' SQL transactions / request', met: hot.length ? hot.every((id) => (sum(id)!.sqlXacts ?? 1) < 0.01) : undefined },
    { target: 'Redis round trips per request (reported)', measured: hot.map((id) => `${id.slice(5)} ${fmt.per(sum(id)!.redisReads)}`).join(', '), met: undefined },
    { target: '4,000 valid refreshes a minute from one address are not throttled (limits at their defaults)', measured: burst ? `${burst.status429} × 429 in ${fmt.n(burst.rps * o.burstSeconds)} requests at ${fmt.n(burst.rps * 60)}/min` : 'not run', met: burst ? burst.status429 === 0 && burst.unexpected === 0 : undefined },
    { target: 'every answer of our server as expected (valid runs)', measured: `${bad} unexpected`, met: bad === 0 },
  ];
  const dirty = git(['status', '--porcelain']).split('\n').filter(Boolean).length;
  const foreign = [...all.values()].flatMap((r) => r.samples.map((x) => x.foreignCpu ?? 0)).sort((x, y) => x - y);
  const shared = `other processes used ${fmt.n(foreign[foreign.length >> 1])}% of a core (median; worst run ${fmt.n(foreign.at(-1))}%) during the timed runs${(foreign.at(-1) ?? 0) > o.maxForeignCpu ? ': **a shared machine, the figures are noisy**' : ''}`;
  const spreads = steadiness.map((x) => x?.spread ?? NaN);
  const worstSpread = Math.max(...spreads);
  const host = Number.isFinite(worstSpread)
    ? `the host's own speed varied by ${spreads.map((x) => `${Math.round(100 * x)}%`).join(' before, ')} after (a hashing loop on the servers' core, ${steadiness[0]!.counts.length} windows of 0.5 s)${worstSpread > STEADY_SPREAD ? ': **an unsteady host: these ratios are not comparable with another run\'s**' : ''}`
    : "the host's own speed was not measured";
  const headline =
    `${started.toISOString()} · commit ${git(['rev-parse', '--short', 'HEAD'])}${dirty ? ` (+${dirty} uncommitted files)` : ''} · Node ${process.version} · ${os.cpus()[0]?.model.trim()}, ${CORES} cores · ${pinning} · ` +
    `wrk -t1 -c${o.connections}, ${o.reps} × ${o.duration} s per case after a ${o.warmup} s warm-up round, medians · our server: \`NODE_ENV=production\`, log level info (to a file), rate limits on at their defaults · run took ${Math.round((Date.now() - started.getTime()) / 1000)} s · ${shared} · ${host}` +
    `${o.quick ? ' · **QUICK smoke run: indicative only**' : ''}`;
  const scaleMd = scale
    ? ['<!-- scale -->', '## Scale (`--scale`)', '', resultsTable(scale.results, sums), '', targetsTable(scale.targets), '', ...scale.notes.map((n) => `- ${n}`), '<!-- /scale -->'].join('\n')
    : undefined;
  const md = `# Benchmark results

${headline}

${resultsTable(results, sums)}

${targetsTable(targets)}

Each of our cases runs right after its anchor (the bench anchors, see \`docs/benchmark.md\`: bare oidc-provider 9.13 on its in-memory adapter; Koa hello) in every repetition; ratio: our median ÷ the anchor’s median of the same run (in brackets: the range of the per-repetition ratios). p50/p99: wrk’s (from each request’s send); paced rows: open loop (wrk with bench/lib/feed.lua) at half the saturated rate of the same repetition, latency from each request’s due time: exact for our server (it echoes the due time sent as X-Request-Id), for the anchors an upper bound, wrk’s p99.5 plus the p99.5 of the sends’ lateness (a send is late when every connection still waits for an answer); beside ours, Koa hello at the check’s rate (the floor of that measurement here) and the anchor’s refresh at our refresh’s. Tokens: 1,000 access tokens (cycled, one per request), and refresh tokens minted before each run and each presented once; ours minted by our own provider models, the anchor’s by its \`/__bench/mint\`. Our client’s budget is raised with \`clients set-rate-limit\` (limits on, not hit); the burst client keeps the default. unexpected: answers other than 200, and socket errors.

Stores, per request our server answered, by their own counters: SQL transactions (statements outside a transaction count one each) and rows read (\`tup_returned\`) from \`pg_stat_database\` of the bench database, read 10.5 s after the load so that every backend has reported, less what the database does while our server is idle (measured over 10 s before the first timed run: ${idleSql(idle)}); Redis commands (those run inside scripts included) from \`INFO commandstats\`, and reads (\`total_reads_processed\`: network round trips, several pipelined commands being one) — server-wide counters, so * marks a run during which another client of that Redis was active.

RSS (MiB): ${rss.map((m) => `${m.server} ${m.when} ${m.mib.toFixed(0)}`).join(', ')}.
${scaleMd ? `\n${scaleMd}\n` : ''}`;
  const dir = path.join(BENCH, 'results');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'latest.md'), md);
  fs.writeFileSync(path.join(dir, 'latest.json'), JSON.stringify({ headline, options: o, results: [...all.values()], summaries: Object.fromEntries(sums), targets, scale, rss }, null, 1));
  if (full) {
    // A run without --scale keeps the scale section of the previous baseline.
    const file = path.join(BENCH, 'BASELINE.md');
    const old = fs.existsSync(file) ? /<!-- scale -->[\s\S]*<!-- \/scale -->/.exec(fs.readFileSync(file, 'utf8'))?.[0] : undefined;
    const body = md.replace('# Benchmark results', '# Benchmark baseline\n\nThe latest full `npm run bench` (written by bench/run.ts: regenerate, do not edit).');
    fs.writeFileSync(file, scaleMd || !old ? body : `${body}\n${old.replace('## Scale (`--scale`)', '## Scale (`--scale`, from an earlier run)')}\n`);
  }
  console.log(`\n${md}\n\nwritten: bench/results/latest.{md,json}${full ? ', bench/BASELINE.md' : ''}`);
  return results.some((r) => r.error) ? 1 : 0;
}

let code = 1;
try {
  code = await main();
} catch (err) {
  console.error(`bench failed: ${(err as Error).stack ?? err}`);
} finally {
  await cleanupAll();
}
process.exit(code);
