// knex on a real PostgreSQL (DATABASE_URL) or on the embedded PGlite in DATA_DIR (its knex client: src/seams/knex-pglite.ts).
import knexFactory, { type Knex } from 'knex';
import { migrationSource } from '../../migrations/index.ts';
import { ownerOnlyDataDir, tightenDataDir } from './data-dir.ts';
import { embeddedClient } from '../seams/knex-pglite.ts';

export type Db = Knex;

export interface DbOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  poolMax?: number;
  /** Where knex's own warnings go (connection errors while PostgreSQL is down); by default nowhere. */
  onWarning?: (message: string) => void;
}

// PGlite writes its files past the umask while opening and closing: they are made owner-only (src/storage/data-dir.ts).
const EmbeddedClient = embeddedClient(tightenDataDir);

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
