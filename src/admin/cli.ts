// `npm run --silent admin -- <command>`: the operator scripts (CONTRACT 5).
// --json prints exactly one JSON document; a refusal exits 1 with a one-line reason on stderr.
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig } from '../config.ts';
import { connectDb } from '../storage/db.ts';
import { connectRedis } from '../storage/redis.ts';
import { artifactStorage } from '../storage/artifacts.ts';
import type { ClientDeps } from '../clients/lifecycle.ts';
import { lockHolder } from '../storage/embedded-lock.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { clientsCreate, clientsSetStatus, clientsShow, migrate, usersCreate } from './commands.ts';

class Refusal extends Error {}

interface Storage extends ClientDeps {
  close(): Promise<void>;
}

function openStorage(): Storage {
  const config = loadConfig();
  if (!config.databaseUrl) {
    const pid = lockHolder(config.dataDir);
    if (pid) {
      throw new Refusal(
        `the server (pid ${pid}) is using the embedded database in ${config.dataDir}; stop it before running operator scripts, or run both on PostgreSQL (DATABASE_URL)`,
      );
    }
  }
  const db = connectDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: 2 });
  const redis = config.redisUrl ? connectRedis(config.redisUrl) : undefined;
  return {
    db,
    artifacts: artifactStorage(db, redis),
    async close() {
      redis?.disconnect();
      await db.destroy();
    },
  };
}

function printText(value: unknown, indent = ''): string {
  if (Array.isArray(value)) {
    return value.length === 0 ? `${indent}(none)` : value.map((v) => (typeof v === 'object' && v ? `${printText(v, `${indent}  `)}\n` : `${indent}- ${v}`)).join('\n');
  }
  if (value && typeof value === 'object') {
    return Object.entries(value)
      .map(([k, v]) => (v && typeof v === 'object' ? `${indent}${k}:\n${printText(v, `${indent}  `)}` : `${indent}${k}: ${v}`))
      .join('\n');
  }
  return `${indent}${value}`;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

const program = new Command('admin')
  .description('Operator scripts of the OAuth authorization server')
  .option('--json', 'print exactly one JSON document')
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });

function action<A extends unknown[]>(run: (storage: Storage, ...args: A) => Promise<unknown>) {
  return async (...args: A) => {
    const storage = openStorage();
    try {
      const result = await run(storage, ...args);
      const json = program.opts().json as boolean | undefined;
      process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${printText(result)}\n`);
    } finally {
      await storage.close();
    }
  };
}

program.command('migrate').description('apply pending database migrations').action(action(({ db }) => migrate(db)));

const users = program.command('users').description('manage users');
users
  .command('create')
  .description('create a user')
  .requiredOption('--email <email>', 'email address (unique)')
  .requiredOption('--password <password>', 'password (at least 8 characters)')
  .option('--name <name>', 'display name')
  .option('--username <username>', 'username (unique; default: the part of the email before @)')
  .option('--time-zone <tz>', 'IANA time zone', 'UTC')
  .action(action(({ db }, opts) => usersCreate(db, opts)));

const clients = program.command('clients').description('manage OAuth clients');
clients
  .command('create')
  .description('register a client; it starts as pending')
  .requiredOption('--name <name>', 'client name shown on the consent page')
  .requiredOption('--redirect-uri <uri>', 'redirect URI (repeat for more, at most 10)', collect)
  .option('--scope <scopes>', 'scope(s), space- or comma-separated (repeatable)', collect)
  .option('--public', 'a public client (PKCE, no secret)')
  .option('--legacy', 'a legacy client created before scopes existed')
  .action(action(({ db }, opts) => clientsCreate(db, opts)));
for (const [name, status] of [['approve', 'approved'], ['reject', 'rejected'], ['suspend', 'suspended']] as const) {
  clients
    .command(`${name} <id>`)
    .description(`${name} a client`)
    .action(action((storage, id: string) => clientsSetStatus(storage, id, status)));
}
clients
  .command('show <id>')
  .description('show a client and its active secrets (never the secrets themselves)')
  .action(action(({ db }, id: string) => clientsShow(db, id)));

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // Help and version print and exit 0; usage errors were already printed by commander.
    process.exit(err.exitCode);
  }
  const known = err instanceof InputError || err instanceof NotFoundError || err instanceof Refusal || err instanceof ConfigError;
  process.stderr.write(`error: ${known ? (err as Error).message : `unexpected failure: ${(err as Error).message}`}\n`);
  process.exit(1);
}
