// The seam to knex-pglite's and knex's insides: the embedded PGlite's knex client, with the
// answers of delete() and increment() corrected and a hook after the database's files were
// opened or closed (src/storage/db.ts: they are made owner-only there).
import type { Knex } from 'knex';
import ClientPgLite from 'knex-pglite';
import type { UpstreamFile } from './upstream.ts';

export const UPSTREAM: readonly UpstreamFile[] = [
  { file: 'knex-pglite/dist/index.js', sha256: '7cceeea8e2c6744724f141a0f1f2f6c3f418be4b4ea83ebc25d1c4d774b3c313', what: "_acquireOnlyConnection opens PGlite, destroyRawConnection closes it; processResponse names a query's command after knex's method" },
  { file: 'knex/lib/dialects/postgres/index.js', sha256: 'a531e8626fa1a88089be6f491656ed62003a354ce373cb571ec63152b67c7a95', what: 'processResponse answers the number of rows only for the methods update and delete' },
];

type PgLiteConnection = { close(): Promise<void> };
type PgLiteClient = new (config: Knex.Config) => {
  config: { connection: { filename: string } };
  logger: { warn?: (message: string) => void };
  processResponse(obj: { method?: string }, runner: unknown): unknown;
  _acquireOnlyConnection(): Promise<PgLiteConnection>;
  destroyRawConnection(connection: PgLiteConnection): Promise<void>;
};

/** The knex client of the embedded database; `afterFiles(dataDir, warn)` runs after PGlite opened or closed its files. */
export function embeddedClient(afterFiles: (dataDir: string, warn: (message: string) => void) => void): Knex.Config['client'] {
  return class EmbeddedClient extends (ClientPgLite as unknown as PgLiteClient) {
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

    override async _acquireOnlyConnection(): Promise<PgLiteConnection> {
      const connection = await super._acquireOnlyConnection();
      this.filesTouched();
      return connection;
    }

    override async destroyRawConnection(connection: PgLiteConnection): Promise<void> {
      await super.destroyRawConnection(connection);
      this.filesTouched();
    }

    private filesTouched(): void {
      afterFiles(this.config.connection.filename, (message) => this.logger.warn?.(message));
    }
  } as unknown as Knex.Config['client'];
}
