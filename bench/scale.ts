// `npm run bench:scale`: throughput of GET /v2/auth/check with 1 and then 2 instances of the
// server sharing PostgreSQL and Redis, on this machine. Each instance is pinned to its own core
// when taskset exists; the load generator (autocannon, its own process) is not pinned, so with 2
// instances on a 2-core machine it competes with them: the figure is a floor, not a ceiling.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import knexFactory from 'knex';
import { Redis } from 'ioredis';
import { Browser } from '../test/support/browser.ts';
import { signInAndConsent, exchange, type Target } from './lib/flows.ts';
import { ROOT, freePort } from './lib/procs.ts';
import { connectDb } from '../src/storage/db.ts';
import { clientsCreate, clientsSetStatus, usersCreate } from '../src/admin/commands.ts';
import { clientArtifacts } from '../src/storage/client-artifacts.ts';

const PG = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS = process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379/8';
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const CONNECTIONS = 32;
const HAS_TASKSET = spawnSync('taskset', ['-V']).status === 0;

async function startServer(env: Record<string, string>, core: number): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const args = ['--import', 'tsx', 'src/main.ts'];
  const child = HAS_TASKSET
    ? spawn('taskset', ['-c', String(core), process.execPath, ...args], { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port) } })
    : spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port) } });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('Listening on')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${out}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

/** One autocannon process per target URL, all at once; returns the summed requests per second. */
async function load(urls: string[], token: string): Promise<{ rps: number; p99: number; non2xx: number }> {
  const runs = urls.map(
    (url) =>
      new Promise<{ requests: { average: number }; latency: { p99: number }; non2xx: number }>((resolve, reject) => {
        const child = spawn(
          process.execPath,
          [
            path.join(ROOT, 'node_modules/autocannon/autocannon.js'),
            '-j', '-c', String(Math.round(CONNECTIONS / urls.length)), '-d', String(SECONDS),
            '-H', `Authorization=Bearer ${token}`, '-H', 'X-Forwarded-Method=GET', '-H', 'X-Forwarded-Uri=/v2/me',
            `${url}/v2/auth/check`,
          ],
          { cwd: ROOT },
        );
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`autocannon exited ${code}`))));
      }),
  );
  const results = await Promise.all(runs);
  return {
    rps: results.reduce((sum, r) => sum + r.requests.average, 0),
    p99: Math.max(...results.map((r) => r.latency.p99)),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
  };
}

async function main() {
  const name = `bench_scale_${randomBytes(4).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: PG, pool: { min: 0, max: 1 } });
  await admin.raw(`create database ${name}`);
  const dbUrl = Object.assign(new URL(PG), { pathname: `/${name}` }).toString();
  const redis = new Redis(REDIS);
  await redis.flushdb();
  const env = { DATABASE_URL: dbUrl, REDIS_URL: REDIS, RATE_LIMITS: 'off', LOG_LEVEL: 'warn', NODE_ENV: 'production', COOKIE_KEYS: randomBytes(32).toString('hex') };
  const servers: ChildProcess[] = [];
  try {
    const first = await startServer(env, 0);
    servers.push(first.child);
    const db = connectDb({ databaseUrl: dbUrl, dataDir: '' });
    const user = { email: 'scale@example.com', password: 'scale-password-1' };
    await usersCreate(db, user);
    const ops = { db, artifacts: clientArtifacts(db), by: { actor: 'bench' } };
    const client = await clientsCreate(ops, { name: 'Scale', redirectUri: ['https://app.example.com/callback'], scope: ['PROFILE_READ'] });
    await clientsSetStatus(ops, client.client_id, 'approved');
    await db.destroy();
    const target: Target = { kind: 'ours', base: first.url, tokenPath: '/v2/auth/oauth2/token', bearerPath: '/v2/auth/check', clientId: client.client_id, clientSecret: client.client_secret!, scope: 'PROFILE_READ', users: [user] };
    const { access_token: token } = await exchange(target, await signInAndConsent(target, new Browser(), user));

    await load([first.url], token); // warm-up
    const one = await load([first.url], token);
    const second = await startServer(env, 1);
    servers.push(second.child);
    await load([second.url], token); // warm-up
    const two = await load([first.url, second.url], token);
    console.log(`GET /v2/auth/check, ${CONNECTIONS} connections, ${SECONDS} s, PostgreSQL + Redis${HAS_TASKSET ? ', instances pinned to cores 0 and 1' : ''}`);
    console.log('| instances | req/s | p99 ms | non-2xx |\n|---:|---:|---:|---:|');
    console.log(`| 1 | ${Math.round(one.rps)} | ${one.p99} | ${one.non2xx} |`);
    console.log(`| 2 | ${Math.round(two.rps)} | ${two.p99} | ${two.non2xx} |`);
    console.log(`scaling 1 → 2 instances: ${(two.rps / one.rps).toFixed(2)}×`);
  } finally {
    for (const child of servers) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await redis.flushdb();
    redis.disconnect();
    await admin.raw(`drop database if exists ${name} with (force)`);
    await admin.destroy();
  }
}

await main();
