// `--scale`: does a request cost more when more is stored? Two instances of our server, one with
// little stored and one with a lot, loaded in turn on the same core (never both at once), so that
// the machine's drift hits both alike: 1,000 vs 1,000,000 live access tokens in Redis (the check),
// and 10 vs 10,000 registered clients in PostgreSQL (the rotating refresh, load spread over all).
import { Redis } from 'ioredis';
import { freePort, onCleanup, startOurs } from './procs.ts';
import { writeFeed } from './load.ts';
import { createDatabase, fillAccessTokens, flushRedis, ourEnv, Seeder, type BenchClient } from './seed.ts';
import { PgMeter, RedisMeter } from './stores.ts';
import { runRounds, tokenBudget, type RoundOptions, type Step } from './rounds.ts';
import { fmt, summarize, type CaseResult, type Target } from './report.ts';

export interface ScaleOptions extends RoundOptions {
  pgUrl: string;
  redisUrl: string;
  connections: number;
  tmp: string;
}

export interface ScaleResult {
  results: CaseResult[];
  targets: Target[];
  notes: string[];
}

const TOKENS = 1_000_000;
const CLIENTS = 10_000;
const en = (n: number) => n.toLocaleString('en-US');

/** The reserved Redis logical database and the next one, both flushed now and at cleanup. */
async function redisDbs(url: string): Promise<{ url: string; db: number }[]> {
  const dbs = [0, 1].map((offset) => {
    const u = new URL(url);
    const db = Number(u.pathname.slice(1) || 0) + offset;
    u.pathname = `/${db}`;
    return { url: u.toString(), db };
  });
  for (const { url: u } of dbs) await flushRedis(u);
  return dbs;
}

async function ourStep(id: string, label: string, env: Record<string, string>, pg: PgMeter, db: number, job: (url: string) => Step['job'], base?: string): Promise<Step> {
  const target = await startOurs(`ours ${id.slice(6)}`, env);
  const redis = new Redis(env.REDIS_URL!);
  onCleanup(`close ${id}'s Redis counter`, () => redis.disconnect());
  return { id, label, target, meters: { redis: new RedisMeter(redis, db), pg }, job: job(target.url), ...(base ? { anchor: base } : {}) };
}

/**
 * One token request per client, from this runner, 32 at a time: a refresh with an unknown token,
 * which authenticates the client and is answered invalid_grant. Afterwards the instance has
 * served every client once, as a running one has; the timed runs then measure its steady state,
 * and this pass the first use of each client (a database read and a client build). Its rate.
 */
