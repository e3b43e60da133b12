// Processes of a run: the servers under test pinned to core 0, the load generators and this runner
// on core 1 (with the local PostgreSQL and Redis moved there for the run), and a cleanup registry
// that runs once on success, failure or Ctrl-C.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BENCH = path.join(ROOT, 'bench');
/**
 * The team's fixed reference servers (docs/benchmark.md says what they serve). They are not part
 * of this repository: BENCH_ANCHORS_DIR names their folder; by default the team's checkout keeps
 * them beside this repository.
 */
export const ANCHORS = path.resolve(ROOT, process.env.BENCH_ANCHORS_DIR || '../shared/bench-anchors');

const cleanups: { name: string; run: () => unknown }[] = [];
export const onCleanup = (name: string, run: () => unknown) => void cleanups.push({ name, run });
/** Last registered, first run; each once. */
export async function cleanupAll(): Promise<void> {
  for (let c = cleanups.pop(); c; c = cleanups.pop()) {
    await Promise.resolve()
      .then(c.run)
      .catch((err: Error) => console.error(`cleanup "${c!.name}" failed: ${err.message}`));
  }
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: cleaning up…`);
    void cleanupAll().finally(() => process.exit(130));
  });
}

export const CORES = os.availableParallelism();
export const HAS_TASKSET = spawnSync('taskset', ['-V']).status === 0;
export const SERVER_CORE = 0;
export const LOAD_CORE = CORES > 1 ? 1 : 0;
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `command args` pinned to `core` when taskset exists. */
export function pinned(core: number, command: string, args: string[]): [string, string[]] {
  return HAS_TASKSET ? ['taskset', ['-c', String(core), command, ...args]] : [command, args];
}

export const pinSelf = () => HAS_TASKSET && spawnSync('taskset', ['-a', '-cp', String(LOAD_CORE), String(process.pid)]);

/** Pids of every local redis-server and postgres process. */
export const storagePids = () =>
  fs.readdirSync('/proc').filter((pid) => /^\d+$/.test(pid) && /^(redis-server|postgres$)/.test(read(`/proc/${pid}/comm`).trim())).map(Number);

/**
 * In production PostgreSQL and Redis have hosts of their own; here they would take turns with the
 * server under test on its core. Moves them (all threads; new backends inherit it from the
 * postmaster) to the load core for the run and gives back their affinity at cleanup.
 */
export function pinStorage(): number {
  if (!HAS_TASKSET || CORES < 2) return 0;
  const before = new Map<number, string>();
  for (const pid of storagePids()) {
    const list = /affinity list: (\S+)/.exec(spawnSync('taskset', ['-cp', String(pid)]).stdout?.toString() ?? '')?.[1];
    if (list && spawnSync('taskset', ['-a', '-cp', String(LOAD_CORE), String(pid)]).status === 0) before.set(pid, list);
  }
  const fallback = [...before.values()].find((l) => l !== String(LOAD_CORE)) ?? `0-${CORES - 1}`;
  if (before.size) onCleanup('restore PostgreSQL/Redis affinity', () => {
    for (const pid of storagePids()) spawnSync('taskset', ['-a', '-cp', before.get(pid) ?? fallback, String(pid)]);
  });
  return before.size;
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const read = (file: string) => {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return ''; // gone
  }
};
/** CPU seconds of a process (all threads; with `children`, also its reaped children's), from /proc. */
export function cpuSeconds(pid: number | 'self', children = false): number {
  const stat = read(`/proc/${pid}/stat`);
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').slice(11, children ? 15 : 13);
  return f.reduce((a, v) => a + Number(v), 0) / 100; // utime stime [cutime cstime], in USER_HZ (100) ticks
}
export const rssMiB = (pid: number) => Number(/^VmRSS:\s+(\d+)/m.exec(read(`/proc/${pid}/status`))?.[1]) / 1024;

/** Pids of the servers running now (for the foreign-CPU measure). */
export const serverPids = new Set<number>();

/**
 * Only `target` runs at normal priority on the server core, every other server at SCHED_IDLE: an
 * idle server's own housekeeping (the anchor's collection of a heap of hundreds of MB took 1.4 s
 * of that core during one of our runs) gets only the time the measured server leaves, and is done
 * by the time its own runs come.
 */
export function favour(target: Server): void {
  for (const pid of serverPids) spawnSync('chrt', [pid === target.pid ? '--other' : '--idle', '--all-tasks', '--pid', '0', String(pid)]);
}

export interface Server {
  name: string;
  url: string;
  pid: number;
  stop(): Promise<void>;
}

// Preloaded into every server: when the runner dies without cleaning up (SIGKILL), the IPC channel
// closes and the server stops itself. Nothing else changes.
const WATCHDOG = `data:text/javascript,if(process.channel){process.channel.unref();process.once('disconnect',()=>process.kill(process.pid,'SIGTERM'))}`;

/**
 * Starts `node ARGS` on the server core, its output going straight to `log` (no pipe through this
 * runner, which shares the load core), and waits for `ready` there (group 1: the port).
 */
export async function startServer(name: string, args: string[], opts: { cwd: string; env: Record<string, string>; ready: RegExp; log: string }): Promise<Server> {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...opts.env };
  const [cmd, argv] = pinned(SERVER_CORE, process.execPath, ['--import', WATCHDOG, ...args]);
  const fd = fs.openSync(opts.log, 'w');
  const child = spawn(cmd, argv, { cwd: opts.cwd, env, stdio: ['ignore', fd, fd, 'ipc'] });
  fs.closeSync(fd);
  serverPids.add(child.pid!);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve(void serverPids.delete(child.pid!))));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  onCleanup(`stop ${name}`, stop);
  for (const t0 = Date.now(); Date.now() - t0 < 60_000; await sleep(100)) {
    const out = fs.readFileSync(opts.log, 'utf8');
    const port = opts.ready.exec(out)?.[1];
    if (port) return { name, url: `http://127.0.0.1:${port}`, pid: child.pid!, stop };
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} before it was ready:\n${out.slice(-3000)}`);
  }
  throw new Error(`${name} not ready after 60 s (see ${opts.log})`);
}

/** Our server as deployed: `node --import tsx src/main.ts`, production mode, log level info. */
export function startOurs(name: string, env: Record<string, string>): Promise<Server> {
  // BENCH_NODE_FLAGS: extra node flags for our server only (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
  const flags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  return startServer(name, [...flags, '--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env, ready: /Listening on http:\/\/\S+:(\d+)/, log: logFile(name) });
}

export function logFile(name: string): string {
  fs.mkdirSync(path.join(BENCH, 'results'), { recursive: true });
  return path.join(BENCH, 'results', `${name.replace(/\W+/g, '-')}.log`);
}

/** An anchor server (see ANCHORS), its dependencies installed there once with `npm ci` if needed. */
/** The DPoP anchor (bench/anchors/anchor-dpop.mjs: this repository's oidc-provider, its userinfo as the DPoP resource). */
export async function startDpopAnchor(): Promise<Server> {
  const port = String(await freePort());
  return startServer('anchor dpop', [path.join(ROOT, 'bench/anchors/anchor-dpop.mjs'), port], { cwd: ROOT, env: { NODE_ENV: 'production' }, ready: /READY (\d+)/, log: logFile('anchor-dpop') });
}

export async function startAnchor(kind: 'oidc' | 'hello'): Promise<Server> {
  if (!fs.existsSync(path.join(ANCHORS, 'anchor-oidc.mjs'))) {
    throw new Error(`no bench anchors in ${ANCHORS}: set BENCH_ANCHORS_DIR to the folder with anchor-oidc.mjs and anchor-hello.mjs (see docs/benchmark.md)`);
  }
  if (!fs.existsSync(path.join(ANCHORS, 'node_modules'))) {
    console.log(`installing the anchors' dependencies (npm ci in ${ANCHORS})`);
    const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: ANCHORS, stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`npm ci in ${ANCHORS} failed`);
  }
  const port = String(await freePort());
  const args = kind === 'oidc' ? ['anchor-oidc.mjs', port] : ['anchor-hello.mjs', 'koa', port];
  // As our server runs: production mode.
  return startServer(`anchor ${kind}`, args, { cwd: ANCHORS, env: { NODE_ENV: 'production' }, ready: /READY (\d+)/, log: logFile(`anchor-${kind}`) });
}
