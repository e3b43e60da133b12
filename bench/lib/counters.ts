// The CPU of everything on the machine that is not part of the benchmark, to flag samples
// disturbed by other work.
import fs from 'node:fs';
import { cpuSeconds, TICKS } from './cpu.ts';
import { CORES, storageServiceProcesses } from './procs.ts';

function readTicks(): { busy: number; total: number } | undefined {
  try {
    const values = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = values.reduce((a, b) => a + b, 0);
    return { busy: total - (values[3] ?? 0) - (values[4] ?? 0), total };
  } catch {
    return undefined;
  }
}

/**
 * Pids of the PostgreSQL and Redis server processes that work for the benchmark: Redis, the
 * PostgreSQL server’s own processes, and the backends of the bench databases (`bench_<pid>_…`).
 * Backends of other databases (someone's tests) are foreign.
 */
function storagePids(): number[] {
  return storageServiceProcesses()
    .filter(({ pid, comm }) => {
      if (comm !== 'postgres') return true;
      try {
        const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
        const backend = /^postgres: (?:\S+: )?\S+ (\S+) \S+\(\d+\)/.exec(cmdline); // [cluster: ]user db host(port)
        return !backend || /^bench_\d+_/.test(backend[1]!);
      } catch {
        return false; // gone
      }
    })
    .map(({ pid }) => pid);
}

function cpuByPid(pids: number[]): Map<number, number> {
  const m = new Map<number, number>();
  for (const pid of pids) {
    const s = cpuSeconds(pid);
    if (s !== undefined) m.set(pid, s);
  }
  return m;
}

/**
 * Starts measuring foreign CPU: the whole machine's busy time minus the benchmark's own processes
 * (`pids`, this runner) and PostgreSQL/Redis. The returned function gives it in % of one core.
 * Per-process deltas: a process that exits in between is left out (its last slice is lost, a
 * small overestimate), one that starts in between counts from zero.
 */
export function foreignCpu(pids: () => number[]): () => number | undefined {
  const ticks0 = readTicks();
  const before = cpuByPid([...pids(), ...storagePids()]);
  const self0 = process.cpuUsage();
  return () => {
    const ticks1 = readTicks();
    if (!ticks0 || !ticks1 || ticks1.total === ticks0.total) return undefined;
    const after = cpuByPid([...new Set([...pids(), ...storagePids(), ...before.keys()])]);
    let ownSec = 0;
    for (const [pid, sec] of after) ownSec += Math.max(0, sec - (before.get(pid) ?? 0));
    const self = process.cpuUsage(self0);
    ownSec += (self.user + self.system) / 1e6;
    const wallSec = (ticks1.total - ticks0.total) / TICKS / CORES;
    const busySec = (ticks1.busy - ticks0.busy) / TICKS;
    return Math.min(100 * CORES, Math.max(0, ((busySec - ownSec) / wallSec) * 100));
  };
}
