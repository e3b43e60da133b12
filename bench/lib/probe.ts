// Preloaded into our server by the benchmark only (`--import bench/lib/probe.ts`): counts the SQL
// queries (every knex query, on PostgreSQL or PGlite) and the Redis commands and round trips
// (ioredis) the process makes, and reports the counts when the runner asks over IPC. It wraps
// two library methods in place and changes nothing else.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const counts = { sqlQueries: 0, redisCommands: 0, redisRoundTrips: 0 };
/** Per SQL statement (its text, shortened) and per Redis command name. */
const sqlByStatement: Record<string, number> = {};
const redisByCommand: Record<string, number> = {};

function statementOf(queryParam: unknown): string {
  const config = queryParam as { sql?: unknown; text?: unknown } | undefined;
  const sql = typeof queryParam === 'string' ? queryParam : (config?.sql ?? config?.text);
  return typeof sql === 'string' ? sql.replace(/\s+/g, ' ').slice(0, 160) : '?';
}

function countSql(queryParam: unknown): void {
  counts.sqlQueries++;
  const statement = statementOf(queryParam);
  sqlByStatement[statement] = (sqlByStatement[statement] ?? 0) + 1;
}

// On PostgreSQL every query reaches the pg driver (knex's, and the prepared hot reads of
// src/storage/prepared.ts that skip knex): count there. PGlite has no pg driver: count in knex.
try {
  const PgClient = (require('pg') as { Client: { prototype: { query: (...args: unknown[]) => unknown } } }).Client;
  const query = PgClient.prototype.query;
  PgClient.prototype.query = function countedPgQuery(this: unknown, ...args: unknown[]) {
    countSql(args[0]);
    return query.apply(this, args);
  };
} catch {
  // no pg: nothing to count
}
try {
  const KnexClient = require('knex/lib/client.js') as { prototype: { query: (...args: unknown[]) => unknown } };
  const query = KnexClient.prototype.query;
  KnexClient.prototype.query = function countedQuery(this: { config?: { client?: unknown } }, ...args: unknown[]) {
    if (this.config?.client !== 'pg') countSql(args[1]); // knex-pglite's client is a class, not 'pg'
    return query.apply(this, args);
  };
} catch {
  // no knex: nothing to count
}

try {
  const { Redis, Pipeline } = require('ioredis') as {
    Redis: { prototype: { sendCommand: (...args: unknown[]) => unknown } };
    Pipeline?: { prototype: { exec: (...args: unknown[]) => unknown } };
  };
  const sendCommand = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function countedCommand(this: unknown, ...args: unknown[]) {
    counts.redisCommands++;
    const name = String((args[0] as { name?: unknown } | undefined)?.name ?? '?').toUpperCase();
    redisByCommand[name] = (redisByCommand[name] ?? 0) + 1;
    if (args[1] === undefined) counts.redisRoundTrips++; // not part of a pipeline / MULTI
    return sendCommand.apply(this, args);
  };
  const PipelineClass = Pipeline ?? (require('ioredis/built/Pipeline.js') as { default: { prototype: { exec: (...args: unknown[]) => unknown } } }).default;
  const exec = PipelineClass.prototype.exec;
  PipelineClass.prototype.exec = function countedExec(this: unknown, ...args: unknown[]) {
    counts.redisRoundTrips++;
    return exec.apply(this, args);
  };
} catch {
  // no ioredis: nothing to count
}

process.on('message', (msg: { probe?: string; id?: number }) => {
  if (msg?.probe === 'counters') process.send?.({ probe: 'counters', id: msg.id, ...counts, sqlByStatement, redisByCommand });
});
