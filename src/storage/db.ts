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

export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource })) as [number, string[]];
  return applied;
}

export async function pingDb(db: Db): Promise<void> {
  await db.raw('select 1');
}
