// knex on a real PostgreSQL (DATABASE_URL) or on the embedded PGlite in DATA_DIR.
import fs from 'node:fs';
import knexFactory, { type Knex } from 'knex';
import ClientPgLite from 'knex-pglite';
import { migrationSource } from '../../migrations/index.ts';

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
  fs.mkdirSync(dataDir, { recursive: true });
  // PGlite is single-connection: knex-pglite pins the pool to one connection.
  return knexFactory({ client: ClientPgLite, dialect: 'postgres', connection: { filename: dataDir }, log } as Knex.Config);
}

// Several instances may start at once on a fresh database: knex refuses while another holds its
// migration lock, and two may race to create its bookkeeping tables. Wait and try again.
const MIGRATION_ATTEMPTS = 60;
const MIGRATION_RETRY_MS = 500;

function isMigrationRace(err: unknown): boolean {
  const message = String((err as Error)?.message ?? '');
  return /already locked/i.test(message) || (/knex_migrations/.test(message) && /already exists|duplicate key/i.test(message));
}

/** Applies pending migrations; returns those this call applied (none when another instance did). */
export async function migrateLatest(db: Db): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      const [, applied] = (await db.migrate.latest({ migrationSource })) as [number, string[]];
      return applied;
    } catch (err) {
      if (!isMigrationRace(err) || attempt >= MIGRATION_ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, MIGRATION_RETRY_MS));
    }
  }
}

export async function pingDb(db: Db): Promise<void> {
  await db.raw('select 1');
}
