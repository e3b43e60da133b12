// The operator scripts (docs/operations.md) as a function of argv, environment and output streams, so that
// tests run them in-process; src/admin/cli.ts is the process entry.
// --json prints exactly one JSON document; a refusal exits 1 with a one-line reason on stderr.
import os from 'node:os';
import fs from 'node:fs';
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig } from '../config.ts';
import { connectDb, type Db } from '../storage/db.ts';
import { connectRedis, type RedisClient } from '../storage/redis.ts';
import { markState, readArtifactStore, type StoreRecord } from '../storage/store-record.ts';
import { DEFAULT_REDIS_PREFIX } from '../storage/redis-keys.ts';
import { clientArtifacts } from '../storage/client-artifacts.ts';
import { lockHolder } from '../storage/embedded-lock.ts';
import { AppError, InputError } from '../errors.ts';
import { escapeUnsafeJson, escapeUnsafeText } from '../text.ts';
import * as commands from './commands.ts';
import * as installationCommands from './installation-commands.ts';
import * as cimdCommands from './cimd-commands.ts';
import * as directoryCommands from './directory-commands.ts';
import { registryOnly } from './directory-commands.ts';
import { startWebhookQueue, type WebhookQueue } from '../webhooks/queue.ts';
import { webhookOutbox } from '../webhooks/outbox.ts';
import type { AdminContext } from './commands.ts';
import { createDataCipher } from '../storage/data-encryption.ts';
import { uncachedRecords } from '../storage/record-cache.ts';
import { passwordHashing, type PasswordHashing } from '../accounts/password.ts';
import { askServer, channelPath } from './channel.ts';
import { ADMIN_COMMAND } from '../admin-command.ts';
import { describeDuration } from '../durations.ts';
import { DEFAULT_ROTATION_DELAY, ID_TOKEN_TTL, MAX_ROTATION_DELAY } from '../oauth/signing-keys.ts';
import type { Clock } from '../clock.ts';

class Refusal extends Error {}
/** The running server answered the command (src/admin/channel.ts): its output is printed, its exit code returned. */
class Forwarded extends Error {
  constructor(readonly code: number) {
    super('forwarded');
  }
}

/** How the scripts are run: by an operator (default), or inside the running embedded server for its channel. */
export interface AdminMode {
  /** The server's own database connection: only read-only commands run (src/admin/channel.ts). */
  serverDb?: Db;
}

interface Session extends AdminContext {
  passwords: PasswordHashing;
  close(): Promise<void>;
}

export interface AdminIo {
  env: Record<string, string | undefined>;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Standard input, for `users create --password-stdin`; absent when there is none to read. */
  stdin?(): Promise<string>;
  /** The time the commands decide by (the machine's; tests hand the servers' moved clock). */
  clock?: Clock;
  /** All of standard input, for `clients set-keys --jwks -`. */
  stdinText?(): Promise<string>;
}

/** The settings naming the servers' Redis, by the mode they recorded. */
const REDIS_SETTINGS = { single: 'REDIS_URL', cluster: 'REDIS_CLUSTER_NODES', sentinel: 'REDIS_SENTINELS and REDIS_SENTINEL_NAME' } as const;

/**
 * Refuses when the servers recorded a Redis (src/storage/store-record.ts) this process has not got:
 * none configured, or one without the servers' mark (another Redis, another database number, or
 * theirs after it lost its data and before a running server put the mark back: within 5 s).
 */
async function assertStoresReachable(record: StoreRecord | undefined, redis: RedisClient | undefined): Promise<void> {
  if (record?.kind !== 'redis') return;
  const mode = record.redisMode ?? 'single';
  const servers = `the servers keep tokens in Redis (${mode})`;
  if (!redis) throw new Refusal(`${servers} and REDIS_URL is not set here (nor REDIS_CLUSTER_NODES or REDIS_SENTINELS): run with the servers' Redis settings; nothing was changed`);
  const state = await markState(redis, record);
  const settings = REDIS_SETTINGS[mode];
  if (state === 'missing') {
    throw new Refusal(
      `${servers}, and the Redis of ${settings} here is not theirs or has lost their mark: check that ${settings} is the servers' (same host, port and database number), that a server is running (it puts the mark back within 5 seconds of Redis returning from a restart), then try again; nothing was changed`,
    );
  }
  if (state === 'other') {
    throw new Refusal(
      `${servers}, and the Redis of ${settings} here is not theirs (it holds another mark): check that ${settings} and the database here (DATABASE_URL or DATA_DIR) are those of the same servers, then try again in a few seconds; nothing was changed`,
    );
  }
}

/**
 * While a server holds the embedded database: a read-only command goes to it over its channel
 * (its answer printed here); a change is refused, naming what to do.
 */