async function serveEveryClientOnce(url: string, clients: BenchClient[]): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    for (let i = next++; i < clients.length; i = next++) {
      const { id, secret } = clients[i]!;
      const res = await fetch(`${url}/v2/auth/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'unknown', client_id: id, client_secret: secret }) });
      const { error } = (await res.json()) as { error?: string };
      if (error !== 'invalid_grant') throw new Error(`client ${id}: expected invalid_grant, got ${res.status} ${error}`);
    }
  }));
  return clients.length / ((performance.now() - t0) / 1000);
}

async function finish(steps: Step[]): Promise<void> {
  for (const s of steps) await s.target.stop();
  for (const pg of new Set(steps.map((s) => s.meters!.pg))) await pg.close();
}

export async function runScale(o: ScaleOptions): Promise<ScaleResult> {
  const results = new Map<string, CaseResult>();
  const [r0, r1] = (await redisDbs(o.redisUrl)) as [{ url: string; db: number }, { url: string; db: number }];
  const form = { 'content-type': 'application/x-www-form-urlencoded' };

  // 10 vs 10,000 registered clients, a database each: every refresh presents the next client's credentials.
  const clientSteps: Step[] = [];
  const firstUse: string[] = [];
  const budget = tokenBudget();
  for (const count of [10, CLIENTS]) {
    console.log(`\nscale: an instance with ${en(count)} registered clients`);
    const db = await createDatabase(o.pgUrl);
    const env = ourEnv(db.url, r0.url, await freePort());
    const seeder = await Seeder.open(env);
    const users = await seeder.users(10);
    const t0 = performance.now();
    const clients = await seeder.clients(count, count <= 10 ? 1_000_000 : undefined);
    console.log(`  ${en(count)} clients created and approved in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    const id = `scale.clients.${count}`;
    const job = (url: string): Step['job'] => async (seconds) => {
      const tokens = await seeder.mint('refresh', clients, users, budget.count(id, seconds));
      const feed = writeFeed(o.tmp, id, tokens.map((t) => `\tgrant_type=refresh_token&refresh_token=${t.token}&client_id=${t.client.id}&client_secret=${t.client.secret}`));
      return { url: `${url}/v2/auth/oauth2/token`, method: 'POST', headers: form, feed, once: true, seconds, connections: o.connections };
    };
    const step = await ourStep(id, `POST token (refresh, rotating), ${en(count)} clients`, env, new PgMeter(o.pgUrl, db.name), r0.db, job, count > 10 ? 'scale.clients.10' : undefined);
    const rate = await serveEveryClientOnce(step.target.url, clients);
    firstUse.push(`${en(count)} clients: ${en(Math.round(rate))} req/s`);
    console.log(`  every client served once: ${rate.toFixed(0)} req/s`);
    clientSteps.push(step);
  }
  await runRounds('scale: registered clients', clientSteps, o, results, budget.onRate);
  await finish(clientSteps);

  // 1,000 vs 1,000,000 live access tokens, in two Redis logical databases (one PostgreSQL database).
  console.log(`\nscale: an instance with 1,000 and one with ${en(TOKENS)} access tokens in Redis`);
  const db = await createDatabase(o.pgUrl);
  const [env0, env1] = [ourEnv(db.url, r0.url, await freePort()), ourEnv(db.url, r1.url, await freePort())];
  const small = await Seeder.open(env0);
  const users = await small.users(10);
  const [client] = (await small.clients(1, 1_000_000)) as [BenchClient];
  const tokens0 = (await small.mint('access', [client], users, 1000)).map((t) => t.token);
  const minted = (await (await Seeder.open(env1)).mint('access', [client], users, 1000)).map((t) => t.token);
  const t0 = performance.now();
  const fill = await fillAccessTokens(r1.url, minted[0]!, TOKENS - minted.length);
  const perHundredK = (fill.bytes / fill.ids.length) * 100_000;
  console.log(`  ${en(fill.ids.length)} tokens written in ${((performance.now() - t0) / 1000).toFixed(0)} s; Redis used_memory +${(fill.bytes / 2 ** 20).toFixed(0)} MiB`);
  // The big instance looks up tokens from all over its million, not the same thousand.
  const tokens1 = Array.from({ length: 10_000 }, (_, i) => fill.ids[Math.floor((i * fill.ids.length) / 10_000)]!);
  const pg = new PgMeter(o.pgUrl, db.name);
  const tokenSteps: Step[] = [];
  for (const [count, env, r, tokens] of [[1000, env0, r0, tokens0], [TOKENS, env1, r1, tokens1]] as const) {
    const id = `scale.tokens.${count}`;
    const feed = writeFeed(o.tmp, id, tokens.map((t) => `Bearer ${t}\t`));
    const job = (url: string): Step['job'] => (seconds) => ({ url: `${url}/v2/auth/check`, method: 'GET', headers: { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/me' }, feed, seconds, connections: o.connections });
    tokenSteps.push(await ourStep(id, `GET /v2/auth/check, ${en(count)} access tokens in Redis`, env, pg, r.db, job, count > 1000 ? 'scale.tokens.1000' : undefined));
  }
  await runRounds('scale: stored access tokens', tokenSteps, o, results);
  await finish(tokenSteps);

  const ratio = (id: string) => summarize(results.get(id)!, results)?.ratio ?? NaN;
  const within = (v: number) => (Number.isFinite(v) ? v >= 0.9 : undefined);
  const [rt, rc] = [ratio(`scale.tokens.${TOKENS}`), ratio(`scale.clients.${CLIENTS}`)];
  return {
    results: [...results.values()],
    targets: [
      { target: 'check with 1,000,000 access tokens in Redis within 10% of 1,000 (≥ 0.90×)', measured: fmt.x(rt), met: within(rt) },
      { target: 'token endpoint with 10,000 registered clients within 10% of 10 (≥ 0.90×)', measured: fmt.x(rc), met: within(rc) },
      { target: 'Redis memory per 100,000 access tokens (reported)', measured: `${fmt.n(perHundredK / 2 ** 20)} MiB`, met: undefined },
    ],
    notes: [
      'Clients: the 10 have their budget raised (`clients set-rate-limit`: limits on, not hit); the 10,000 keep the default (a few requests each). Refresh tokens are minted for every client in turn; each request presents its own client’s credentials.',
      `Before the rounds, each instance served one token request per client (a refresh with an unknown token: the client authenticates, the answer is invalid_grant), from the bench runner, 32 at a time; so the runs measure an instance that has served its clients, as a running one has. That first use of every client (a database read and a client build each) ran at ${firstUse.join(', ')}.`,
      `Tokens: the 1,000,000 are 1,000 minted by our provider and ${en(fill.ids.length)} written by the project’s Redis adapter (\`RedisAdapter.upsert\`, pipelined) in the minted tokens’ format, each with its own grant id (no Grant record: the check reads none). The big instance’s feed is 10,000 of them spread over the million; the small one’s its 1,000. ` +
        `Memory: Redis used_memory growth while writing them: the token hash, its grant index set and its entry in the client’s index set. ` +
        `Both instances keep verified tokens in memory (the token cache, up to 50,000): after the warm-up each feed’s tokens are served from there, so what the million can cost shows in a token’s first lookup (one Redis read), not in the timed runs.`,
    ],
  };
}
