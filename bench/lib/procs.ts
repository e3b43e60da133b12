// Child processes of the benchmark: the servers under test (pinned to one core), the load
// generator (pinned to the other), and a cleanup registry that runs on success, failure and Ctrl-C.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BENCH = path.join(ROOT, 'bench');
const WATCHDOG = path.join(BENCH, 'lib/watchdog.ts');
const PROBE = path.join(BENCH, 'lib/probe.ts');

// ---------------------------------------------------------------------------------------------
// Cleanup: every resource registers its release; run in reverse order exactly once.

type Cleanup = { name: string; run: () => unknown };
const cleanups: Cleanup[] = [];
let cleaning: Promise<void> | undefined;

export function onCleanup(name: string, run: () => unknown): () => void {
  const entry = { name, run };
  cleanups.push(entry);
  return () => {
    const i = cleanups.indexOf(entry);
    if (i >= 0) cleanups.splice(i, 1);
  };
}

export function cleanupAll(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length) {
      const { name, run } = cleanups.pop()!;
      try {
        await withTimeout(Promise.resolve(run()), 15_000, `cleanup "${name}"`);
      } catch (err) {
        console.error(`cleanup "${name}" failed: ${(err as Error).message}`);
      }
    }
  })();
  return cleaning;
}

let signalled = false;
/** True once Ctrl-C (or SIGTERM) was received: the runner stops starting new work. */
export function stopping(): boolean {
  return signalled;
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (signalled) return;
    signalled = true;
    console.error(`\n${signal}: stopping and cleaning up…`);
    void cleanupAll().finally(() => process.exit(130));
  });
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    }),
  ]);
}

/** Pids of the processes this benchmark runs (servers, load generator), while they run. */
const ownPidSet = new Set<number>();
export function ownPids(): number[] {
  return [...ownPidSet];
}

// ---------------------------------------------------------------------------------------------
// CPU pinning

export const HAS_TASKSET = spawnSync('taskset', ['-V']).status === 0;
const CPUS = (() => {
  try {
    return spawnSync('nproc').stdout.toString().trim();
  } catch {
    return '1';
  }
})();
export const CORES = Number(CPUS) || 1;

/** Server core and load-generator core (the same core on a 1-core machine). */
export const SERVER_CORE = 0;
export const CLIENT_CORE = CORES > 1 ? 1 : 0;

/** Pins every thread of this process (the runner: flows, code minting) to the client core. */
export function pinSelf(core = CLIENT_CORE): void {
  if (HAS_TASKSET) spawnSync('taskset', ['-a', '-cp', String(core), String(process.pid)]);
}

/** Every Redis and PostgreSQL server process on the machine (not only the bench's). */
export function storageServiceProcesses(): { pid: number; comm: string }[] {
  const found: { pid: number; comm: string }[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      if (comm.startsWith('redis-server') || comm === 'postgres') found.push({ pid: Number(entry), comm });
    } catch {
      // gone
    }
  }
  return found;
}

const storageServicePids = () => storageServiceProcesses().map((p) => p.pid);

function affinity(pid: number): string | undefined {
  return /affinity list: (\S+)/.exec(spawnSync('taskset', ['-cp', String(pid)]).stdout?.toString() ?? '')?.[1];
}

/**
 * Moves the local PostgreSQL and Redis (every thread, and PostgreSQL's postmaster, whose new
 * backends inherit it) onto `core`, beside the load generator, for the length of the run: in
 * production they have hosts of their own, and on a 2-core machine they would otherwise take
 * turns with the server under test on its core. Their affinity is restored at cleanup (also after
 * Ctrl-C). Returns how many processes were moved (0 without taskset or permission).
 */
export function pinStorageServices(core = CLIENT_CORE): number {
  if (!HAS_TASKSET || CORES < 2) return 0;
  const before = new Map<number, string>();
  for (const pid of storageServicePids()) {
    const list = affinity(pid);
    if (list && spawnSync('taskset', ['-a', '-cp', String(core), String(pid)]).status === 0) before.set(pid, list);
  }
  if (before.size) {
    const restore = () => {
      const all = [...before.values()];
      // Backends forked while pinned inherited the pin: give them what the services had.
      const fallback = all.find((l) => l !== String(core)) ?? all[0]!;
      for (const pid of storageServicePids()) spawnSync('taskset', ['-a', '-cp', before.get(pid) ?? fallback, String(pid)]);
    };
    onCleanup('restore PostgreSQL/Redis CPU affinity', restore);
    process.once('exit', restore); // in case cleanup never runs
  }
  return before.size;
}

