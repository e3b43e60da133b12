// Repetitions: every step once per round, in order (each of our cases right after its anchor), a
// warm-up round first; our runs are bracketed by the stores' counters.
import { load, type Job, type Sample } from './load.ts';
import { foreignCpu, waitQuiet, type PgMeter, type RedisMeter } from './stores.ts';
import { favour, type Server } from './procs.ts';
import type { CaseInfo, CaseResult } from './report.ts';

export interface Step extends Omit<CaseInfo, 'server'> {
  target: Server;
  /** Our server's stores, to count what a request costs them. */
  meters?: { redis: RedisMeter; pg: PgMeter };
  /** The request(s) of one run; `rates` holds this round's saturated rates by case id. */
  job(seconds: number, rates: Map<string, number>): Promise<Job> | Job;
}

export interface RoundOptions {
  reps: number;
  duration: number;
  warmup: number;
  maxForeignCpu: number;
  quiet: { ms: number };
}

async function measure(step: Step, job: Job, timed: boolean): Promise<Sample> {
  const m = step.meters;
  if (m && timed) await m.pg.begin();
  const before = await m?.redis.snap();
  favour(step.target);
  const foreign = foreignCpu();
  const t0 = performance.now();
  const sample = await load(job, step.target.pid);
  sample.foreignCpu = foreign();
  if (m && before) {
    await m.redis.close(before, sample, (performance.now() - t0) / 1000 + 1);
    m.pg.end(timed ? sample : undefined);
  }
  return sample;
}

const pct = (v: number | undefined) => (v === undefined ? '–' : `${v.toFixed(0)}%`);

/**
 * How many single-use refresh tokens a run needs: for a closed loop 1.25 × the best timed rate of
 * the case so far (3 × its warm-up's, which runs cold; at first 3,000/s), for an open loop its rate;
 * and a margin.
 */
export function tokenBudget() {
  const best = new Map<string, number>();
  return {
    onRate: (id: string, rps: number, warm: boolean) => best.set(id, Math.max(best.get(id) ?? 0, rps * (warm ? 3 : 1.25))),
    count: (id: string, seconds: number, rate?: number) => (rate ? Math.ceil(rate * (seconds + 1) * 1.1) + 200 : Math.ceil(Math.max(3000, best.get(id) ?? 0) * seconds) + 1000),
  };
}

/** `warmup: 0`: no warm-up round. `onRate`: every run's rate, warm-up included. */
export async function runRounds(title: string, steps: Step[], o: RoundOptions, results: Map<string, CaseResult>, onRate?: (id: string, rps: number, warm: boolean) => void): Promise<void> {
  for (const { target, meters: _m, job: _j, ...info } of steps) if (!results.has(info.id)) results.set(info.id, { ...info, server: target.name, samples: [] });
  for (let round = o.warmup > 0 ? 0 : 1; round <= o.reps; round++) {
    const warm = round === 0;
    const seconds = warm ? o.warmup : o.duration;
    console.log(`\n${title}: ${warm ? 'warm-up' : `repetition ${round}/${o.reps}`} (${seconds} s per case)`);
    const rates = new Map<string, number>();
    for (const step of steps) {
      const result = results.get(step.id)!;
      if (result.error) continue;
      try {
        const job = await step.job(seconds, rates);
        if (!warm) await waitQuiet(o.maxForeignCpu, o.quiet);
        const s = await measure(step, job, !warm);
        rates.set(step.id, s.rps);
        onRate?.(step.id, s.rps, warm);
        if (!warm) result.samples.push(s);
        const statuses = Object.entries(s.status).map(([k, v]) => `${k}:${v}`).join(' ');
        const stores = s.redisCmds === undefined ? '' : `  redis ${s.redisCmds.toFixed(2)} cmds ${s.redisReads!.toFixed(2)} reads${s.redisShared ? '*' : ''}/req`;
        console.log(
          `  ${step.id.padEnd(24)} ${s.rps.toFixed(0).padStart(6)}/s  p50 ${s.p50.toFixed(2).padStart(6)}  p99 ${s.p99.toFixed(2).padStart(7)} ms  cpu ${pct(s.serverCpu)} other ${pct(s.foreignCpu)}  [${statuses}]${s.errors ? ` errors ${s.errors}` : ''}${s.feedShort ? ` SPENT ${s.feedShort}` : ''}${s.late !== undefined ? ` ${s.exact ? 'exact, ' : 'bound, '}sends late ${s.late.toFixed(2)} ms` : ''}${stores}`,
        );
      } catch (err) {
        result.error = (err as Error).message;
        console.error(`  ${step.id}: FAILED ${(err as Error).stack ?? err}`);
      }
    }
  }
}
