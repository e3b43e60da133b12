// `npm run bench`: load tests of our server (src/main.ts, in its own process) on PostgreSQL + Redis
// and on the embedded PGlite default, against two references measured in the same run: a bare
// Koa 3 hello-world (the floor) and a bare oidc-provider 9 doing the same OAuth work. See
// bench/BASELINE.md for the latest table and `npm run bench -- --help` for the options.
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  BENCH,
  CLIENT_CORE,
  CORES,
  HAS_TASKSET,
  ROOT,
  SERVER_CORE,
  cleanupAll,
  freePort,
  pinSelf,
  pinStorageServices,
  ownPids,
  stopping,
  startLoadGenerator,
  startServer,
  type LoadGenerator,
  type ServerProcess,
} from './lib/procs.ts';
import type { LoadJob, LoadResult } from './lib/load.ts';
import { basicAuth, exchange, mintCodes, mintRefreshTokens, REDIRECT_URI, runFlows, type Target } from './lib/flows.ts';
import { createBenchDatabase, OUR_SCOPES, pgliteDir, prepareRedis, seed } from './lib/services.ts';
import {
  evaluateTargets,
  percentile,
  renderMarkdown,
  summarize,
  type CaseResult,
  type MemoryPoint,
  type ResultsDoc,
  type Sample,
} from './lib/report.ts';
import { profileMarkdown, summarizeProfile } from './lib/profile.ts';
import { cpuSeconds, machineBusyPct } from './lib/cpu.ts';
import { foreignCpu } from './lib/counters.ts';
import { routeName } from '../src/http/metrics.ts';

const USAGE = `npm run bench -- [options]

  --quick               smoke run: 1 s warm-up, 1 repetition of 3 s per case (results only, no BASELINE.md)
  --reps N              timed repetitions per case on PostgreSQL + Redis (default 5)
  --pglite-reps N       timed repetitions per case on the embedded PGlite (default 2)
  --duration S          seconds per timed repetition (default 5)
  --pglite-duration S   seconds per timed repetition on the embedded PGlite (default 3)
  --warmup S            seconds of warm-up per case (default 2)
  --connections N       autocannon connections (default 32)
  --flow-concurrency N  concurrent scripted users in the interactive-flow case (default 8)
  --cases LIST          comma-separated subset of: hello,check,me,refresh,code,badauth,flow
  --storages LIST       comma-separated subset of: pg,pglite (default both)
  --env KEY=VALUE       extra environment for our server (repeatable; RATE_LIMITS=off is always
                        passed unless overridden, e.g. --env RATE_LIMITS=on)
  --node-arg ARG        extra node option for our server (repeatable), e.g. --node-arg=--trace-gc
                        (its output goes to bench/results/server-<storage>.log)
  --profile CASE        run only CASE (e.g. refresh, check, pglite:refresh) on our server started
                        with node --cpu-prof, and print where its time went
  --baseline            write bench/BASELINE.md even for a partial run
  --storage-unpinned    leave the local PostgreSQL and Redis where they are (by default they are
                        moved to the load core for the run, and moved back at the end)
  --max-foreign-cpu P   before each timed sample, wait while processes outside the benchmark use
                        more than P% of a core (default 20; 0 = never wait)
  --quiet-budget S      total seconds the run may spend waiting so (default 60, quick 20; at most 10 s per sample)
  --paced-load F        the open-loop latency runs of check and refresh offer this fraction of the
                        saturated rate measured just before (default 0.3)
  --help

  BENCH_DATABASE_URL    PostgreSQL to create the bench database on (default postgres://postgres@127.0.0.1:5432/postgres)
  BENCH_REDIS_URL       Redis logical database reserved for the bench; FLUSHED at start and end
                        (default redis://127.0.0.1:6379/9)`;

const KINDS = ['hello', 'check', 'me', 'refresh', 'code', 'badauth', 'flow'] as const;
type Kind = (typeof KINDS)[number];
type Storage = 'pg' | 'pglite';

interface Options {
  quick: boolean;
  reps: number;
  pgliteReps: number;
  duration: number;
  pgliteDuration: number;
  warmup: number;
  connections: number;
  flowConcurrency: number;
  kinds: Set<Kind>;
  storages: Set<Storage>;
  serverEnv: Record<string, string>;
  /** Extra node options for our server (e.g. --trace-gc, --max-semi-space-size=64). */
  serverNodeArgs: string[];
  profile?: { storage: Storage; kind: Kind };
  baseline: boolean;
  pinStorage: boolean;
  /** Foreign CPU (% of a core) above which a sample waits for quiet, and the total wait allowed. */
  maxForeignCpu: number;
  quietBudgetSec: number;
  /** The paced (open-loop) latency runs: this fraction of the saturated rate. */
  pacedLoad: number;
  pgUrl: string;
  redisUrl: string;
  references: boolean;
}

