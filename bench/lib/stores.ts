// What a request costs the stores, by the stores' own counters (nothing inside our server is
// patched): Redis INFO commandstats and total_reads_processed, PostgreSQL pg_stat_database. And
// the CPU used by anything outside the benchmark, to flag and avoid disturbed samples.
import fs from 'node:fs';
import knexFactory, { type Knex } from 'knex';
import { Redis } from 'ioredis';
import { CORES, cpuSeconds, serverPids, sleep, storagePids } from './procs.ts';
import type { Sample } from './load.ts';

type RedisSnap = { reads: number; connections: number; calls: Record<string, number> };

/**
 * Redis's counters are server-wide and the server may be shared (other logical databases): a window
 * in which another client was active is flagged `redisShared`.
 */
export class RedisMeter {
  constructor(
    private readonly redis: Redis,
    private readonly db: number,
  ) {}

  async snap(): Promise<RedisSnap> {
    const text = (await this.redis.call('INFO', 'stats', 'commandstats')) as string;
    const num = (key: string) => Number(new RegExp(`^${key}:(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    const calls = Object.fromEntries([...text.matchAll(/^cmdstat_(\S+):calls=(\d+)/gm)].filter((m) => !['info', 'client|list'].includes(m[1]!)).map((m) => [m[1]!, Number(m[2])]));
    return { reads: num('total_reads_processed'), connections: num('total_connections_received'), calls };
  }

  /** Per request of `sample` since `before`: commands (those run by scripts included) and reads (round trips). */
  async close(before: RedisSnap, sample: Sample, seconds: number): Promise<void> {
    const after = await this.snap();
    const clients = ((await this.redis.call('CLIENT', 'LIST')) as string).split('\n');
    const others = clients.filter((l) => / db=(\d+) /.exec(l)?.[1] !== String(this.db) && Number(/ idle=(\d+) /.exec(l)?.[1] ?? 1e9) < seconds);
    const n = sample.requests || 1;
    const perRequest = Object.entries(after.calls).map(([cmd, calls]) => [cmd, Number(((calls - (before.calls[cmd] ?? 0)) / n).toFixed(3))] as const);
    sample.redisBreakdown = Object.fromEntries(perRequest.filter(([, v]) => v >= 0.005));
    sample.redisCmds = Object.values(sample.redisBreakdown).reduce((a, b) => a + b, 0);
    sample.redisReads = (after.reads - before.reads - 1) / n; // the INFO just sent was one read
    sample.redisShared = others.length > 0 || after.connections > before.connections;
  }
}

/**
 * A backend reports its counts to pg_stat_database at most once a second while busy, and the rest
 * up to 10 s after it goes idle (PGSTAT_IDLE_INTERVAL). So each window is closed by a snapshot
 * taken 10.5 s after our server's last load, when nothing is pending any more: the window of one of
 * our runs ends when the next one begins (the anchors in between do no SQL). What the database
 * does with no request at all (the webhook queue's polling) is measured once, over 10 s before the
 * first timed run, and taken off each window by its length: the counts are the requests' own.
 */
export class PgMeter {
  private readonly admin: Knex;
  private start?: PgSnap;
  private pending?: { sample: Sample } & PgSnap;
  private lastLoad = 0;
  /** Transactions and rows a second with our server idle. */
  idle?: { xacts: number; rows: number };

  constructor(
    adminUrl: string,
    private readonly database: string,
  ) {
    this.admin = knexFactory({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
  }

  private async snap(): Promise<PgSnap> {
    const { rows } = await this.admin.raw('select xact_commit + xact_rollback as xacts, tup_returned as rows from pg_stat_database where datname = ?', [this.database]);
    return { xacts: Number(rows[0]?.xacts ?? NaN), rows: Number(rows[0]?.rows ?? NaN), at: Date.now() };
  }

  /** Before a timed run of ours: closes the previous window, opens this one. */
  async begin(): Promise<void> {
    await sleep(Math.max(0, this.lastLoad + 10_500 - Date.now()));
    let now = await this.snap();
    if (!this.idle) {
      await sleep(10_000);
      const then = await this.snap();
      const seconds = (then.at - now.at) / 1000;
      this.idle = { xacts: (then.xacts - now.xacts) / seconds, rows: (then.rows - now.rows) / seconds };
      now = then;
    }
    if (this.pending) {
      const { sample: s, xacts, rows: read, at } = this.pending;
      const seconds = (now.at - at) / 1000;
      s.sqlXacts = Math.max(0, now.xacts - xacts - this.idle.xacts * seconds) / (s.requests || 1);
      s.sqlRows = Math.max(0, now.rows - read - this.idle.rows * seconds) / (s.requests || 1);
    }
    this.start = now;
    this.pending = undefined;
  }

  /** After a run of ours: its sample gets the counts when the next window begins (or at close). */
  end(sample?: Sample): void {
    if (sample && this.start) this.pending = { sample, ...this.start };
    this.lastLoad = Date.now();
  }

  async close(): Promise<void> {
    if (this.pending) await this.begin();
    await this.admin.destroy();
  }
}

type PgSnap = { xacts: number; rows: number; at: number };

function machineTicks(): { busy: number; total: number } {
  const v = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  return { busy: total - (v[3] ?? 0) - (v[4] ?? 0), total };
}

/**
 * Starts measuring the CPU used outside the benchmark (everything but this runner and its children,
 * the servers, PostgreSQL and Redis); the function returns it in % of a core.
 */
export function foreignCpu(): () => number {
  const own = () => new Map([...serverPids, ...storagePids()].map((pid) => [pid, cpuSeconds(pid)]));
  const [t0, own0, self0] = [machineTicks(), own(), cpuSeconds('self', true)];
  return () => {
    const t1 = machineTicks();
    // Per process: one that exited in between is left out, one that started counts from zero.
    let ours = cpuSeconds('self', true) - self0;
    for (const [pid, sec] of own()) ours += Math.max(0, sec - (own0.get(pid) ?? 0));
    const wall = (t1.total - t0.total) / 100 / CORES;
    return wall > 0 ? Math.min(100 * CORES, Math.max(0, ((t1.busy - t0.busy) / 100 - ours) / wall) * 100) : 0;
  };
}

/** Before a timed sample: wait (up to 10 s, within the run's budget) while others use over `limit`% of a core. */
export async function waitQuiet(limit: number, budget: { ms: number }): Promise<void> {
  for (let i = 0; i < 20 && budget.ms > 0; i++) {
    const probe = foreignCpu();
    await sleep(500);
    const busy = probe();
    if (busy <= limit) return;
    if (i === 0) console.log(`  (waiting: other processes use ${busy.toFixed(0)}% of a core)`);
    budget.ms -= 500;
  }
}
