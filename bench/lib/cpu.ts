// CPU time of a process (all its threads) from /proc, in seconds.
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';

export const TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at ") ".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS; // utime, stime
  } catch {
    return undefined;
  }
}

/** Busy and total jiffies of the whole machine (all cores), from /proc/stat. */
function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const values = line.trim().split(/\s+/).slice(1).map(Number);
    const total = values.reduce((a, b) => a + b, 0);
    const idle = (values[3] ?? 0) + (values[4] ?? 0); // idle + iowait
    return { busy: total - idle, total };
  } catch {
    return undefined;
  }
}

/** How busy the machine is over `ms`, in % of one core (so up to 100 × cores). */
export async function machineBusyPct(ms: number, cores: number): Promise<number | undefined> {
  const a = machineTicks();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const b = machineTicks();
  if (!a || !b || b.total === a.total) return undefined;
  return ((b.busy - a.busy) / (b.total - a.total)) * 100 * cores;
}
