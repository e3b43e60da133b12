// knex on a real PostgreSQL (DATABASE_URL) or on the embedded PGlite in DATA_DIR.
import knexFactory, { type Knex } from 'knex';
import ClientPgLite from 'knex-pglite';
import { migrationSource } from '../../migrations/index.ts';
import { ownerOnlyDataDir, tightenDataDir } from './data-dir.ts';

export type Db = Knex;

export interface DbOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  poolMax?: number;
  /** Where knex's own warnings go (connection errors while PostgreSQL is down); by default nowhere. */
  onWarning?: (message: string) => void;
}

export function connectDb({ databaseUrl, dataDir, poolMax = 10, onWarning = () => {} }: DbOptions): Db {
  const log = { warn: onWarning, error: onWarning, deprecate: onWarning, debug: () => {} };
  if (databaseUrl) {
    return knexFactory({
      log,
      client: 'pg',
      connection: { connectionString: databaseUrl, connectionTimeoutMillis: 2000 },
      pool: { min: 0, max: poolMax },
      // While PostgreSQL is down, fail a query after 3 s (→ 503) rather than knex's 60 s.
      acquireConnectionTimeout: 3000,
    });
  }
  ownerOnlyDataDir(dataDir, onWarning);
  // PGlite is single-connection: knex-pglite pins the pool to one connection.
  return knexFactory({ client: EmbeddedClient, dialect: 'postgres', connection: { filename: dataDir }, log } as unknown as Knex.Config);
}

type PgLiteConnection = { close(): Promise<void> };
type PgLiteClient = new (config: Knex.Config) => {
  config: { connection: { filename: string } };
  logger: { warn?: (message: string) => void };
  processResponse(obj: { method?: string }, runner: unknown): unknown;
  _acquireOnlyConnection(): Promise<PgLiteConnection>;
  destroyRawConnection(connection: PgLiteConnection): Promise<void>;
};

class EmbeddedClient extends (ClientPgLite as unknown as PgLiteClient) {
  /**
   * knex-pglite names a query's command after knex's method, and knex's PostgreSQL dialect reads
   * only UPDATE and DELETE as "answer the number of rows": `delete()` (method `del`) and
   * `increment()` (method `counter`) resolved to the driver's result object instead, so every
   * `deleted > 0` was false on the embedded database. Named as PostgreSQL names them here.
   */
  override processResponse(obj: { method?: string }, runner: unknown): unknown {
    const method = obj.method === 'del' ? 'delete' : obj.method === 'counter' ? 'update' : obj.method;
    return super.processResponse({ ...obj, method }, runner);
  }

  // The files PGlite wrote past the umask while opening and closing are made owner-only (src/storage/data-dir.ts).
  override async _acquireOnlyConnection(): Promise<PgLiteConnection> {
    const connection = await super._acquireOnlyConnection();
    this.tighten();
    return connection;
  }

  override async destroyRawConnection(connection: PgLiteConnection): Promise<void> {
    await super.destroyRawConnection(connection);
    this.tighten();
  }

  private tighten(): void {
    tightenDataDir(this.config.connection.filename, (message) => this.logger.warn?.(message));
  }
}

// Several instances may start at once on a fresh database, and knex's own migration lock is not
// enough for that: two may race to create its bookkeeping tables, and one that finds the lock
// taken fails instead of waiting. On PostgreSQL a transaction-scoped advisory lock makes them take
// turns (released even if an instance dies); the embedded PGlite has a single process anyway.
const MIGRATION_LOCK_KEY = 727_210_001;

/** Applies pending migrations; returns those this call applied (none when another instance did). */
export async function migrateLatest(db: Db): Promise<string[]> {
  const run = async () => ((await db.migrate.latest({ migrationSource })) as [number, string[]])[1];
  if (db.client.config.client !== 'pg') return run();
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?)', [MIGRATION_LOCK_KEY]);
    return run(); // on other pool connections, while this one holds the lock
  });
}

export async function pingDb(db: Db): Promise<void> {
  await db.raw('select 1');
}
