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
  const sql = typeof queryParam === 'string' ? queryParam : (queryParam as { sql?: unknown } | undefined)?.sql;
  return typeof sql === 'string' ? sql.replace(/\s+/g, ' ').slice(0, 160) : '?';
}

try {
  const KnexClient = require('knex/lib/client.js') as { prototype: { query: (...args: unknown[]) => unknown } };
  const query = KnexClient.prototype.query;
  KnexClient.prototype.query = function countedQuery(this: unknown, ...args: unknown[]) {
    counts.sqlQueries++;
    const statement = statementOf(args[1]);
    sqlByStatement[statement] = (sqlByStatement[statement] ?? 0) + 1;
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
