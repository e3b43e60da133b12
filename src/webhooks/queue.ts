// The delivery queue: pg-boss over our own knex connections, so that an event can be enqueued in
// the very transaction that makes the change (the outbox), on PostgreSQL and on the embedded PGlite.
import { PgBoss, fromKnex, type Db as IDatabase } from 'pg-boss';
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import { POLICY } from '../settings.ts';

export const WEBHOOK_QUEUE = 'webhook-deliveries';
const SCHEMA = 'pgboss';

/** Deliveries are retried this long after the event happened, then given up. */
export const RETRY_WINDOW_SECONDS = POLICY.RETRY_WINDOW_SECONDS.value;
/** The longest wait between two attempts. */
export const MAX_RETRY_DELAY_SECONDS = POLICY.MAX_RETRY_DELAY_SECONDS.value;

export type WebhookQueue = PgBoss;

const isEmbedded = (db: Db) => db.client.config.client !== 'pg';

interface PgliteConnection {
  exec(text: string): Promise<Array<{ rows?: unknown[] }>>;
  query(text: string): Promise<unknown>;
}

/**
 * pg-boss's statements through knex. PGlite's query() runs one statement, and pg-boss's schema
 * statements come several at a time without parameters: those go through exec() on knex's only
 * connection (taken from its pool, so they never run inside someone else's transaction).
 */
function queueDatabase(db: Db): IDatabase {
  const viaKnex = fromKnex(db);
  if (!isEmbedded(db)) return viaKnex;
  return {
    async executeSql(text, values) {
      if (values?.length) return viaKnex.executeSql(text, values);
      const connection = (await db.client.acquireConnection()) as PgliteConnection;
      try {
        const results = await connection.exec(text);
        return { rows: results.flatMap((r) => r.rows ?? []) };
      } catch (err) {
        await connection.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        await db.client.releaseConnection(connection);
      }
    },
  };
}

/** A transaction of ours as pg-boss's `db` option: the job is written, or not, with the change. */
export const inTransaction = (trx: Knex.Transaction): IDatabase => fromKnex(trx);

/**
 * How many retries fit in the window: each wait is at least half of base·2^n (pg-boss's jitter),
 * at most MAX_RETRY_DELAY_SECONDS. The worker gives up by the clock anyway (delivery.ts); this
 * only makes sure pg-boss does not give up first.
 */
export function retryLimitFor(baseSeconds: number): number {
  let total = 0;
  let retries = 0;
  while (total < RETRY_WINDOW_SECONDS) {
    total += Math.min(MAX_RETRY_DELAY_SECONDS, (baseSeconds * 2 ** retries) / 2);
    retries++;
  }
  return retries + 2;
}

export interface QueueOptions {
  /** Runs the maintenance (expiry of stuck attempts, retention): on in the server, off in the operator scripts. */
  supervise: boolean;
  retryBaseSeconds: number;
  onError(err: Error): void;
}

/** Starts pg-boss on the database (creating or upgrading its schema) and makes sure the queue exists. */
export async function startWebhookQueue(db: Db, { supervise, retryBaseSeconds, onError }: QueueOptions): Promise<WebhookQueue> {
  const boss = new PgBoss({
    db: queueDatabase(db),
    schema: SCHEMA,
    supervise,
    schedule: false,
    migrate: true,
    registerInstance: false,
    openTelemetry: { enabled: false },
    ...(isEmbedded(db) ? { backend: 'pglite' as const } : {}),
  });
  // An EventEmitter 'error' without a listener would end the process.
  boss.on('error', onError);
  await boss.start();
  const options = {
    // Per client, strictly in order: a failing event holds back the later ones of the same client.
    policy: 'key_strict_fifo' as const,
    retryLimit: retryLimitFor(retryBaseSeconds),
    retryDelay: retryBaseSeconds,
    retryBackoff: true,
    retryDelayMax: MAX_RETRY_DELAY_SECONDS,
    // An attempt takes at most 5 s; one whose instance died is tried again after this.
    expireInSeconds: 60,
    retentionSeconds: 2 * RETRY_WINDOW_SECONDS,
    deleteAfterSeconds: 7 * 24 * 60 * 60,
  };
  if (await boss.getQueue(WEBHOOK_QUEUE)) {
    const { policy: _fixed, ...changeable } = options;
    await boss.updateQueue(WEBHOOK_QUEUE, changeable);
  } else {
    await boss.createQueue(WEBHOOK_QUEUE, options).catch(async (err) => {
      if (!(await boss.getQueue(WEBHOOK_QUEUE))) throw err; // another instance created it meanwhile
    });
  }
  return boss;
}