async function throughRunningServer(env: AdminIo['env'], argv: string[], readOnly: boolean, io: AdminIo): Promise<void> {
  const config = loadConfig(env);
  if (config.databaseUrl) return;
  const pid = lockHolder(config.dataDir);
  if (!pid) return;
  if (!readOnly) {
    throw new Refusal(
      `the server (pid ${pid}) is using the embedded database in ${config.dataDir}: stop it (Ctrl-C) to make changes, or run both on PostgreSQL (DATABASE_URL); nothing was changed (read-only commands such as clients list work while it runs)`,
    );
  }
  const answer = await askServer(config.dataDir, argv);
  if (!answer) throw new Refusal(`the server (pid ${pid}) holds the embedded database in ${config.dataDir} but did not answer on ${channelPath(config.dataDir)}: try again once it has started, or stop it`);
  io.stdout(answer.stdout);
  io.stderr(answer.stderr);
  throw new Forwarded(answer.code);
}

async function open(env: AdminIo['env'], reason: string | undefined, mode: AdminMode, clock?: Clock): Promise<Session> {
  const config = loadConfig(env);
  // Inside the server: its connection (kept open), and no Redis (read-only commands need none).
  const db = mode.serverDb ?? connectDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: 2 });
  const redis = config.redis && !mode.serverDb ? connectRedis(config.redis) : undefined;
  // Under the servers' key prefix (a test server's own one, say), as they recorded it.
  const record = await readArtifactStore(db).catch(async (err) => {
    redis?.disconnect();
    if (!mode.serverDb) await db.destroy();
    throw err;
  });
  // Changes of a client with a webhook URL queue their events; the queue starts only then, and
  // without a worker: the server's instances deliver.
  let queue: Promise<WebhookQueue> | undefined;
  const outbox = webhookOutbox(db, () => (queue = startWebhookQueue(db, { supervise: false, retryBaseSeconds: config.webhookRetryBaseSeconds, onError: () => {} })));
  return {
    db,
    outbox,
    // No cache here: reads go to the database, changes are announced to the servers.
    records: uncachedRecords(),
    // At the servers' cost (PASSWORD_HASH_LOG_N).
    passwords: passwordHashing({ logN: config.passwordHashLogN }),
    artifacts: clientArtifacts(db, redis, record?.redisPrefix ?? DEFAULT_REDIS_PREFIX),
    assertStoresReachable: () => assertStoresReachable(record, redis),
    by: { actor: `operator:${os.userInfo().username}`, reason },
    production: config.env === 'production',
    allowLoopback: config.webhookAllowLoopback,
    resourceUriAllowLoopback: config.resourceUriAllowLoopback,
    jwksUriAllowLoopback: config.cimd.allowLoopback,
    cipher: createDataCipher(config.dataEncryptionKeys),
    clock,
    async close() {
      outbox.close();
      await (await queue?.catch(() => undefined))?.stop({ graceful: false });
      redis?.disconnect();
      if (!mode.serverDb) await db.destroy();
    },
  };
}

// Stored values (client names written before the rule existed, say) must not forge lines such as
// `status: approved` or reach the terminal as escape sequences: they are printed escaped.
const show = (value: unknown) => escapeUnsafeText(String(value));

/** Readable text: `key: value` lines, lists as `- item`, nested objects indented. */
function printText(value: unknown, indent = ''): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return `${indent}(none)`;
    return value
      .map((v) => (v && typeof v === 'object' ? `${indent}- ${printText(v, `${indent}  `).trimStart()}` : `${indent}- ${show(v)}`))
      .join('\n');
  }
  if (value && typeof value === 'object') {
    return Object.entries(value)
      // An empty list on its key's line ("optional_scopes: (none)"): every line stays a field.
      .map(([k, v]) => (Array.isArray(v) && v.length === 0 ? `${indent}${show(k)}: (none)` : v && typeof v === 'object' ? `${indent}${show(k)}:\n${printText(v, `${indent}  `)}` : `${indent}${show(k)}: ${show(v)}`))
      .join('\n');
  }
  return `${indent}${show(value)}`;
}

