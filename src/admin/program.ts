// The operator scripts (CONTRACT 5) as a function of argv, environment and output streams, so that
// tests run them in-process; src/admin/cli.ts is the process entry.
// --json prints exactly one JSON document; a refusal exits 1 with a one-line reason on stderr.
import os from 'node:os';
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig } from '../config.ts';
import { connectDb } from '../storage/db.ts';
import { connectRedis } from '../storage/redis.ts';
import { clientArtifacts } from '../storage/client-artifacts.ts';
import { lockHolder } from '../storage/embedded-lock.ts';
import { InputError, NotFoundError } from '../errors.ts';
import * as commands from './commands.ts';
import type { AdminContext } from './commands.ts';

class Refusal extends Error {}

interface Session extends AdminContext {
  close(): Promise<void>;
}

export interface AdminIo {
  env: Record<string, string | undefined>;
  stdout(text: string): void;
  stderr(text: string): void;
}

function open(env: AdminIo['env'], reason: string | undefined): Session {
  const config = loadConfig(env);
  if (!config.databaseUrl) {
    const pid = lockHolder(config.dataDir);
    if (pid) {
      throw new Refusal(
        `the server (pid ${pid}) is using the embedded database in ${config.dataDir}; stop it before running operator scripts, or run both on PostgreSQL (DATABASE_URL)`,
      );
    }
  }
  const db = connectDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: 2 });
  const redis = config.redis ? connectRedis(config.redis) : undefined;
  return {
    db,
    artifacts: clientArtifacts(db, redis),
    by: { actor: `operator:${os.userInfo().username}`, reason },
    async close() {
      redis?.disconnect();
      await db.destroy();
    },
  };
}

