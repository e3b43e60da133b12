// Structured JSON logs in production; one readable line per entry in development (LOG_FORMAT).
// Only paths are logged, never query strings, bodies or headers, which can carry codes, tokens,
// secrets and passwords.
import pino from 'pino';
import pretty from 'pino-pretty';

export type Logger = pino.Logger;

// A line per request must not cost a write(2) per request on the hot path: lines are gathered
// here into chunks of about 16 KB, each handed to sonic-boom whole (one synchronous write), and flushed at least
// every second (and at exit), so a quiet server's lines still show up promptly. Gathered here
// rather than in sonic-boom: it measures the byte length of its whole pending chunk on every line
// written, which with 16 KB chunks cost about as much as the gateway check's own decision, and
// smaller chunks cost as much again in writes (docs/benchmark.md).
const FLUSH_EVERY_MS = 1000;
/** Characters gathered before they are written (lines are ASCII JSON: about as many bytes). */
const CHUNK = 16_000;
const MAX_DEPTH = 5;

/**
 * A logged value without the arguments of Redis commands: ioredis puts a failed command's
 * arguments on its reply errors (`command.args`) — keys, payloads, and raw artifact ids such as
 * a session id or a new token's value. Only the command's name is kept. Errors inside (a cause,
 * a transaction's previousErrors) are serialized and cleaned alike.
 */
function withoutCommandArguments(value: unknown, depth = 0): unknown {
  if (value instanceof Error) value = pino.stdSerializers.err(value);
  if (depth > MAX_DEPTH || !value || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => withoutCommandArguments(item, depth + 1));
  const clean: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const command = key === 'command' && item && typeof item === 'object' && 'args' in item;
    clean[key] = command ? { name: (item as { name?: unknown }).name } : withoutCommandArguments(item, depth + 1);
  }
  return clean;
}

const OPTIONS: pino.LoggerOptions = {
  base: undefined,
  redact: ['req.headers.authorization', 'req.headers.cookie'],
  serializers: { err: (err: unknown) => withoutCommandArguments(err) },
};

/** LOG_FORMAT (src/settings.ts): `json` (one JSON document a line, for collectors) or `pretty` (for a person at a terminal). */
export type LogFormat = 'json' | 'pretty';

/**
 * A development console: `14:03:07 INFO: message key=value` on one line each, colours on a
 * terminal. Synchronous, so the start banner (console.log) and the lines stay in order. It reads the
 * same JSON lines pino writes (the request lines of src/http/envelope.ts too).
 */
function prettyStream(): pino.DestinationStream {
  return pretty({ sync: true, colorize: Boolean(process.stdout.isTTY), singleLine: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' });
}

/** The process's logger: to stdout, buffered JSON or pretty lines; or to `destination` (tests read what is logged). */
export function createLogger(level: string, destination?: pino.DestinationStream, format: LogFormat = 'json'): Logger {
  if (level === 'silent') return pino({ level });
  if (destination) return pino({ level, ...OPTIONS }, destination);
  if (format === 'pretty') return pino({ level, ...OPTIONS }, prettyStream());
  // Each gathered chunk is written synchronously: one write(2) per ~16 KB, and nothing in flight
  // that an exit could lose (an asynchronous write still under way at exit was dropped with its
  // chunk, test/log-stdout.test.ts).
  const stdout = pino.destination({ dest: 1, minLength: 0, sync: true });
  const lines = gatheredLines(stdout);
  setInterval(() => {
    try {
      lines.flush();
    } catch {
      // destroyed at shutdown: nothing left to flush
    }
  }, FLUSH_EVERY_MS).unref();
  // At exit, what is still gathered is handed over and written at once (pino's own exit flush of
  // sonic-boom, registered earlier, runs before this one and cannot see it).
  process.once('exit', () => {
    try {
      lines.flushSync();
    } catch {
      // stdout gone: nothing can be written
    }
  });
  return pino({ level, ...OPTIONS }, lines);
}

/**
 * The stream pino and the request lines write to: lines are appended to one string (a rope, no
 * copy) and handed to sonic-boom once CHUNK characters have gathered, so sonic-boom measures and
 * writes each chunk once.
 */
function gatheredLines(stdout: pino.DestinationStream & { flush(cb?: () => void): void; flushSync(): void }) {
  let pending = '';
  const handOver = () => {
    if (pending === '') return;
    const chunk = pending;
    pending = '';
    stdout.write(chunk);
  };
  return {
    write(line: string) {
      pending += line;
      if (pending.length >= CHUNK) handOver();
    },
    flush(cb?: () => void) {
      handOver();
      stdout.flush(cb);
    },
    flushSync() {
      handOver();
      stdout.flushSync();
    },
  };
}
