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
}

export function connectDb({ databaseUrl, dataDir, poolMax = 10 }: DbOptions): Db {
  if (databaseUrl) {
    return knexFactory({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: poolMax } });
  }
  fs.mkdirSync(dataDir, { recursive: true });
  // PGlite is single-connection: knex-pglite pins the pool to one connection.
  return knexFactory({ client: ClientPgLite, dialect: 'postgres', connection: { filename: dataDir } } as Knex.Config);
}

export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource })) as [number, string[]];
  return applied;
}

export async function pingDb(db: Db): Promise<void> {
  await db.raw('select 1');
}