function parseOptions(): Options {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      reps: { type: 'string' },
      'pglite-reps': { type: 'string' },
      duration: { type: 'string' },
      'pglite-duration': { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      'flow-concurrency': { type: 'string' },
      cases: { type: 'string' },
      storages: { type: 'string' },
      env: { type: 'string', multiple: true },
      'node-arg': { type: 'string', multiple: true },
      profile: { type: 'string' },
      baseline: { type: 'boolean', default: false },
      'storage-unpinned': { type: 'boolean', default: false },
      'max-foreign-cpu': { type: 'string' },
      'quiet-budget': { type: 'string' },
      'paced-load': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    allowPositionals: false,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const num = (v: string | undefined, fallback: number, name: string) => {
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got "${v}"`);
    return n;
  };
  const list = <T extends string>(v: string | undefined, all: readonly T[], name: string): Set<T> => {
    if (!v) return new Set(all);
    const items = v.split(',').map((s) => s.trim()).filter(Boolean);
    for (const item of items) if (!all.includes(item as T)) throw new Error(`--${name}: unknown "${item}" (one of ${all.join(', ')})`);
    return new Set(items as T[]);
  };
  const quick = values.quick!;
  const serverEnv: Record<string, string> = { RATE_LIMITS: 'off' };
  for (const pair of values.env ?? []) {
    const eq = pair.indexOf('=');
    if (eq < 1) throw new Error(`--env expects KEY=VALUE, got "${pair}"`);
    serverEnv[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const options: Options = {
    quick,
    reps: Math.round(num(values.reps, quick ? 1 : 5, 'reps')),
    pgliteReps: Math.round(num(values['pglite-reps'], quick ? 1 : 2, 'pglite-reps')),
    duration: num(values.duration, quick ? 3 : 5, 'duration'),
    pgliteDuration: num(values['pglite-duration'], 3, 'pglite-duration'),
    warmup: num(values.warmup, quick ? 1 : 2, 'warmup'),
    connections: Math.round(num(values.connections, 32, 'connections')),
    flowConcurrency: Math.round(num(values['flow-concurrency'], 8, 'flow-concurrency')),
    kinds: list(values.cases, KINDS, 'cases'),
    storages: list(values.storages, ['pg', 'pglite'] as const, 'storages'),
    serverEnv,
    serverNodeArgs: values['node-arg'] ?? [],
    baseline: values.baseline!,
    pinStorage: !values['storage-unpinned'],
    maxForeignCpu: values['max-foreign-cpu'] === '0' ? 0 : num(values['max-foreign-cpu'], 20, 'max-foreign-cpu'),
    quietBudgetSec: values['quiet-budget'] === '0' ? 0 : num(values['quiet-budget'], quick ? 20 : 60, 'quiet-budget'),
    pacedLoad: Math.min(0.95, num(values['paced-load'], 0.3, 'paced-load')),
    pgUrl: process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
    redisUrl: process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379/9',
    references: true,
  };
  if (values.profile) {
    const [a, b] = values.profile.split(':');
    const storage = (b ? a : 'pg') as Storage;
    const kind = (b ?? a) as Kind;
    if (!['pg', 'pglite'].includes(storage) || !KINDS.includes(kind) || kind === 'hello') {
      throw new Error(`--profile expects [pg:|pglite:]CASE with CASE one of ${KINDS.filter((k) => k !== 'hello').join(', ')}`);
    }
    options.profile = { storage, kind };
    options.kinds = new Set([kind]);
    options.storages = new Set([storage]);
    options.references = false;
    options.reps = values.reps ? options.reps : 1;
    options.pgliteReps = options.reps;
    options.duration = values.duration ? options.duration : 10;
    options.pgliteDuration = options.duration;
  }
  return options;
}

// ---------------------------------------------------------------------------------------------
// Cases

interface CaseDef extends CaseCommonInfo {
  measure(durationSec: number, warm: boolean): Promise<Sample>;
}
type CaseCommonInfo = Omit<CaseResult, 'samples' | 'summary' | 'error'>;

function sampleOf(r: LoadResult, expectStatus: number): Sample {
  const expected = r.status[String(expectStatus)] ?? 0;
  const status429 = r.status['429'] ?? 0;
  return {
    rps: r.rps,
    p50: r.latency.p50,
    p99: r.latency.p99,
    total: r.total,
    ...(r.served !== undefined ? { served: r.served } : {}),
    unexpected: r.total - expected - status429,
    non2xx: r.non2xx,
    status429,
    errors: r.errors + r.timeouts,
    status: r.status,
    durationSec: r.durationSec,
    ...(r.serverCpuPct !== undefined ? { serverCpuPct: r.serverCpuPct } : {}),
    clientCpuPct: r.clientCpuPct,
    windowUs: r.windowUs,
    ...(r.feedEmpty ? { note: `${r.feedEmpty} requests found no fresh code/token left` } : {}),
  };
}

interface Subject {
  target: Target;
  server: ServerProcess;
  accessToken: string;
  storage: string;
  idPrefix: string;
}

/** The server's SQL queries and Redis commands / round trips per request during `run`. */
/** Our server's latency histogram for one route (GET /metrics): all requests, and those within 10 ms. */
async function latencyBuckets(base: string, route: string): Promise<{ total: number; within10ms: number } | undefined> {
  try {
    const text = await (await fetch(`${base}/metrics`)).text();
    const bucket = (le: string) =>
      Number(new RegExp(`^http_request_duration_seconds_bucket\\{(?=[^}]*le="${le}")(?=[^}]*route="${route}")[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1]);
    const [total, within10ms] = [bucket('\\+Inf'), bucket('0\\.01')];
    return Number.isFinite(total) && Number.isFinite(within10ms) ? { total, within10ms } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * For our server: the share of the run's requests that spent over 10 ms inside it, by its own
 * latency histogram read before and after — to tell the server's tail from the harness's and
 * the machine's (the load side measures from outside, scheduling delays included).
 */
async function withServerTiming(base: string | undefined, url: string, run: () => Promise<Sample>): Promise<Sample> {
  const route = routeName(new URL(url).pathname);
  if (!base || route === 'other') return run();
  const before = await latencyBuckets(base, route);
  const sample = await run();
  const after = await latencyBuckets(base, route);
  if (!before || !after || after.total <= before.total) return sample;
  const total = after.total - before.total;
  return { ...sample, serverOver10msPct: ((total - (after.within10ms - before.within10ms)) / total) * 100 };
}

async function withCounters(server: ServerProcess, run: () => Promise<Sample>): Promise<Sample> {
  const before = await server.probe();
  const sample = await run();
  const after = await server.probe();
  const served = sample.served ?? sample.total; // the per-request denominator: all the server saw
  if (!before || !after || !served) return sample;
  const perRequest = (a: Record<string, number>, b: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(b)
        .map(([k, v]) => [k, (v - (a[k] ?? 0)) / served] as const)
        .filter(([, v]) => v > 0.005)
        .sort((x, y) => y[1] - x[1]),
    );
  return {
    ...sample,
    storageBreakdown: { sql: perRequest(before.sqlByStatement, after.sqlByStatement), redis: perRequest(before.redisByCommand, after.redisByCommand) },
    sqlPerReq: (after.sqlQueries - before.sqlQueries) / served,
    redisCmdsPerReq: (after.redisCommands - before.redisCommands) / served,
    redisTripsPerReq: (after.redisRoundTrips - before.redisRoundTrips) / served,
  };
}

const TOKEN_FORM = 'application/x-www-form-urlencoded';
/** The rate of the latest paced run of a case (`pg.check`): the Koa floor is paced the same. */
const lastPacedRate = new Map<string, number>();
/** Sessions (grants) the refresh tokens of one repetition come from: every connection chains its own token. */
const REFRESH_GRANTS = 8;
/** Sessions (grants) the authorization codes of one repetition come from. */
const CODE_GRANTS = 16;
/** Seconds of a paced repetition: enough samples for a p99, and cheaper than a full one. */
const PACED_SECONDS = 3;
/** About how long one repetition of the code exchange lasts (its codes are minted right before). */
const CODE_SECONDS = 3;

type CaseKey = Kind | 'checkPaced' | 'refreshPaced';

function oauthCases(subject: Subject, opts: Options, gen: LoadGenerator): Partial<Record<CaseKey, CaseDef>> {
  const { target, accessToken, idPrefix, storage } = subject;
  const ours = target.kind === 'ours';
  const server = ours ? 'ours' : 'bare';
  const ref = (kind: string) => (ours && opts.references ? { reference: `bare.${kind}` } : {});
  const url = (p: string) => `${target.base}${p}`;
  const c = opts.connections;
  const tokenHeaders = { 'content-type': TOKEN_FORM, authorization: basicAuth(target.clientId, target.clientSecret) };
  const load = (job: Omit<LoadJob, 'connections'>, expect: number) =>
    withCounters(subject.server, () =>
      withServerTiming(ours ? target.base : undefined, job.url, async () => sampleOf(await gen.run<LoadResult>({ ...job, connections: c, serverPid: subject.server.pid }), expect)),
    );
  // The saturated rate of the last run of a case, for its paced variant at a fraction of it.
  const lastRps = new Map<string, number>();
  const remember = (id: string, sample: Sample) => {
    lastRps.set(id, sample.rps);
    return sample;
  };
  const pacedRate = (id: string) => {
    const rps = lastRps.get(id);
    if (!rps) throw new Error(`${id} must run before its paced variant`);
    const rate = Math.max(10, Math.round(rps * opts.pacedLoad));
    lastPacedRate.set(`${idPrefix}.${id}`, rate);
    return rate;
  };
  const checkJob = (d: number): Omit<LoadJob, 'connections'> => ({
    label: `${idPrefix}.check`,
    url: url('/v2/auth/check'),
    method: 'GET',
    headers: { authorization: `Bearer ${accessToken}`, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/me' },
    duration: d,
  });
  const refreshJob = async (d: number, pool: number): Promise<Omit<LoadJob, 'connections'>> => ({
    label: `${idPrefix}.refresh`,
    url: url(target.tokenPath),
    method: 'POST',
    headers: tokenHeaders,
    duration: d,
    feed: { values: await mintRefreshTokens(target, pool, REFRESH_GRANTS), template: 'grant_type=refresh_token&refresh_token={value}', chainField: 'refresh_token' },
  });

  // Sized from the previous run of the case, so that one repetition lasts about `duration`.
  let codeRate: number | undefined;

  const cases: Partial<Record<CaseKey, CaseDef>> = {
    check: ours
      ? {
          id: `${idPrefix}.check`,
          label: 'GET /v2/auth/check',
          server,
          storage,
          expectStatus: 200,
          ...ref('check'),
          what: 'gateway check: bearer token (PROFILE_READ), X-Forwarded-Method GET, X-Forwarded-Uri /v2/me',
          measure: async (d) => remember('check', await load(checkJob(d), 200)),
        }
      : {
          id: 'bare.check',
          label: 'GET /me (userinfo)',
          server,
          storage,
          expectStatus: 200,
          what: 'bearer verification: userinfo with an access token (scope openid)',
          measure: (d) =>
            load({ label: 'bare.check', url: url('/me'), method: 'GET', headers: { authorization: `Bearer ${accessToken}` }, duration: d }, 200),
        },
    refresh: {
      id: `${idPrefix}.refresh`,
      label: 'POST token (refresh_token, rotating)',
      server,
      storage,
      expectStatus: 200,
      ...ref('refresh'),
      what: 'refresh_token grant with rotation; every request presents a never-used refresh token',
      measure: async (d) => remember('refresh', await load(await refreshJob(d, 2 * c), 200)),
    },
    code: {
      id: `${idPrefix}.code`,
      label: 'POST token (authorization_code)',
      server,
      storage,
      expectStatus: 200,
      ...ref('code'),
      what: 'code exchange; codes minted through sign-in + consent right before each repetition',
      async measure(d, warm) {
        // Codes are minted through the server itself (as slow as the exchange): size for at most CODE_SECONDS.
        const seconds = Math.min(d, CODE_SECONDS);
        const amount = Math.round(Math.min(40_000, Math.max(10 * c, codeRate ? codeRate * seconds : warm ? (opts.quick ? 400 : 1000) : 1000)));
        const codes = await mintCodes(target, amount, CODE_GRANTS);
        const sample = await load(
          {
            label: `${idPrefix}.code`,
            url: url(target.tokenPath),
            method: 'POST',
            headers: tokenHeaders,
            amount,
            feed: { values: codes, template: `grant_type=authorization_code&code={value}&redirect_uri=${encodeURIComponent(REDIRECT_URI)}` },
          },
          200,
        );
        codeRate = Math.max(codeRate ?? 0, sample.rps);
        return sample;
      },
    },
    badauth: {
      id: `${idPrefix}.badauth`,
      label: 'POST token, wrong client secret',
      server,
      storage,
      expectStatus: 401,
      ...ref('badauth'),
      what: 'failed client authentication (right client_id, wrong secret, HTTP Basic): 401 invalid_client expected',
      measure: (d) =>
        load(
          {
            label: `${idPrefix}.badauth`,
            url: url(target.tokenPath),
            method: 'POST',
            headers: { 'content-type': TOKEN_FORM, authorization: basicAuth(target.clientId, `wrong-${target.clientSecret}`) },
            body: `grant_type=refresh_token&refresh_token=${randomBytes(32).toString('base64url')}`,
            duration: d,
          },
          401,
        ),
    },
    flow: {
      id: `${idPrefix}.flow`,
      label: 'interactive flow (flows/s)',
      server,
      storage,
      expectStatus: 200,
      ...ref('flow'),
      what: `authorize → sign-in → consent → code exchange, fresh browser each, ${opts.flowConcurrency} users at a time (p50/p99: whole flow)`,
      async measure(d) {
        return withCounters(subject.server, async () => {
          const cpu0 = cpuSeconds(subject.server.pid);
          const client0 = process.cpuUsage();
          const w0 = Number(process.hrtime.bigint() / 1000n);
          const run = await runFlows(target, d, opts.flowConcurrency);
          const windowUs: [number, number] = [w0, Number(process.hrtime.bigint() / 1000n)];
          const cpu1 = cpuSeconds(subject.server.pid);
          const client = process.cpuUsage(client0);
          return {
            ...(cpu0 !== undefined && cpu1 !== undefined ? { serverCpuPct: ((cpu1 - cpu0) / run.durationSec) * 100 } : {}),
            clientCpuPct: ((client.user + client.system) / 1e6 / run.durationSec) * 100,
            windowUs,
            rps: run.rps,
            p50: percentile(run.latencyMs, 50),
            p99: percentile(run.latencyMs, 99),
            total: run.flows + run.failures,
            unexpected: run.failures,
            non2xx: run.failures,
            status429: 0,
            errors: 0,
            status: { ok: run.flows, failed: run.failures },
            durationSec: run.durationSec,
            ...(run.firstError ? { note: run.firstError } : {}),
          };
        });
      },
    },
  };
  if (ours) {
    // Latency below saturation: the same requests in an open loop at a fraction of the rate just measured.
    const load$ = `${Math.round(opts.pacedLoad * 100)}%`;
    cases.checkPaced = {
      id: `${idPrefix}.check@paced`,
      label: `GET /v2/auth/check at ${load$} load`,
      paced: true,
      server,
      storage,
      expectStatus: 200,
      what: `the gateway check paced (open loop) at ${load$} of the saturated rate measured just before; latency from each request’s due time`,
      measure: async (d) => load({ ...checkJob(Math.min(d, PACED_SECONDS)), label: `${idPrefix}.check@paced`, rate: pacedRate('check') }, 200),
    };
    cases.refreshPaced = {
      id: `${idPrefix}.refresh@paced`,
      label: `POST token (refresh_token) at ${load$} load`,
      paced: true,
      server,
      storage,
      expectStatus: 200,
      what: `the rotating refresh paced (open loop) at ${load$} of the saturated rate measured just before; latency from each request’s due time`,
      measure: async (d) => load({ ...(await refreshJob(Math.min(d, PACED_SECONDS), 3 * c)), label: `${idPrefix}.refresh@paced`, rate: pacedRate('refresh') }, 200),
    };
    cases.me = {
      id: `${idPrefix}.me`,
      label: 'GET /v2/me',
      server,
      storage,
      expectStatus: 200,
      ...(opts.references ? { reference: 'bare.check' } : {}),
      what: 'the profile of the token’s user (token lookup + user row)',
      measure: (d) => load({ label: `${idPrefix}.me`, url: url('/v2/me'), method: 'GET', headers: { authorization: `Bearer ${accessToken}` }, duration: d }, 200),
    };
  }
  if (ours && cases.check) cases.check.reference = opts.references ? 'bare.check' : undefined;
  if (!opts.references) for (const def of Object.values(cases)) delete def.reference;
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Servers

async function startOurs(storage: Storage, opts: Options, nodeArgs: string[]): Promise<Subject> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // The default log level (info: a line per request, as deployed), written to a pipe the runner
  // drains, as under systemd or Docker.
  const env: Record<string, string> = { PORT: String(port), HOST: '127.0.0.1', APP_URL: base };
  let databaseUrl: string | undefined;
  let dataDir = '';
  if (storage === 'pg') {
    const database = await createBenchDatabase(opts.pgUrl);
    await prepareRedis(opts.redisUrl);
    databaseUrl = database.url;
    // Production mode, as deployed: cached templates, no development defaults.
    Object.assign(env, { NODE_ENV: 'production', DATABASE_URL: database.url, REDIS_URL: opts.redisUrl, COOKIE_KEYS: randomBytes(32).toString('hex') });
    console.log(`  database ${database.name}, Redis ${opts.redisUrl} (flushed)`);
  } else {
    // The zero-configuration default (`npm start`): embedded PGlite, artifacts in it, development mode.
    dataDir = pgliteDir();
    env.DATA_DIR = dataDir;
    console.log(`  embedded PGlite in ${dataDir}`);
  }
  const seeded = await seed(databaseUrl, dataDir, Math.max(opts.connections, 8));
  const server = await startServer({ name: `our server (${storage})`, script: 'src/main.ts', env: { ...env, ...opts.serverEnv }, nodeArgs, probe: true });
  const target: Target = {
    kind: 'ours',
    base,
    tokenPath: '/v2/auth/oauth2/token',
    bearerPath: '/v2/auth/check',
    clientId: seeded.clientId,
    clientSecret: seeded.clientSecret,
    scope: OUR_SCOPES[0]!,
    users: seeded.users,
  };
  const ready = await fetch(`${base}/ready`);
  if (ready.status !== 200) throw new Error(`our server is not ready: ${ready.status} ${await ready.text()}`);
  const accessToken = await firstAccessToken(target);
  await expectStatus(`${base}/v2/auth/check`, { authorization: `Bearer ${accessToken}`, 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/me' }, 200);
  await expectStatus(`${base}/v2/me`, { authorization: `Bearer ${accessToken}` }, 200);
  return { target, server, accessToken, storage: storage === 'pg' ? 'PostgreSQL + Redis' : 'PGlite', idPrefix: storage };
}

async function startBare(): Promise<Subject> {
  const port = await freePort();
  const clientSecret = randomBytes(32).toString('base64url');
  const server = await startServer({
    name: 'bare oidc-provider',
    script: 'bench/refs/bare-provider.ts',
    env: { PORT: String(port), NODE_ENV: 'production', BARE_CLIENT_ID: 'bench-client', BARE_CLIENT_SECRET: clientSecret, BARE_REDIRECT_URI: REDIRECT_URI },
  });
  const target: Target = {
    kind: 'bare',
    base: server.url,
    tokenPath: '/token',
    bearerPath: '/me',
    clientId: 'bench-client',
    clientSecret,
    scope: 'openid',
    users: Array.from({ length: 32 }, (_, i) => ({ email: `bench-${i}`, password: 'any' })),
  };
  const accessToken = await firstAccessToken(target);
  await expectStatus(`${server.url}/me`, { authorization: `Bearer ${accessToken}` }, 200);
  return { target, server, accessToken, storage: 'in-memory', idPrefix: 'bare' };
}

async function firstAccessToken(target: Target): Promise<string> {
  const [code] = await mintCodes(target, 1, 1);
  return (await exchange(target, code!)).access_token;
}

async function expectStatus(url: string, headers: Record<string, string>, status: number): Promise<void> {
  const res = await fetch(url, { headers });
  if (res.status !== status) throw new Error(`GET ${url}: expected ${status}, got ${res.status} ${(await res.text()).slice(0, 300)}`);
}

// ---------------------------------------------------------------------------------------------
// Rounds: every case once per round, each of ours right next to its reference (the order of the
// pair alternates between rounds), so that drift of the machine hits both alike.

type Step = CaseDef | [CaseDef, CaseDef];

async function runRounds(
  label: string,
  steps: Step[],
  reps: number,
  timed: number,
  opts: Options,
  results: Map<string, CaseResult>,
  onWarm?: () => void,
): Promise<void> {
  for (let round = 0; round <= reps; round++) {
    const warm = round === 0;
    const duration = warm ? opts.warmup : timed;
    console.log(`\n${label}: ${warm ? `warm-up (${duration} s per case)` : `repetition ${round}/${reps} (${duration} s per case)`}`);
    for (const step of steps) {
      const pair = Array.isArray(step) ? (round % 2 === 0 ? [step[1], step[0]] : step) : [step];
      for (const def of pair) {
        const result = results.get(def.id)!;
        if (result.error || stopping()) continue;
        if (!warm) await waitQuiet(opts);
        const t0 = performance.now();
        try {
          const foreign = foreignCpu(ownPids);
          const sample = await def.measure(duration, warm);
          const foreignCpuPct = foreign();
          if (foreignCpuPct !== undefined) sample.foreignCpuPct = foreignCpuPct;
          if (!warm) result.samples.push(sample);
          const prep = (performance.now() - t0) / 1000 - sample.durationSec;
          console.log(
            `  ${def.id.padEnd(16)} ${sample.rps.toFixed(0).padStart(7)} /s  p50 ${sample.p50.toFixed(2).padStart(7)} ms  p99 ${sample.p99.toFixed(2).padStart(7)} ms  ` +
              `cpu ${fmtCpu(sample.serverCpuPct)}/${fmtCpu(sample.clientCpuPct)}/other ${fmtCpu(sample.foreignCpuPct)}  ` +
              `${sample.sqlPerReq !== undefined ? `sql ${sample.sqlPerReq.toFixed(1)} redis ${sample.redisCmdsPerReq!.toFixed(1)} (${sample.redisTripsPerReq!.toFixed(1)} trips)/req  ` : ''}` +
              `unexpected ${sample.unexpected}${sample.status429 ? ` 429 ${sample.status429}` : ''}${sample.errors ? ` errors ${sample.errors}` : ''}` +
              `${prep > 1 ? `  (prep ${prep.toFixed(1)} s)` : ''}${warm ? '  [warm-up]' : ''}${sample.note ? `  note: ${sample.note}` : ''}`,
          );
        } catch (err) {
          result.error = (err as Error).message;
          console.error(`  ${def.id}: FAILED — ${(err as Error).stack ?? err}`);
        }
      }
    }
    if (warm) onWarm?.();
  }
}

// A shared machine: before each timed sample, wait (a little, within a budget for the whole run)
// until processes outside the benchmark leave the cores alone.
let quietBudgetMs = 0;
async function waitQuiet(opts: Options): Promise<void> {
  const limit = opts.maxForeignCpu;
  if (limit <= 0) return;
  const started = performance.now();
  for (let i = 0; quietBudgetMs > 0 && i < 20; i++) {
    const probe = foreignCpu(ownPids);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const busy = probe();
    if (busy === undefined || busy <= limit) break;
    if (i === 0) process.stdout.write(`  (waiting for other processes: ${busy.toFixed(0)}% of a core busy)`);
    quietBudgetMs -= 500;
  }
  const waited = performance.now() - started;
  if (waited > 1000) console.log(` waited ${(waited / 1000).toFixed(1)} s`);
}

function fmtCpu(pct: number | undefined): string {
  return pct === undefined ? '–' : `${pct.toFixed(0)}%`;
}

function record(results: Map<string, CaseResult>, def: CaseDef): void {
  const { measure: _measure, ...info } = def;
  results.set(def.id, { ...info, samples: [] });
}

function memoryPoint(points: MemoryPoint[], server: ServerProcess, name: string, when: string): void {
  const m = server.memory();
  if (m) points.push({ server: name, when, ...m });
}

// ---------------------------------------------------------------------------------------------

function gitInfo(): { commit: string; dirty: string[] } {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain'], { cwd: ROOT })
      .toString()
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(3));
    return { commit, dirty };
  } catch {
    return { commit: 'unknown', dirty: [] };
  }
}

function cpuModel(): string {
  return os.cpus()[0]?.model.trim() ?? 'unknown';
}

async function main(): Promise<number> {
  const opts = parseOptions();
  pinSelf();
  const storagePinned = opts.pinStorage ? pinStorageServices() : 0;
  const pinning = HAS_TASKSET
    ? `servers on core ${SERVER_CORE}, load generator and runner on core ${CLIENT_CORE} (taskset); ` +
      (storagePinned ? `PostgreSQL and Redis moved to core ${CLIENT_CORE} for the run (${storagePinned} processes)` : 'PostgreSQL and Redis not pinned')
    : 'not pinned (taskset missing)';
  const startedAt = new Date();
  const t0 = performance.now();
  const git = gitInfo();
  console.log(
    `bench: ${opts.quick ? 'QUICK smoke run' : opts.profile ? `PROFILE of ${opts.profile.storage}:${opts.profile.kind}` : 'full run'} — ` +
      `${opts.reps} reps (PGlite ${opts.pgliteReps}) × ${opts.duration} s, warm-up ${opts.warmup} s, ${opts.connections} connections; ` +
      `${pinning}; ` +
      `our server env: ${Object.entries(opts.serverEnv).map(([k, v]) => `${k}=${v}`).join(' ')}`,
  );
  if (CORES < 2) console.warn('WARNING: fewer than 2 cores: the load generator shares the core with the servers');
  quietBudgetMs = opts.quietBudgetSec * 1000;
  const idleCheck = await machineBusyPct(1500, CORES);
  const loadBefore = os.loadavg();
  if (idleCheck !== undefined && idleCheck > 15) {
    console.warn(`WARNING: the machine is already busy (${idleCheck.toFixed(0)}% of a core used by other processes): results will be noisy`);
  }

  const results = new Map<string, CaseResult>();
  const memory: MemoryPoint[] = [];
  const profileDir = path.join(BENCH, 'results', 'profiles', startedAt.toISOString().replace(/[:.]/g, '-'));
  const ourNodeArgs = [...opts.serverNodeArgs, ...(opts.profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [])];
  const gen = await startLoadGenerator();
  const k = opts.kinds;

  // References: started once, for the whole run.
  let koa: ServerProcess | undefined;
  let koaCase: CaseDef | undefined;
  let koaPaced: CaseDef | undefined;
  if (opts.references && k.has('hello')) {
    koa = await startServer({ name: 'koa hello', script: 'bench/refs/koa-hello.ts', env: { PORT: String(await freePort()), NODE_ENV: 'production' } });
    const koaUrl = koa.url;
    koaCase = {
      id: 'koa.hello',
      label: 'GET /hello (Koa hello world)',
      server: 'koa',
      storage: '–',
      expectStatus: 200,
      what: 'the floor: a bare Koa 3 JSON route',
      measure: async (d) =>
        sampleOf(await gen.run<LoadResult>({ label: 'koa.hello', url: `${koaUrl}/hello`, method: 'GET', headers: {}, duration: d, connections: opts.connections, serverPid: koa!.pid }), 200),
    };
    record(results, koaCase);
    // The floor of the open-loop latency measurement itself: Koa hello at the rate the paced
    // gateway check just used (client, kernel and scheduling jitter, no application work).
    koaPaced = {
      id: 'koa.hello@paced',
      label: 'GET /hello (Koa) at the paced check’s rate',
      server: 'koa',
      storage: '–',
      expectStatus: 200,
      paced: true,
      what: 'the floor of the paced latency measurement: Koa hello, open loop, at the rate of the paced gateway check just before',
      measure: async (d) => {
        const rate = lastPacedRate.get('pg.check') ?? lastPacedRate.get('pglite.check');
        if (!rate) throw new Error('the paced gateway check must run first');
        return sampleOf(
          await gen.run<LoadResult>({ label: 'koa.hello@paced', url: `${koaUrl}/hello`, method: 'GET', headers: {}, duration: Math.min(d, PACED_SECONDS), connections: opts.connections, serverPid: koa!.pid, rate }),
          200,
        );
      },
    };
  }
  let bare: Subject | undefined;
  const needBare = opts.references && [...k].some((kind) => kind !== 'hello');
  if (needBare) {
    console.log('starting the bare oidc-provider reference');
    bare = await startBare();
    memoryPoint(memory, bare.server, 'bare oidc-provider', 'after start');
  }
  const bareCases = bare ? oauthCases(bare, opts, gen) : {};

  const pair = (ours: CaseDef | undefined, ref: CaseDef | undefined): Step[] => (ours && ref ? [[ours, ref]] : ours ? [ours] : ref ? [ref] : []);
  const stepsFor = (ourCases: Partial<Record<CaseKey, CaseDef>>, withRefs: boolean, paced: boolean): Step[] => {
    const refOf = (kind: Kind) => (withRefs ? bareCases[kind] : undefined);
    const steps: Step[] = [];
    if (withRefs && koaCase) steps.push(koaCase);
    for (const kind of ['check', 'me', 'refresh', 'badauth', 'code', 'flow'] as const) {
      if (!k.has(kind)) continue;
      steps.push(...pair(ourCases[kind], kind === 'me' ? undefined : refOf(kind)));
      // The paced variant right after the pair: it needs the saturated rate just measured. Only
      // where the latency targets apply (PostgreSQL + Redis).
      if (paced && !opts.profile && kind === 'check' && ourCases.checkPaced) {
        steps.push(ourCases.checkPaced);
        if (withRefs && koaPaced) steps.push(koaPaced);
      }
      if (paced && !opts.profile && kind === 'refresh' && ourCases.refreshPaced) steps.push(ourCases.refreshPaced);
    }
    return steps;
  };
  const registerSteps = (steps: Step[]) => {
    for (const step of steps) for (const def of Array.isArray(step) ? step : [step]) if (!results.has(def.id)) record(results, def);
  };

  let failed = false;
  const profiles: string[] = [];
  for (const storage of ['pg', 'pglite'] as const) {
    if (!opts.storages.has(storage)) continue;
    console.log(`\nstarting our server on ${storage === 'pg' ? 'PostgreSQL + Redis' : 'the embedded PGlite'}`);
    const subject = await startOurs(storage, opts, ourNodeArgs);
    const name = `ours (${subject.storage})`;
    memoryPoint(memory, subject.server, name, 'after start and setup (before load)');
    // The references run alongside the first storage only; the second is compared with their medians.
    const withRefs = storage === 'pg' || !opts.storages.has('pg');
    const steps = stepsFor(oauthCases(subject, opts, gen), withRefs, storage === 'pg');
    registerSteps(steps);
    const [reps, timed] = storage === 'pg' ? [opts.reps, opts.duration] : [opts.pgliteReps, opts.pgliteDuration];
    await runRounds(subject.storage, steps, reps, timed, opts, results, () => {
      memoryPoint(memory, subject.server, name, 'after warm-up');
    });
    memoryPoint(memory, subject.server, name, 'after all repetitions');
    if (withRefs && bare) memoryPoint(memory, bare.server, 'bare oidc-provider', `after the ${storage} rounds`);
    const code = await subject.server.stop();
    fs.mkdirSync(path.join(BENCH, 'results'), { recursive: true });
    fs.writeFileSync(path.join(BENCH, 'results', `server-${storage}.log`), subject.server.output());
    if (code !== 0 && code !== null) console.warn(`our server (${storage}) exited with ${code}:\n${subject.server.output().slice(-2000)}`);
    if (opts.profile) {
      // One file per thread: the main thread's (thread id 0) is the server; the other is tsx's loader.
      const files = fs.existsSync(profileDir) ? fs.readdirSync(profileDir).filter((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f)) : [];
      if (!files.length) console.error(`no CPU profile of the main thread in ${profileDir} (did the server exit cleanly?)`);
      const windows = [...results.values()].filter((r) => r.id.startsWith(`${storage}.`)).flatMap((r) => r.samples.map((s) => s.windowUs).filter((w): w is [number, number] => !!w));
      for (const f of files) {
        const md = profileMarkdown(
          summarizeProfile(path.join(profileDir, f), 30, windows),
          `CPU profile of our server (${subject.storage}), case ${opts.profile.kind}, timed repetitions only: ${path.relative(ROOT, path.join(profileDir, f))}`,
        );
        // What the server asked of its storage per request, statement by statement.
        const profiled = `${storage}.${opts.profile.kind}`;
        const last = [...results.values()].find((r) => r.id === profiled)?.samples.at(-1)?.storageBreakdown;
        const breakdown = last
          ? [
              '',
              '**Storage calls per request** (counted by bench/lib/probe.ts)',
              '',
              '| calls / req | SQL statement or Redis command |',
              '|---:|---|',
              ...Object.entries(last.sql).map(([k, v]) => `| ${v.toFixed(2)} | SQL \`${k.replace(/\|/g, '\\|')}\` |`),
              ...Object.entries(last.redis).map(([k, v]) => `| ${v.toFixed(2)} | Redis ${k} |`),
            ].join('\n')
          : '';
        profiles.push(md + breakdown);
        console.log(`\n${md}${breakdown}`);
      }
    }
  }
  await koa?.stop();
  await bare?.server.stop();
  await gen.stop();

  // Report
  const ordered = [...results.values()];
  summarize(ordered, 'koa.hello');
  for (const r of ordered) if (r.error) failed = true;
  const targets = opts.storages.has('pg') && opts.references ? evaluateTargets(ordered, 'pg', opts.connections) : [];
  const elapsed = (performance.now() - t0) / 1000;

  const meta = {
    date: startedAt.toISOString(),
    commit: git.commit,
    uncommittedFiles: git.dirty,
    node: process.version,
    cpu: `${cpuModel()}, ${CORES} cores`,
    pinning,
    options: { ...opts, kinds: [...opts.kinds], storages: [...opts.storages] },
    elapsedSec: Math.round(elapsed),
    busyBeforeStartPct: idleCheck,
    loadavgBefore: loadBefore,
    loadavgAfter: os.loadavg(),
  };
  const headline =
    `${meta.date} · commit ${meta.commit}${git.dirty.length ? ` (+${git.dirty.length} uncommitted files)` : ''} · Node ${meta.node} · ${meta.cpu} · ${meta.pinning} · ` +
    `${opts.connections} connections, ${opts.reps} × ${opts.duration} s per case (PGlite ${opts.pgliteReps} × ${opts.pgliteDuration} s), ${opts.warmup} s warm-up · our server on PostgreSQL + Redis as deployed (\`NODE_ENV=production\`, log level info: a line per request) plus ${Object.entries(opts.serverEnv).map(([kk, v]) => `\`${kk}=${v}\``).join(' ')} · run took ${Math.round(elapsed)} s · machine busy before start: ${idleCheck === undefined ? '?' : `${idleCheck.toFixed(0)}% of a core`}${opts.quick ? ' · **QUICK smoke run (1 repetition): indicative only**' : ''}`;
  const doc: ResultsDoc = { meta: { ...meta, headline }, results: ordered, targets, memory, profiles };
  const md = renderMarkdown(doc);

  const stamp = meta.date.replace(/[:.]/g, '-');
  const dir = path.join(BENCH, 'results');
  fs.mkdirSync(dir, { recursive: true });
  const json = JSON.stringify(doc, null, 2);
  const kind = opts.profile ? 'profile' : opts.quick ? 'quick' : 'full';
  fs.writeFileSync(path.join(dir, `bench-${stamp}-${kind}.json`), json);
  fs.writeFileSync(path.join(dir, `bench-${stamp}-${kind}.md`), md);
  fs.writeFileSync(path.join(dir, 'latest.json'), json);
  fs.writeFileSync(path.join(dir, 'latest.md'), md);
  const complete = opts.kinds.size === KINDS.length && opts.storages.size === 2 && !opts.profile;
  if ((!opts.quick && complete) || opts.baseline) {
    fs.writeFileSync(
      path.join(BENCH, 'BASELINE.md'),
      md.replace('# Benchmark results', '# Benchmark baseline\n\nThe latest full `npm run bench` (written by bench/run.ts; regenerate rather than edit).'),
    );
  }

  console.log(`\n${md}`);
  console.log(`\nwritten: bench/results/bench-${stamp}-${kind}.{json,md}, bench/results/latest.{json,md}${(!opts.quick && complete) || opts.baseline ? ', bench/BASELINE.md' : ''}`);
  return failed ? 1 : 0;
}

let exitCode = 1;
try {
  exitCode = await main();
} catch (err) {
  console.error(`bench failed: ${(err as Error).stack ?? err}`);
} finally {
  await cleanupAll();
}
process.exit(exitCode);