function pinned(core: number, command: string, args: string[]): [string, string[]] {
  return HAS_TASKSET ? ['taskset', ['-c', String(core), command, ...args]] : [command, args];
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// ---------------------------------------------------------------------------------------------
// Servers

export interface ServerProcess {
  name: string;
  url: string;
  pid: number;
  child: ChildProcess;
  output(): string;
  /** VmRSS and VmHWM (peak) in MiB, read from /proc. */
  memory(): { rssMiB: number; peakMiB: number } | undefined;
  /** Storage calls counted by bench/lib/probe.ts (when preloaded), or undefined. */
  probe(): Promise<ProbeCounts | undefined>;
  stop(): Promise<number | null>;
}

export interface ProbeCounts {
  sqlQueries: number;
  redisCommands: number;
  redisRoundTrips: number;
  sqlByStatement: Record<string, number>;
  redisByCommand: Record<string, number>;
}

export interface ServerSpec {
  name: string;
  /** Script to run with `node --import tsx`, relative to the project root. */
  script: string;
  env: Record<string, string>;
  nodeArgs?: string[];
  /** Preload bench/lib/probe.ts (SQL and Redis call counters, read over IPC). */
  probe?: boolean;
  core?: number;
  startTimeoutMs?: number;
}

/** A clean environment: only what the server should see. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR']) if (process.env[key]) env[key] = process.env[key]!;
  return env;
}

export function readMemory(pid: number): { rssMiB: number; peakMiB: number } | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** Starts a server process pinned to the server core and waits for its "Listening on URL" line. */
let probeId = 0;

export function startServer(spec: ServerSpec): Promise<ServerProcess> {
  const nodeArgs = ['--import', 'tsx', '--import', WATCHDOG, ...(spec.probe ? ['--import', PROBE] : []), ...(spec.nodeArgs ?? []), spec.script];
  const [command, args] = pinned(spec.core ?? SERVER_CORE, process.execPath, nodeArgs);
  const child = spawn(command, args, { cwd: ROOT, env: { ...baseEnv(), ...spec.env }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let output = '';
  const append = (d: Buffer) => {
    output += d;
    if (output.length > 200_000) output = output.slice(-100_000);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);

  let exited: Promise<number | null> = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  const stop = async (): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return exited;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 12_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  const unregister = onCleanup(`stop ${spec.name}`, stop);
  if (child.pid) ownPidSet.add(child.pid);
  exited = exited.finally(() => {
    unregister();
    ownPidSet.delete(child.pid!);
  });

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${spec.name} did not start within ${spec.startTimeoutMs ?? 60_000} ms:\n${output}`));
    }, spec.startTimeoutMs ?? 60_000);
    const onData = () => {
      const match = /Listening on (http:\/\/\S+)/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve({
        name: spec.name,
        url: match[1]!,
        pid: child.pid!,
        child,
        output: () => output,
        memory: () => readMemory(child.pid!),
        probe: () =>
          new Promise<ProbeCounts | undefined>((resolveProbe) => {
            if (!spec.probe || !child.connected) return resolveProbe(undefined);
            const id = ++probeId;
            const timer = setTimeout(() => {
              child.off('message', onMessage);
              resolveProbe(undefined);
            }, 2_000);
            const onMessage = (msg: ProbeCounts & { probe?: string; id?: number }) => {
              if (msg?.probe !== 'counters' || msg.id !== id) return;
              clearTimeout(timer);
              child.off('message', onMessage);
              resolveProbe({
                sqlQueries: msg.sqlQueries,
                redisCommands: msg.redisCommands,
                redisRoundTrips: msg.redisRoundTrips,
                sqlByStatement: { ...(msg.sqlByStatement ?? {}) },
                redisByCommand: { ...(msg.redisByCommand ?? {}) },
              });
            };
            child.on('message', onMessage);
            child.send({ probe: 'counters', id });
          }),
        stop,
      });
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${spec.name} exited with ${code} before listening:\n${output}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Load generator: one long-lived process on the client core, running autocannon jobs sent over IPC.

export interface LoadGenerator {
  run<T>(job: object): Promise<T>;
  stop(): Promise<void>;
}

export function startLoadGenerator(): Promise<LoadGenerator> {
  const [command, args] = pinned(CLIENT_CORE, process.execPath, ['--import', 'tsx', path.join(BENCH, 'lib/load.ts')]);
  const child = spawn(command, args, { cwd: ROOT, env: { ...baseEnv(), NODE_ENV: 'production' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  child.on('message', (msg: { id: number; result?: unknown; error?: string; ready?: boolean }) => {
    const waiter = pending.get(msg.id);
    if (!waiter) return;
    pending.delete(msg.id);
    if (msg.error) waiter.reject(new Error(msg.error));
    else waiter.resolve(msg.result);
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      for (const waiter of pending.values()) waiter.reject(new Error(`load generator exited with ${code}`));
      pending.clear();
      resolve();
    }),
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  const unregister = onCleanup('stop load generator', stop);
  if (child.pid) ownPidSet.add(child.pid);
  void exited.finally(() => {
    unregister();
    ownPidSet.delete(child.pid!);
  });

  const generator: LoadGenerator = {
    run<T>(job: object): Promise<T> {
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ id, job });
      });
    },
    stop,
  };
  // Wait for the process to be ready (its first message).
  return new Promise((resolve, reject) => {
    pending.set(0, { resolve: () => resolve(generator), reject });
  });
}