/** `--jwks FILE`: the file's text; `-`: all of standard input. Refused with the reason, never a stack. */
async function keySetText(file: string, io: AdminIo): Promise<string> {
  if (file === '-') {
    if (!io.stdinText) throw new InputError('--jwks -: there is no standard input to read');
    return io.stdinText();
  }
  try {
    const { size } = await fs.promises.stat(file);
    // Far over any key set: refused without reading it (src/clients/keys.ts words the bound).
    if (size > 1024 * 1024) throw new InputError(`--jwks ${file}: the file is not a key set (${size} bytes)`);
    return await fs.promises.readFile(file, 'utf8');
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new InputError(`--jwks ${file}: the file cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** --password P, or --password-stdin: the first line of standard input, kept out of shell history. */
async function passwordOf(opts: { password?: string; passwordStdin?: boolean }, io: AdminIo): Promise<string> {
  if ((opts.password === undefined) === !opts.passwordStdin) throw new InputError('give exactly one of --password or --password-stdin');
  if (opts.password !== undefined) return opts.password;
  if (!io.stdin) throw new InputError('--password-stdin: there is no standard input to read');
  const password = (await io.stdin()).split(/\r?\n/)[0]!;
  if (!password) throw new InputError('--password-stdin: standard input has an empty password');
  return password;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** One line per row under a header, columns padded; the last column (a name) is left free. */
function table(headers: string[], rows: unknown[][]): string {
  if (rows.length === 0) return '(none)';
  const cells = [headers, ...rows.map((r) => r.map(show))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  return cells.map((r) => r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i]!) : c)).join('  ')).join('\n');
}

type ClientRow = { client_id: string; status: string; kind: string; scopes: string[]; name: string | null };
type DocumentRow = { client_id: string; status: string; host_blocked: boolean; users: number; host: string | null; pending_change: { status: string } | null };
const documentStatus = (c: DocumentRow) => `${c.status}${c.pending_change?.status === 'pending' ? ' (change pending)' : ''}${c.host_blocked ? ' (host blocked)' : ''}`;
const documentTable = ({ clients }: { clients: DocumentRow[] }) =>
  table(['STATUS', 'USERS', 'HOST', 'CLIENT'], clients.map((c) => [documentStatus(c), c.users, c.host ?? '(registered by itself)', c.client_id]));
type UserRow = { id: number; email: string; username: string; admin: boolean; name: string; source: string[] };
const clientTable = ({ clients }: { clients: ClientRow[] }) =>
  table(['ID', 'STATUS', 'KIND', 'SCOPES', 'NAME'], clients.map((c) => [c.client_id, c.status, c.kind, c.scopes.join(',') || '-', c.name ?? '-']));
const userTable = ({ users }: { users: UserRow[] }) =>
  table(['ID', 'EMAIL', 'USERNAME', 'ADMIN', 'SOURCE', 'NAME'], users.map((u) => [u.id, u.email, u.username, u.admin ? 'yes' : 'no', u.source.join('+') || '-', u.name]));

type OrgRow = { id: number; app_policy: string; members: number; teams: number; name: string };
const orgTable = ({ organizations }: { organizations: OrgRow[] }) =>
  table(['ID', 'POLICY', 'MEMBERS', 'TEAMS', 'NAME'], organizations.map((o) => [o.id, o.app_policy, o.members, o.teams, o.name]));
type InstallationRow = { id: number; client_id: string; org_id: number; team_ids: number[]; scopes: string[]; status: string; installed_by: number | null };
const installationTable = ({ installations }: { installations: InstallationRow[] }) =>
  table(
    ['ID', 'ORG', 'STATUS', 'TEAMS', 'SCOPES', 'BY', 'CLIENT'],
    installations.map((i) => [i.id, i.org_id, i.status, i.team_ids.join(',') || '-', i.scopes.join(',') || '-', i.installed_by ?? 'operator', i.client_id]),
  );

type KeyRow = { kid: string; state: string; created_at: string; sign_from: string; retire_after: string | null };
const keyTable = ({ keys: rows }: { keys: KeyRow[] }) =>
  table(['KID', 'STATE', 'PUBLISHED', 'SIGNS FROM', 'RETIRES'], rows.map((k) => [k.kid, k.state, k.created_at, k.sign_from, k.retire_after ?? '-']));
const rotationText = (r: Awaited<ReturnType<typeof commands.keysRotate>>) =>
  [
    `new signing key ${show(r.kid)}: published now by every running instance (jwks_uri), signs from ${r.sign_from}`,
    ...r.replaced.map((k) => `key ${show(k.kid)} signs until then and stays published until ${k.retire_after}`),
    ...(r.removed.length ? [`removed retired key${r.removed.length === 1 ? '' : 's'} ${r.removed.map(show).join(', ')}`] : []),
  ].join('\n');

/** Only the secret's hash is stored: the operator must copy it now, so say so next to it. */
const withSecretNote = (result: { client_secret?: string }) =>
  printText(result.client_secret === undefined ? result : { ...result, client_secret: `${result.client_secret}  (shown only once)` });

const withSigningSecretNote = (result: { signing_secret?: string }) =>
  printText(result.signing_secret === undefined ? result : { ...result, signing_secret: `${result.signing_secret}  (shown only once)` });

/** `clients set-webhook --json`: "signing_secret" (docs/webhooks.md), and its old name "webhook_secret" until the next release. */
const withDeprecatedSecretName = (result: { signing_secret?: string }) => (result.signing_secret === undefined ? result : { ...result, webhook_secret: result.signing_secret });

/** approve / reject / suspend in text mode: one line saying what happened (or that nothing did). */
function statusOutcome(r: Awaited<ReturnType<typeof commands.clientsChangeStatus>>, effect: string): string {
  const who = `client ${show(r.client.client_id)} ("${show(r.client.name)}")`;
  if (!r.changed) return `${who} is already ${r.client.status}: nothing changed`;
  return `${r.client.status === 'approved' && r.from === 'suspended' ? 'reinstated' : r.client.status} ${who}: ${effect}`;
}

const EXAMPLES = `
Examples:
  ${ADMIN_COMMAND} clients list
  ${ADMIN_COMMAND} clients create --name "My app" --redirect-uri https://app.example/callback --scope PROFILE_READ,BOOKING_READ
  ${ADMIN_COMMAND} clients approve CLIENT_ID --reason "reviewed"
  ${ADMIN_COMMAND} users set-admin you@example.com
  ${ADMIN_COMMAND} users set-password demo@example.com --password-stdin
  ${ADMIN_COMMAND} --json clients show CLIENT_ID

On the embedded database, read-only commands (list, show) work while npm start runs; changes need it stopped.`;

function buildProgram(io: AdminIo, argv: string[], mode: AdminMode): Command {
  const program = new Command(ADMIN_COMMAND)
    .description('Operator scripts of the OAuth authorization server')
    .addHelpText('after', EXAMPLES)
    .option('--json', 'print exactly one JSON document')
    .option('--reason <text>', 'why: recorded in the audit trail with the change')
    .exitOverride()
    // --json and --reason work after any subcommand: list them in its help too.
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });

  /**
   * Runs a command against storage and prints its result as JSON or text. `readOnly` commands
   * also run while the embedded server holds the database (through it); the others refuse then.
   */
  function action<A extends unknown[], R>(
    run: (ctx: Session, ...args: A) => Promise<R>,
    text: (result: R) => string = printText,
    { readOnly = false, json: jsonOf = (result: R): unknown => result }: { readOnly?: boolean; json?: (result: R) => unknown } = {},
  ) {
    return async (...args: A) => {
      const { json, reason } = program.opts<{ json?: boolean; reason?: string }>();
      if (mode.serverDb && !readOnly) throw new Refusal('the running server takes only read-only commands: stop it to make changes');
      if (!mode.serverDb) await throughRunningServer(io.env, argv, readOnly, io);
      const session = await open(io.env, reason, mode, io.clock);
      try {
        const result = await run(session, ...args);
        io.stdout(json ? `${escapeUnsafeJson(JSON.stringify(jsonOf(result)))}\n` : `${text(result)}\n`);
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
    .option('--password <password>', 'password (at least 8 characters); or use --password-stdin')
    .option('--password-stdin', 'read the password from the first line of standard input (keeps it out of shell history)')
    .option('--name <name>', 'display name')
    .option('--username <username>', 'username (unique; default: the part of the email before @)')
    .option('--time-zone <tz>', 'IANA time zone', 'UTC')
    .action(
      action(async (ctx, { passwordStdin, ...opts }: Omit<commands.UsersCreateOptions, 'password'> & { password?: string; passwordStdin?: boolean }) =>
        commands.usersCreate(ctx, { ...opts, password: await passwordOf({ ...opts, passwordStdin }, io) }),
      ),
    );

  users
    .command('set-admin <email>')
    .description('let a user review clients on /admin/oauth-clients (--revoke to take it back)')
    .option('--revoke', 'take the administrator flag away')
    .action(action((ctx, email: string, opts: { revoke?: boolean }) => commands.usersSetAdmin(ctx, email, opts)));
  users
    .command('set-password <user>')
    .description('set a new password for a user (id or e-mail), e.g. a lost demo password; their sign-in sessions end')
    .option('--password <password>', 'the new password (at least 8 characters); or use --password-stdin')
    .option('--password-stdin', 'read the password from the first line of standard input (keeps it out of shell history)')
    .action(action(async (ctx, user: string, opts: { password?: string; passwordStdin?: boolean }) => commands.usersSetPassword(ctx, user, await passwordOf(opts, io))));
  users
    .command('list')
    .description('list users: id, email, username, administrator flag, source (local: a password here; upstream: linked to an upstream account; both), name')
    .action(action((ctx) => commands.usersList(ctx), userTable, { readOnly: true }));
  users
    .command('link <user>')
    .description('link a user (id or e-mail) to an upstream account: they sign in with it (docs/accounts.md); replaces their link to that issuer')
    .requiredOption('--issuer <issuer>', "the upstream's issuer (UPSTREAM_ISSUER)")
    .requiredOption('--subject <subject>', "the account's subject at the upstream (its ID token's sub)")
    .action(action((ctx, user: string, opts: { issuer: string; subject: string }) => commands.usersLink(ctx, user, opts)));
  users
    .command('unlink <user>')
    .description("remove a user's upstream links (without a password they cannot sign in until linked again or given one)")
    .action(action((ctx, user: string) => commands.usersUnlink(ctx, user)));

  const clients = program.command('clients').description('manage OAuth clients');
  clients
    .command('create')
    .description('register a client; it starts as pending')
    .requiredOption('--name <name>', 'client name shown on the consent page')
    .option('--redirect-uri <uri>', 'redirect URI (repeat for more, at most 10); required unless --resource-server', collect)
    .option('--scope <scopes>', 'scope(s), space- or comma-separated (repeatable); required unless --legacy or --resource-server; for a resource server, the tokens it may introspect', collect)
    .option('--public', 'a public client (PKCE, no secret)')
    .option('--legacy', 'a legacy client created before scopes existed')
    .option('--resource-server', 'an API or gateway that introspects other clients\' access tokens (RFC 7662) and obtains none itself')
    .option('--policy-uri <url>', "the app's privacy policy, linked on the consent page (https, or http on localhost)")
    .option('--tos-uri <url>', "the app's terms of service, linked on the consent page (https, or http on localhost)")
    .option('--resource-uri <uri>', 'with --resource-server: the resource it serves (RFC 8707), an https URL; tokens asked for it carry it as audience (default: the platform API)')
    .option('--owner <user>', 'a user (id or e-mail) who manages the app in the developer settings, as if they had registered it')
    .option('--auth <method>', 'client_secret_basic (default: a secret is issued) or private_key_jwt (keys instead: give --jwks-uri or --jwks; no secret is issued)')
    .option('--jwks-uri <url>', 'with --auth private_key_jwt: where the app publishes its public keys (https)')
    .option('--jwks <file>', 'with --auth private_key_jwt: the key set itself, a JWKS file of public keys ("-": standard input)')
    .action(
      action(
        async (ctx, opts: commands.ClientsCreateOptions) => commands.clientsCreate(ctx, { ...opts, ...(opts.jwks !== undefined ? { jwks: await keySetText(opts.jwks, io) } : {}) }),
        withSecretNote,
      ),
    );
  for (const [name, what, effect] of [
    ['approve', 'approve a pending client, or reinstate a suspended one (already approved: no change); for a metadata-document or registered client (its URL or id), the full tier', 'users can now authorize it'],
    ['reject', 'reject a pending client (already rejected: no change); a metadata-document or registered client (its URL or id) is refused from then on, its tokens revoked', 'it cannot be authorized'],
    ['suspend', 'suspend an approved registry client: its codes, tokens and grants stop working at once (already suspended: no change); a metadata-document or registered client is rejected instead', 'its codes, tokens and grants stopped working'],
  ] as const) {
    clients
      .command(`${name} <id>`)
      .description(what)
      .action(
        action(
          (ctx, id: string) => directoryCommands.clientsDecide(ctx, id, name),
          (r) => ('document' in r ? printText(r.document) : statusOutcome(r, effect)),
          { json: (r) => ('document' in r ? r.document : r.client) },
        ),
      );
  }
  for (const [name, approve, what] of [
    ['approve-change', true, "approve a client's pending change: what an approved metadata-document or registered client (its URL or id) asks for beyond its approval, or a registry client's owner's widening edit"],
    ['reject-change', false, "reject a client's pending change: the client keeps what was approved (a metadata document asking for the same again is not shown again)"],
  ] as const) {
    clients
      .command(`${name} <id>`)
      .description(what)
      .action(action((ctx, id: string) => directoryCommands.clientsDecideChange(ctx, id, approve), printText));
  }
  clients
    .command('delete <id>')
    .description('delete a client for good: the client, its secrets, its users\' grants and every token it holds (asks for --force, saying what would go)')
    .option('--force', 'delete it (without: nothing changes, and the refusal says what would be removed)')
    .action(
      action(registryOnly('clients delete', (ctx, id: string, opts: { force?: boolean }) => commands.clientsDelete(ctx, id, opts)), (r) =>
        `deleted client ${show(r.client_id)} ("${show(r.name)}"): ${r.secrets_removed} secret${r.secrets_removed === 1 ? '' : 's'} and the access of ${r.users_with_access_removed} user${r.users_with_access_removed === 1 ? '' : 's'} removed`,
      ),
    );
  clients
    .command('show <id>')
    .description('show a client and its active secrets (never the secrets themselves); for a metadata-document client (its URL), what its document said when last seen')
    .action(action((ctx, id: string) => directoryCommands.clientsShow(ctx, id), printText, { readOnly: true }));
  clients
    .command('list')
    .description('list clients')
    .option('--status <status>', 'only clients in this status (pending, approved, rejected, suspended; unreviewed for metadata-document and registered clients)')
    .option('--kind <kind>', 'registry (default), metadata_document, registered, or all')
    .action(action((ctx, opts: { status?: string; kind?: string }) => directoryCommands.clientsList(ctx, opts), clientTable, { readOnly: true }));
  clients
    .command('list-documents')
    .description('list clients known by a metadata document URL (docs/agents.md), unreviewed first')
    .option('--status <status>', 'only clients in this status (unreviewed, approved, rejected)')
    .action(action((ctx, opts: { status?: string }) => cimdCommands.cimdList(ctx, opts.status), documentTable, { readOnly: true }));
  clients
    .command('rename <id> <name>')
    .description('change the name shown on the consent page (same rules as at creation)')
    .action(action(registryOnly('clients rename', (ctx, id: string, name: string) => commands.clientsRename(ctx, id, name))));
  clients
    .command('set-scopes <id> <scopes...>')
    .description("replace the client's scopes (names separated by spaces or commas)")
    .option('--force', 'apply even though the legacy migration guard refuses (users on the old URL will fail)')
    .option('--optional <scopes>', 'scope(s), among those set, that the user may untick on the consent page (repeatable); without it, every scope is required', collect)
    .action(action(registryOnly('clients set-scopes', (ctx, id: string, scopes: string[], opts: { force?: boolean; optional?: string[] }) => commands.clientsSetScopes(ctx, id, scopes, opts))));
  clients
    .command('set-rate-limit <id> <per-minute>')
    .description('token, revocation and introspection requests per minute this client may make once authenticated ("default": the server\'s)')
    .action(action(registryOnly('clients set-rate-limit', (ctx, id: string, perMinute: string) => commands.clientsSetRateLimit(ctx, id, perMinute))));
  clients
    .command('set-refresh-grace <id> <seconds>')
    .description('seconds within which a retried refresh gets the same answer, 0 to 60 (0: off; "default": REFRESH_GRACE_SECONDS, at most 2 for public clients)')
    .action(action(registryOnly('clients set-refresh-grace', (ctx, id: string, seconds: string) => commands.clientsSetRefreshGrace(ctx, id, seconds))));
  clients
    .command('set-keys <id>')
    .description("authenticate with keys instead of a secret (private_key_jwt, RFC 7523; docs/private-key-jwt.md): the client's public keys, published at a URL or given as a key set; its secrets are revoked. --none: back to a secret (then generate one)")
    .option('--jwks-uri <url>', 'where the app publishes its public keys (https); fetched when needed, so keys rotated there work at once')
    .option('--jwks <file>', 'the key set itself, a JWKS file of public keys ("-": standard input)')
    .option('--none', 'remove the keys: the client authenticates with a secret again (it has none until one is generated)')
    .action(
      action(
        registryOnly('clients set-keys', async (ctx, id: string, opts: { jwksUri?: string; jwks?: string; none?: boolean }) =>
          commands.clientsSetKeys(ctx, id, { ...opts, ...(opts.jwks !== undefined ? { jwks: await keySetText(opts.jwks, io) } : {}) }),
        ),
      ),
    );
  clients
    .command('set-dpop <id> <on|off>')
    .description('on: every token request of this client must carry a DPoP proof, so all its tokens are bound to a key (RFC 9449 5.2; docs/dpop.md)')
    .action(action((ctx, id: string, setting: string) => commands.clientsSetDpop(ctx, id, setting)));
  clients
    .command('set-par <id> <on|off>')
    .description('on: every authorization request of this client must be pushed first (RFC 9126 pushed authorization requests; docs/par.md): one without a request_uri is refused')
    .action(action((ctx, id: string, setting: string) => commands.clientsSetPar(ctx, id, setting)));
  clients
    .command('set-high-trust <id> <on|off>')
    .description('on: the client is held to the high-trust profile (FAPI 2.0 Security Profile; docs/security.md): pushed authorization requests, PKCE, DPoP-bound tokens and private_key_jwt required, each refusal naming what is missing. A confidential client with keys only')
    .action(action((ctx, id: string, setting: string) => directoryCommands.clientsSetHighTrust(ctx, id, setting)));
  clients
    .command('add-redirect-uri <id> <uri>')
    .description('register one more redirect URI (at most 10)')
    .action(action(registryOnly('clients add-redirect-uri', (ctx, id: string, uri: string) => commands.clientsAddRedirectUri(ctx, id, uri))));
  clients
    .command('remove-redirect-uri <id> <uri>')
    .description('remove a redirect URI (a client keeps at least one)')
    .action(action(registryOnly('clients remove-redirect-uri', (ctx, id: string, uri: string) => commands.clientsRemoveRedirectUri(ctx, id, uri))));

  clients
    .command('set-webhook <id> [url]')
    .description('set the URL the server posts signed events to (a public address; https in production), or remove it with --clear; the first URL gets a signing secret, printed once')
    .option('--new-secret', 'make a new signing secret (printed once); the previous one keeps signing for 24 hours')
    .option('--clear', 'remove the webhook URL: no more events are sent')
    .action(action(registryOnly('clients set-webhook', (ctx, id: string, url: string | undefined, opts: { clear?: boolean; newSecret?: boolean }) => commands.clientsSetWebhook(ctx, id, url, opts)), withSigningSecretNote, { json: withDeprecatedSecretName }));

  const orgs = program.command('orgs').description('manage organizations and their members (docs/organizations.md)');
  orgs
    .command('create')
    .description('create an organization (app policy: allow)')
    .requiredOption('--name <name>', 'organization name')
    .option('--logo-url <url>', 'logo shown on the consent page (https, or http on localhost)')
    .action(action((ctx, opts: { name: string; logoUrl?: string }) => commands.orgsCreate(ctx, opts)));
  orgs
    .command('add-member <org> <user>')
    .description("add a user (id or e-mail) to an organization, or change their role there")
    .option('--role <role>', 'owner, admin or member', 'member')
    .action(action((ctx, org: string, user: string, opts: { role: string }) => commands.orgsAddMember(ctx, org, user, opts)));
  orgs
    .command('set-app-policy <org> <policy>')
    .description('allow: members authorize apps within their rights; approval: only apps an admin installed (grants of other apps end); block: none (every installation removed, every grant bound to the organization ends)')
    .action(action((ctx, org: string, policy: string) => installationCommands.orgsSetAppPolicyWithEffects(ctx, org, policy)));
  orgs
    .command('remove-member <org> <user>')
    .description("remove a user (id or e-mail) from an organization and its teams: their grants bound to it end at once")
    .action(action((ctx, org: string, user: string) => installationCommands.orgsRemoveMember(ctx, org, user)));
  orgs
    .command('list')
    .description('list organizations: id, app policy, members, teams, name')
    .action(action((ctx) => commands.orgsList(ctx), orgTable, { readOnly: true }));
  orgs
    .command('show <org>')
    .description('show an organization with its members and teams')
    .action(action((ctx, org: string) => commands.orgsShow(ctx, org), printText, { readOnly: true }));

  const teams = program.command('teams').description('manage teams and their members');
  teams
    .command('create')
    .description("create a team, in an organization or in none")
    .requiredOption('--name <name>', 'team name')
    .option('--org <org>', 'the organization (id) the team belongs to')
    .action(action((ctx, opts: { name: string; org?: string }) => commands.teamsCreate(ctx, opts)));
  teams
    .command('add-member <team> <user>')
    .description("add a user (id or e-mail) to a team, or change their role there; an organization's team takes only its members")
    .option('--role <role>', 'admin or member', 'member')
    .action(action((ctx, team: string, user: string, opts: { role: string }) => commands.teamsAddMember(ctx, team, user, opts)));
  teams
    .command('remove-member <team> <user>')
    .description("remove a user (id or e-mail) from a team: their grants bound to it end at once (unless they reach it as an admin of its organization)")
    .action(action((ctx, team: string, user: string) => installationCommands.teamsRemoveMember(ctx, team, user)));

  const installations = program.command('installations').description("apps installed for organizations");
  installations
    .command('list')
    .description('list installations (active and removed)')
    .option('--org <org>', 'only this organization')
    .option('--client <id>', 'only this client')
    .action(action((ctx, opts: { org?: string; client?: string }) => commands.installationsList(ctx, opts), installationTable, { readOnly: true }));
  installations
    .command('create')
    .description("install an approved app for an organization, on its behalf (or change its active installation: grants beyond the new teams or scopes end)")
    .requiredOption('--org <org>', 'the organization (id)')
    .requiredOption('--client <id>', 'the client (approved)')
    .option('--teams <ids>', 'the teams it may reach: ids, comma-separated (repeatable)', collect)
    .option('--all-teams', 'every team of the organization, including later ones')
    .option('--scope <scopes>', "scope(s) it may use there, space- or comma-separated (repeatable); default: all the client's", collect)
    .action(action((ctx, opts: installationCommands.InstallationsCreateOptions) => installationCommands.installationsCreate(ctx, opts)));
  installations
    .command('remove <id>')
    .description("uninstall: every grant of the app bound to the organization ends at once (already removed: swept again)")
    .action(action((ctx, id: string) => installationCommands.installationsRemove(ctx, id)));

  const hosts = program.command('hosts').description('hosts whose client ID metadata documents are refused (docs/agents.md)');
  hosts
    .command('block <host>')
    .description('refuse every client whose document this domain or a name under it serves, on any port, now and later (their tokens revoked); e.g. agent.example.com (a public suffix such as github.io is refused)')
    .action(action((ctx, host: string) => cimdCommands.hostsBlock(ctx, host)));
  hosts
    .command('unblock <host>')
    .description('accept documents from this host again (its clients start unreviewed or as decided before)')
    .action(action((ctx, host: string) => cimdCommands.hostsUnblock(ctx, host)));
  hosts
    .command('list')
    .description('list blocked hosts')
    .action(action((ctx) => cimdCommands.hostsList(ctx), ({ hosts: rows }) => table(['HOST', 'COVERS', 'BLOCKED BY', 'REASON'], rows.map((h) => [h.host, h.covers, h.blocked_by, h.reason ?? '-'])), { readOnly: true }));

  const keys = program.command('keys').description('the token-signing keys (jwks_uri) and the keys that encrypt stored secrets (DATA_ENCRYPTION_KEYS)');
  keys
    .command('reencrypt')
    .description('re-encrypt every token-signing key and webhook secret under the first DATA_ENCRYPTION_KEYS key, so older keys can be removed')
    .action(action((ctx) => commands.keysReencrypt(ctx)));
  keys
    .command('rotate')
    .description(`make a new token-signing key: published by every running instance at once, signing after --delay; the one it replaces stays published until what it signed has expired (${describeDuration(ID_TOKEN_TTL)} after), then goes`)
    .option('--delay <duration>', `how long the new key is published before it signs (0s to ${describeDuration(MAX_ROTATION_DELAY)}), so that apps and gateways caching the key set fetch it first`, describeDuration(DEFAULT_ROTATION_DELAY))
    .action(action((ctx, opts: { delay: string }) => commands.keysRotate(ctx, opts), rotationText));
  keys
    .command('list')
    .description('list the token-signing keys: kid, state (next, signing, retiring, retired), when each was published, signs from and leaves the key set; never key material')
    .action(action((ctx) => commands.keysList(ctx), keyTable, { readOnly: true }));

  const secrets = program.command('secrets').description("manage a confidential client's secrets (at most 2 active)");
  secrets
    .command('generate <id>')
    .description('generate a new secret, shown once; refused while 2 are active')
    .option('--expires-in <duration>', 'its lifetime (90s, 12h, 90d; at most 730d); by default it lasts until revoked')
    .action(action(registryOnly('secrets generate', (ctx, id: string, opts: { expiresIn?: string }) => commands.secretsGenerate(ctx, id, opts)), withSecretNote));
  secrets
    .command('rotate <id>')
    .description('rotate with overlap: a new secret now, shown once; the current one expires by itself after the overlap (refused while 2 are active)')
    .requiredOption('--overlap <duration>', 'how long the current secret keeps working (0s to 7d; 0s revokes it at once)')
    .option('--expires-in <duration>', "the new secret's lifetime (at most 730d); by default it lasts until revoked or rotated")
    .action(action(registryOnly('secrets rotate', (ctx, id: string, opts: { overlap: string; expiresIn?: string }) => commands.secretsRotate(ctx, id, opts)), withSecretNote));
  secrets
    .command('revoke <id> <secret-id>')
    .description('revoke a secret; requests with it are refused from now on (one used in the last 10 minutes needs --force)')
    .option('--force', 'revoke even if the app used the secret in the last 10 minutes')
    .action(action(registryOnly('secrets revoke', (ctx, id: string, secretId: string, opts: { force?: boolean }) => commands.secretsRevoke(ctx, id, secretId, opts))));
  secrets
    .command('list <id>')
    .description('list active secrets (ids, dates and expiry, never the secrets)')
    .action(action(registryOnly('secrets list', (ctx, id: string) => commands.secretsList(ctx, id)), printText, { readOnly: true }));

  return program;
}

/**
 * A deliberate refusal: our errors that carry their HTTP meaning (bad input, not found, a conflict,
 * a limit, not allowed: src/errors.ts), the scripts' own, and the configuration's.
 */
const isRefusal = (err: unknown) => err instanceof AppError || err instanceof Refusal || err instanceof ConfigError;

/** Runs the operator scripts with these arguments (after `admin`); resolves to the exit code. */
export async function runAdmin(argv: string[], io: AdminIo, mode: AdminMode = {}): Promise<number> {
  // Subcommands inherit exitOverride and the output streams: commander's exits become return values.
  const program = buildProgram(io, argv, mode);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof Forwarded) return err.code;
    let message: string;
    let code = 1;
    if (err instanceof CommanderError) {
      // Help exits 0; usage errors were already printed by commander.
      if (err.exitCode === 0) return 0;
      code = err.exitCode;
      message = err.code === 'commander.help' ? `no command given: see ${ADMIN_COMMAND} --help` : err.message.replace(/^error: /, '');
    } else {
      // A refusal says what happened and what to do; anything else is a failure nobody meant
      // (a bug, the database down) and says so.
      message = isRefusal(err) ? (err as Error).message : `unexpected failure: ${(err as Error).message}`;
      // Messages can quote input (a redirect URI, an email): escaped, the reason stays one line.
      io.stderr(`error: ${escapeUnsafeText(message)}\n`);
    }
    // A script reading --json output gets one document on failure too.
    if (program.opts().json) io.stdout(`${escapeUnsafeJson(JSON.stringify({ error: { message } }))}\n`);
    return code;
  }
}