/** Readable text: `key: value` lines, lists as `- item`, nested objects indented. */
function printText(value: unknown, indent = ''): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return `${indent}(none)`;
    return value
      .map((v) => (v && typeof v === 'object' ? `${indent}- ${printText(v, `${indent}  `).trimStart()}` : `${indent}- ${v}`))
      .join('\n');
  }
  if (value && typeof value === 'object') {
    return Object.entries(value)
      .map(([k, v]) => (v && typeof v === 'object' ? `${indent}${k}:\n${printText(v, `${indent}  `)}` : `${indent}${k}: ${v}`))
      .join('\n');
  }
  return `${indent}${value}`;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function buildProgram(io: AdminIo): Command {
  const program = new Command('admin')
    .description('Operator scripts of the OAuth authorization server (CONTRACT section 5)')
    .option('--json', 'print exactly one JSON document')
    .option('--reason <text>', 'why: recorded in the audit trail with the change')
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });

  /** Runs a command against storage and prints its result as JSON or text. */
  function action<A extends unknown[]>(run: (ctx: AdminContext, ...args: A) => Promise<unknown>) {
    return async (...args: A) => {
      const { json, reason } = program.opts<{ json?: boolean; reason?: string }>();
      const session = open(io.env, reason);
      try {
        const result = await run(session, ...args);
        io.stdout(json ? `${JSON.stringify(result)}\n` : `${printText(result)}\n`);
      } finally {
        await session.close();
      }
    };
  }

  program
    .command('migrate')
    .description('apply pending database migrations')
    .action(action(({ db }) => commands.migrate(db)));

  const users = program.command('users').description('manage users');
  users
    .command('create')
    .description('create a user')
    .requiredOption('--email <email>', 'email address (unique)')
    .requiredOption('--password <password>', 'password (at least 8 characters)')
    .option('--name <name>', 'display name')
    .option('--username <username>', 'username (unique; default: the part of the email before @)')
    .option('--time-zone <tz>', 'IANA time zone', 'UTC')
    .action(action(({ db }, opts) => commands.usersCreate(db, opts)));

  users
    .command('set-admin <email>')
    .description('let a user review clients on /admin/oauth-clients (--revoke to take it back)')
    .option('--revoke', 'take the administrator flag away')
    .action(action((ctx, email: string, opts: { revoke?: boolean }) => commands.usersSetAdmin(ctx, email, opts)));

  const clients = program.command('clients').description('manage OAuth clients');
  clients
    .command('create')
    .description('register a client; it starts as pending')
    .requiredOption('--name <name>', 'client name shown on the consent page')
    .requiredOption('--redirect-uri <uri>', 'redirect URI (repeat for more, at most 10)', collect)
    .option('--scope <scopes>', 'scope(s), space- or comma-separated (repeatable)', collect)
    .option('--public', 'a public client (PKCE, no secret)')
    .option('--legacy', 'a legacy client created before scopes existed')
    .action(action((ctx, opts) => commands.clientsCreate(ctx, opts)));
  for (const [name, status, what] of [
    ['approve', 'approved', 'approve a pending client, or reinstate a suspended one'],
    ['reject', 'rejected', 'reject a pending client'],
    ['suspend', 'suspended', 'suspend an approved client: its codes, tokens and grants stop working at once'],
  ] as const) {
    clients
      .command(`${name} <id>`)
      .description(what)
      .action(action((ctx, id: string) => commands.clientsSetStatus(ctx, id, status)));
  }
  clients
    .command('show <id>')
    .description('show a client and its active secrets (never the secrets themselves)')
    .action(action((ctx, id: string) => commands.clientsShow(ctx, id)));
  clients
    .command('list')
    .description('list clients')
    .option('--status <status>', 'only clients in this status (pending, approved, rejected, suspended)')
    .action(action((ctx, opts: { status?: string }) => commands.clientsList(ctx, opts.status)));
  clients
    .command('set-scopes <id> <scopes...>')
    .description("replace the client's scopes (names separated by spaces or commas)")
    .option('--force', 'apply even though the legacy migration guard refuses (users on the old URL will fail)')
    .action(action((ctx, id: string, scopes: string[], opts: { force?: boolean }) => commands.clientsSetScopes(ctx, id, scopes, opts)));
  clients
    .command('add-redirect-uri <id> <uri>')
    .description('register one more redirect URI (at most 10)')
    .action(action((ctx, id: string, uri: string) => commands.clientsAddRedirectUri(ctx, id, uri)));
  clients
    .command('remove-redirect-uri <id> <uri>')
    .description('remove a redirect URI (a client keeps at least one)')
    .action(action((ctx, id: string, uri: string) => commands.clientsRemoveRedirectUri(ctx, id, uri)));

  const secrets = program.command('secrets').description("manage a confidential client's secrets (at most 2 active)");
  secrets
    .command('generate <id>')
    .description('generate a new secret, shown once; refused while 2 are active')
    .action(action((ctx, id: string) => commands.secretsGenerate(ctx, id)));
  secrets
    .command('revoke <id> <secret-id>')
    .description('revoke a secret; requests with it are refused from now on')
    .action(action((ctx, id: string, secretId: string) => commands.secretsRevoke(ctx, id, secretId)));
  secrets
    .command('list <id>')
    .description('list active secrets (ids and dates, never the secrets)')
    .action(action((ctx, id: string) => commands.secretsList(ctx, id)));

  return program;
}

/** Runs the operator scripts with these arguments (after `admin`); resolves to the exit code. */
export async function runAdmin(argv: string[], io: AdminIo): Promise<number> {
  // Subcommands inherit exitOverride and the output streams: commander's exits become return values.
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    // Help exits 0; usage errors were already printed by commander.
    if (err instanceof CommanderError) return err.exitCode;
    const known = err instanceof InputError || err instanceof NotFoundError || err instanceof Refusal || err instanceof ConfigError;
    io.stderr(`error: ${known ? (err as Error).message : `unexpected failure: ${(err as Error).message}`}\n`);
    return 1;
  }
}
