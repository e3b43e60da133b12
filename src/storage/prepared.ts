// Hot reads — the client on every token request, the user on every refresh and /v2/me — built
// by knex once, then run on PostgreSQL as named prepared statements straight on a pooled
// connection. That skips knex's per-call query building and PostgreSQL's per-call parse and plan
// (a large share of a query's server CPU: docs/benchmark.md). On the embedded PGlite they go through
// knex as usual. Select explicit columns, not `*`: a prepared `*` fails with "cached plan must
// not change result type" once a migration adds a column under a running server.
import type { Knex } from 'knex';
import type { Db } from './db.ts';

interface Compiled {
  /** PostgreSQL text with $1… placeholders, for the prepared statement. */
  native: string;
  /** knex text with ? placeholders, for other clients. */
  sql: string;
  /** Per binding: the index of the caller's parameter, or the constant knex put there. */
  bindings: Array<{ param: number } | { value: unknown }>;
}

interface PgConnection {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

const PARAM = '\u0001prepared-param-';

/**
 * A read compiled once per SQL dialect (the text depends on nothing else of the database it runs
 * on). `build` receives placeholders in place of the parameters; they may appear anywhere knex
 * takes a value.
 */
export function preparedRead<Row, P extends unknown[]>(name: string, build: (db: Db, ...params: string[]) => Knex.QueryBuilder | Knex.Raw) {
  // Keyed by the knex client class (PostgreSQL, PGlite), not by a connection.
  const compiled = new Map<unknown, Compiled>();
  const compile = (db: Db, arity: number): Compiled => {
    const query = build(db, ...Array.from({ length: arity }, (_, i) => `${PARAM}${i}`)).toSQL();
    const bindings = query.bindings.map((value) =>
      typeof value === 'string' && value.startsWith(PARAM) ? { param: Number(value.slice(PARAM.length)) } : { value },
    );
    return { native: query.toNative().sql, sql: query.sql, bindings };
  };

  return async (db: Db, ...params: P): Promise<Row[]> => {
    let statement = compiled.get(db.client.constructor);
    if (!statement) compiled.set(db.client.constructor, (statement = compile(db, params.length)));
    const values = statement.bindings.map((b) => ('param' in b ? params[b.param] : b.value));
    if (db.client.config.client !== 'pg') return (await db.raw(statement.sql, values as Knex.RawBinding[])).rows as Row[];
    const connection = (await db.client.acquireConnection()) as PgConnection;
    try {
      return (await connection.query({ name, text: statement.native, values })).rows as Row[];
    } finally {
      await db.client.releaseConnection(connection);
    }
  };
}
