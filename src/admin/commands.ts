// The operator scripts' actions (docs/operations.md): plain functions over the service layer that return
// the JSON documents the CLI prints. Tests call these same functions.
import { linkUpstream, unlinkUpstream } from '../accounts/upstream-links.ts';
import { migrateLatest, type Db } from '../storage/db.ts';
import { createUser, MIN_PASSWORD_LENGTH, setAdmin, type PasswordDeps } from '../accounts/store.ts';
import {
  addRedirectUri,
  createClient,
  generateSecret,
  getClient,
  listActiveSecrets,
  listClients,
  removeRedirectUri,
  renameClient,
  revokeSecret,
  rotateSecret,
  MAX_ROTATION_OVERLAP_SECONDS,
  MAX_SECRET_LIFETIME_SECONDS,
  setClientScopes,
  setClientRateLimit,
  setClientRefreshGrace,
  setClientDpopRequired,
  setClientParRequired,
  setClientHighTrust,
  setClientKeys,
  setClientStatus,
  sweepClient,
  deleteClient,
  type ClientDeps,
} from '../clients/service.ts';
import { usersWithGrants } from '../clients/repository.ts';
import { hasSecrets, type Actor, type ClientKind, type ClientRecord } from '../clients/model.ts';
import { CLIENT_STATUSES, type ClientStatus } from '../directory/status.ts';
import { migrationStatus } from '../clients/legacy.ts';
import { decideChange, pendingChangeOf } from '../clients/changes.ts';
import { parseScopeArgs } from '../scopes.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { parseDuration } from '../durations.ts';
import { MAX_INTEGER_ID, parseIntegerId } from '../ids.ts';
import { recordAudit } from '../audit.ts';
import { regenerateWebhookSecret, setWebhookUrl } from '../clients/webhook-settings.ts';
import { reencryptWebhookSecrets } from '../webhooks/secrets.ts';
import { DEFAULT_ROTATION_DELAY, ID_TOKEN_TTL, listSigningKeys, MAX_ROTATION_DELAY, reencryptSigningKeys, rotateSigningKey } from '../oauth/signing-keys.ts';
import type { Clock } from '../clock.ts';
import type { DataCipher } from '../storage/data-encryption.ts';
import { validateClientLink } from '../clients/validate.ts';
import type { KeysInput } from '../clients/keys.ts';
import { judgedClientKeys } from '../cimd/fetch.ts';
import * as orgs from '../orgs/store.ts';
import { grantBindings } from '../orgs/bindings.ts';
import { memberDemoted, type InstallationDeps } from '../orgs/installations.ts';
import { isOrgAdmin, ORG_ROLES, TEAM_ROLES, type Installation, type OrgRole, type Organization, type Team, type TeamRole } from '../orgs/model.ts';

/** What every command runs against: storage, and who is acting (for the audit trail). */
export interface AdminContext extends ClientDeps {
  by: Actor;
  /** NODE_ENV=production: webhook URLs must be https. */
  production?: boolean;
  /**
   * Refuses, before anything changes, when this process cannot reach every store the servers keep
   * tokens in (their Redis, say): a status change or a secret revocation would half happen.
   * Absent where the context has the servers' own storage (tests, the pages).
   */
  assertStoresReachable?(): Promise<void>;
  /** WEBHOOK_ALLOW_LOOPBACK=true (development): webhook URLs may point to this machine's loopback. */
  allowLoopback?: boolean;
  /** RESOURCE_URI_ALLOW_LOOPBACK=true (development): a resource server's URI may be http on this machine's loopback. */
  resourceUriAllowLoopback?: boolean;
  /** CIMD_ALLOW_LOOPBACK=true (development): a client's jwks_uri may be http on 127.0.0.1, as the provider's fetch allows. */
  jwksUriAllowLoopback?: boolean;
  /** DATA_ENCRYPTION_KEYS: for the commands that write or re-encrypt stored secrets. */
  cipher?: DataCipher;
  /** The time `keys rotate` and `keys list` decide by (src/clock.ts); tests hand the servers' moved one. */
  clock?: Clock;
}

export function clientJson(client: ClientRecord) {
  return {
    client_id: client.clientId,
    name: client.name,
    status: client.status,
    kind: client.kind,
    legacy: client.legacy,
    scopes: client.scopes,
    // Scopes the user may untick on the consent page.
    optional_scopes: client.optionalScopes,
    redirect_uris: client.redirectUris,
    // Token, revocation and introspection requests per minute once authenticated; "default": the server's.
    token_requests_per_minute: client.tokenRequestsPerMinute ?? 'default',
    // Seconds a spent refresh token retried gets the same answer (0: off); "default": the server's, lower for public clients.
    refresh_grace_seconds: client.refreshGraceSeconds ?? 'default',
    // Every token request must carry a DPoP proof (docs/dpop.md).
    dpop_bound_access_tokens: client.dpopBoundAccessTokens === true,
    // Every authorization request must be pushed first (docs/par.md).
    require_pushed_authorization_requests: client.requirePushedAuthorizationRequests === true,
    // Held to the high-trust profile (FAPI 2.0; docs/security.md): PAR, PKCE, DPoP and keys required, whatever the two above say.
    high_trust: client.highTrust === true,
    // How it authenticates: with keys (clients set-keys; docs/private-key-jwt.md), a secret, or not at all (public).
    token_endpoint_auth_method: client.keys ? 'private_key_jwt' : client.kind === 'public' ? 'none' : 'client_secret_basic',
    ...(client.keys ? ('jwksUri' in client.keys ? { jwks_uri: client.keys.jwksUri } : { jwks: client.keys.jwks }) : {}),
    // Shown to users on the consent page; null when not given.
    policy_uri: client.policyUri,
    tos_uri: client.tosUri,
    // The user who manages it in the developer settings; null: operators only.
    owner_user_id: client.ownerUserId,
    // A resource server's resource (RFC 8707): its tokens' audience; null: the platform API.
    ...(client.kind === 'resource_server' ? { resource_uri: client.resourceUri } : {}),
    created_at: client.createdAt.toISOString(),
    updated_at: client.updatedAt.toISOString(),
  };
}

export async function migrate(db: Db) {
  const applied = await migrateLatest(db);
  return { applied };
}

export interface UsersCreateOptions {
  email: string;
  password: string;
  name?: string;
  username?: string;
  timeZone?: string;
}

export async function usersCreate(deps: PasswordDeps, options: UsersCreateOptions) {
  const user = await createUser(deps, options);
  return { id: user.id, email: user.email, username: user.username, name: user.name, time_zone: user.timeZone };
}

export async function usersSetAdmin(ctx: AdminContext, email: string, options: { revoke?: boolean } = {}) {
  const { db, by } = ctx;
  const user = await setAdmin(ctx, email, !options.revoke);
  await recordAudit(db, { actor: by.actor, action: options.revoke ? 'user.admin_revoked' : 'user.admin_granted', userId: user.id, details: by.reason ? { reason: by.reason } : {} });
  return { id: user.id, email: user.email, admin: !options.revoke };
}

/**
 * A new password for a user (id or e-mail), e.g. a lost demo password. Their sign-in sessions end:
 * whoever knew the old password is signed out. Only the hash is stored.
 */
export async function usersSetPassword(ctx: AdminContext & PasswordDeps, userRef: string, password: string) {
  if (password.length < MIN_PASSWORD_LENGTH) throw new InputError(`the password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  const user = await resolveUser(ctx.db, userRef);
  const hash = await ctx.passwords.hash(password);
  const ended = await ctx.db.transaction(async (trx) => {
    await trx('users').where('id', user.id).update({ password_hash: hash, updated_at: trx.fn.now() });
    const sessions = await trx('web_sessions').where('user_id', user.id).delete();
    await recordAudit(trx, { actor: ctx.by.actor, action: 'user.password_set', userId: user.id, details: { sessions_ended: sessions, ...(ctx.by.reason ? { reason: ctx.by.reason } : {}) } });
    return sessions;
  });
  return { id: user.id, email: user.email, password_set: true, sessions_ended: ended };
}

/** Every user, for finding an id or who is an administrator. */
export async function usersList({ db }: AdminContext) {
  const rows = await db('users').orderBy('id').select('id', 'email', 'username', 'name', 'is_admin', db.raw('password_hash is not null as has_password'));
  const links = await db('upstream_links').orderBy(['user_id', 'issuer']).select('user_id', 'issuer', 'subject');
  const linksOf = new Map<number, Array<{ issuer: string; subject: string }>>();
  for (const l of links) linksOf.set(l.user_id, [...(linksOf.get(l.user_id) ?? []), { issuer: l.issuer, subject: l.subject }]);
  return {
    users: rows.map((u) => {
      const upstream = linksOf.get(u.id) ?? [];
      // Where the user signs in from (docs/accounts.md): a password here, an upstream account, or both.
      const source = [...(u.has_password ? ['local'] : []), ...(upstream.length ? ['upstream'] : [])];
      return { id: u.id, email: u.email, username: u.username, name: u.name, admin: u.is_admin === true, source, upstream };
    }),
  };
}

/** `users link`: the user signs in with this upstream account (issuer and subject, as the upstream's ID token says them). */
export async function usersLink(ctx: AdminContext, userRef: string, options: { issuer: string; subject: string }) {
  const user = await resolveUser(ctx.db, userRef);
  await linkUpstream(ctx.db, user.id, options.issuer, options.subject, ctx.by.actor);
  return { id: user.id, email: user.email, issuer: options.issuer, subject: options.subject, linked: true };
}

/** `users unlink`: the user's upstream links go (a user without a password then cannot sign in until linked or given one). */
export async function usersUnlink(ctx: AdminContext, userRef: string) {
  const user = await resolveUser(ctx.db, userRef);
  const removed = await unlinkUpstream(ctx.db, user.id, ctx.by.actor);
  return { id: user.id, email: user.email, links_removed: removed };
}

export interface ClientsCreateOptions {
  name: string;
  redirectUri?: string[];
  scope?: string[];
  public?: boolean;
  legacy?: boolean;
  /** An API or gateway that introspects other clients' tokens; its scopes limit which. */
  resourceServer?: boolean;
  /** A resource server's resource (RFC 8707, docs/resources.md); absent: it serves the platform API. */
  resourceUri?: string;
  /** Links shown to users on the consent page (https, or http on localhost). */
  policyUri?: string;
  tosUri?: string;
  /** A user (id or e-mail) who manages the app in the developer settings, as if they had registered it. */
  owner?: string;
  /** How it authenticates: client_secret_basic (the default: a secret is issued) or private_key_jwt (keys, no secret). */
  auth?: string;
  /** With --auth private_key_jwt: where its public keys are published, or the key set's text. */
  jwksUri?: string;
  jwks?: string;
}

/** `--auth` and the keys of `clients create`: keys for private_key_jwt, none for a secret (docs/private-key-jwt.md). */
async function keysOf(ctx: AdminContext, options: ClientsCreateOptions) {
  const auth = options.auth ?? 'client_secret_basic';
  if (auth !== 'client_secret_basic' && auth !== 'private_key_jwt') throw new InputError('--auth must be client_secret_basic (a secret) or private_key_jwt (keys: --jwks-uri or --jwks)');
  const keysGiven = options.jwksUri !== undefined || options.jwks !== undefined;
  if (auth === 'client_secret_basic') {
    if (keysGiven) throw new InputError('--jwks-uri and --jwks go with --auth private_key_jwt');
    return undefined;
  }
  if (options.public) throw new InputError('a public client does not authenticate: --auth private_key_jwt is for confidential clients and resource servers');
  return judgedKeys(ctx, { jwksUri: options.jwksUri, jwks: options.jwks });
}

/** The keys given, judged; a jwks_uri also fetched now, under the provider's rules (src/cimd/fetch.ts). */
const judgedKeys = (ctx: AdminContext, input: KeysInput) => judgedClientKeys(input, { production: ctx.production === true, allowLoopback: ctx.jwksUriAllowLoopback === true });

function kindOf(options: ClientsCreateOptions): ClientKind {
  if (options.public && options.resourceServer) throw new InputError('choose one of --public and --resource-server');
  if (!options.resourceServer && !options.redirectUri?.length) throw new InputError('--redirect-uri is required (at least one), except with --resource-server');
  return options.resourceServer ? 'resource_server' : options.public ? 'public' : 'confidential';
}

export async function clientsCreate(ctx: AdminContext, options: ClientsCreateOptions) {
  const { by } = ctx;
  const owner = options.owner === undefined ? undefined : await resolveUser(ctx.db, options.owner);
  const { client, secret } = await createClient(
    ctx,
    {
      name: options.name,
      redirectUris: options.redirectUri ?? [],
      scopes: parseScopeArgs(options.scope ?? []),
      kind: kindOf(options),
      legacy: Boolean(options.legacy),
      policyUri: options.policyUri,
      tosUri: options.tosUri,
      resourceUri: options.resourceUri,
      ownerUserId: owner?.id,
      allowLoopback: ctx.resourceUriAllowLoopback === true,
      keys: await keysOf(ctx, options),
    },
    by,
  );
  return {
    ...clientJson(client),
    ...(secret ? { client_secret: secret.value, secret_id: secret.id } : {}),
  };
}

export async function clientsSetStatus(ctx: AdminContext, clientId: string, status: ClientStatus) {
  return (await clientsChangeStatus(ctx, clientId, status)).client;
}

/** The status change and whether it changed anything (`from`: the status before), for the one-line outcome. */
export async function clientsChangeStatus(ctx: AdminContext, clientId: string, status: ClientStatus) {
  const current = await getClient(ctx.db, clientId);
  await ctx.assertStoresReachable?.();
  // Already there: a success like `users set-admin`, so scripts can repeat it (no audit row). A
  // client that is not approved still loses whatever it holds: repeating a suspension is how an
  // operator makes sure, after one run where the tokens were out of reach.
  if (current.status === status) {
    if (status !== 'approved') await sweepClient(ctx, clientId);
    return { client: clientJson(current), from: current.status, changed: false };
  }
  return { client: clientJson(await setClientStatus(ctx, clientId, status, ctx.by)), from: current.status, changed: true };
}

/** An administrator's decision on a registry client's pending change (the review page's), by the client's id. */
export async function clientsDecideChange(ctx: AdminContext, clientId: string, approve: boolean) {
  await getClient(ctx.db, clientId);
  const change = await pendingChangeOf(ctx.db, clientId);
  if (!change) throw new NotFoundError(`client ${clientId} has no pending change`);
  return clientJson(await decideChange(ctx, change.id, approve, ctx.by));
}

/**
 * Deletes a client for good, as its owner can on the developer page: the client, its secrets, its
 * users' grants and every token and code it holds. Like the page (which asks for the name typed),
 * it needs a confirmation: without `force` it refuses, saying what would go.
 */
export async function clientsDelete(ctx: AdminContext, clientId: string, opts: { force?: boolean } = {}) {
  const client = await getClient(ctx.db, clientId);
  const secrets = hasSecrets(client.kind) ? (await listActiveSecrets(ctx.db, clientId)).length : 0;
  const users = (await usersWithGrants(ctx.db, clientId)).length;
  const installations = (await orgs.listInstallations(ctx.db, { clientId })).filter((i) => i.status === 'active').length;
  if (!opts.force) {
    const what = [`${secrets} active secret${secrets === 1 ? '' : 's'}`, `the access of ${users} user${users === 1 ? '' : 's'}`, ...(installations ? [`${installations} installation${installations === 1 ? '' : 's'}`] : [])];
    throw new InputError(`deleting removes client ${clientId} ("${client.name}", ${client.status}) for good, with ${what.join(', ')} and every token it holds: run again with --force to delete it; nothing was changed`);
  }
  await ctx.assertStoresReachable?.();
  await deleteClient(ctx, clientId, ctx.by);
  return { client_id: clientId, name: client.name, deleted: true, secrets_removed: secrets, users_with_access_removed: users };
}

export async function clientsRename(ctx: AdminContext, clientId: string, name: string) {
  return clientJson(await renameClient(ctx, clientId, name, ctx.by));
}

async function secretsJson(db: Db, clientId: string) {
  const secrets = await listActiveSecrets(db, clientId);
  return secrets.map((s) => ({ id: s.id, created_at: s.createdAt.toISOString(), last_used_at: s.lastUsedAt?.toISOString() ?? null, expires_at: s.expiresAt?.toISOString() ?? null }));
}

export async function clientsShow({ db }: AdminContext, clientId: string) {
  const client = await getClient(db, clientId);
  const migration = await migrationStatus(db, client);
  return { ...clientJson(client), ...(migration ? { migration } : {}), secrets: await secretsJson(db, clientId) };
}


export async function clientsList({ db }: AdminContext, status?: string) {
  if (status !== undefined && !CLIENT_STATUSES.includes(status as ClientStatus)) {
    throw new InputError(`--status must be one of ${CLIENT_STATUSES.join(', ')}`);
  }
  return { clients: (await listClients(db, status ? { status: status as ClientStatus } : {})).map(clientJson) };
}

/** Replaces the scopes and which of them are optional (--optional; without it, none is). */
export async function clientsSetScopes(ctx: AdminContext, clientId: string, scopes: string[], options: { force?: boolean; optional?: string[] } = {}) {
  const optional = parseScopeArgs(options.optional ?? []);
  return clientJson(await setClientScopes(ctx, clientId, parseScopeArgs(scopes), ctx.by, { force: Boolean(options.force), optional }));
}

export async function clientsSetRateLimit(ctx: AdminContext, clientId: string, perMinute: string) {
  const value = perMinute === 'default' ? null : /^[0-9]+$/.test(perMinute) ? Number(perMinute) : NaN;
  return clientJson(await setClientRateLimit(ctx, clientId, value, ctx.by));
}

export async function clientsSetDpop(ctx: AdminContext, clientId: string, setting: string) {
  if (setting !== 'on' && setting !== 'off') throw new InputError('say "on" (every token request must carry a DPoP proof) or "off"');
  return clientJson(await setClientDpopRequired(ctx, clientId, setting === 'on', ctx.by));
}

export async function clientsSetPar(ctx: AdminContext, clientId: string, setting: string) {
  if (setting !== 'on' && setting !== 'off') throw new InputError('say "on" (every authorization request must be pushed first) or "off"');
  return clientJson(await setClientParRequired(ctx, clientId, setting === 'on', ctx.by));
}

/** `set-high-trust`'s on or off, for every kind of client (directory-commands.ts). */
export function highTrustSetting(setting: string): boolean {
  if (setting !== 'on' && setting !== 'off') throw new InputError('say "on" (held to the high-trust profile: PAR, PKCE, DPoP and private_key_jwt required) or "off"');
  return setting === 'on';
}

export async function clientsSetHighTrust(ctx: AdminContext, clientId: string, setting: string) {
  return clientJson(await setClientHighTrust(ctx, clientId, highTrustSetting(setting), ctx.by));
}

/**
 * `clients set-keys ID (--jwks-uri URL | --jwks FILE|- | --none)`: the public keys the client
 * authenticates with (private_key_jwt; docs/private-key-jwt.md), its secrets revoked; or, with
 * `none`, no keys: back to a secret (generate one). `jwks`: the key set's text, read by the caller.
 */
export async function clientsSetKeys(ctx: AdminContext, clientId: string, options: { jwksUri?: string; jwks?: string; none?: boolean }) {
  const given = [options.jwksUri !== undefined, options.jwks !== undefined, options.none === true].filter(Boolean).length;
  if (given !== 1) throw new InputError('give exactly one of --jwks-uri URL, --jwks FILE (or - for standard input) and --none');
  const keys = options.none ? null : await judgedKeys(ctx, { jwksUri: options.jwksUri, jwks: options.jwks });
  await ctx.assertStoresReachable?.();
  const { client, revokedSecrets } = await setClientKeys(ctx, clientId, keys, ctx.by);
  return { ...clientJson(client), ...(revokedSecrets.length ? { revoked_secret_ids: revokedSecrets } : {}) };
}

export async function clientsSetRefreshGrace(ctx: AdminContext, clientId: string, seconds: string) {
  const value = seconds === 'default' ? null : /^[0-9]+$/.test(seconds) ? Number(seconds) : NaN;
  return clientJson(await setClientRefreshGrace(ctx, clientId, value, ctx.by));
}

export async function clientsAddRedirectUri(ctx: AdminContext, clientId: string, uri: string) {
  return clientJson(await addRedirectUri(ctx, clientId, uri, ctx.by));
}

export async function clientsRemoveRedirectUri(ctx: AdminContext, clientId: string, uri: string) {
  return clientJson(await removeRedirectUri(ctx, clientId, uri, ctx.by));
}

function cipherOf(ctx: AdminContext): DataCipher {
  if (!ctx.cipher) throw new Error('this command needs the DATA_ENCRYPTION_KEYS cipher in its context');
  return ctx.cipher;
}

/**
 * Sets the client's webhook URL (the address rule applies), or with `clear`, removes it; with
 * `newSecret` (alone or with a URL) makes a new signing secret. A secret made here (the first URL,
 * or `newSecret`) is printed once, as `signing_secret`, for the operator to hand to the owner.
 */
export async function clientsSetWebhook(ctx: AdminContext, clientId: string, url: string | undefined, options: { clear?: boolean; newSecret?: boolean } = {}) {
  const { db, by, production = false, allowLoopback = false } = ctx;
  if (options.clear && (url !== undefined || options.newSecret)) throw new InputError('--clear takes no webhook URL and no --new-secret');
  if (!options.clear && url === undefined && !options.newSecret) throw new InputError('give either a webhook URL, --new-secret or --clear');
  await getClient(db, clientId);
  const deps = { db, outbox: ctx.outbox, records: ctx.records, cipher: cipherOf(ctx), policy: { production, allowLoopback } };
  let secret: string | undefined;
  if (options.clear || url !== undefined) secret = (await setWebhookUrl(deps, clientId, options.clear ? null : url!, by)).secret;
  if (options.newSecret && !secret) secret = await regenerateWebhookSecret(deps, clientId, by);
  const webhookUrl = (await db('oauth_clients').where('id', clientId).first('webhook_url'))?.webhook_url ?? null;
  return { client_id: clientId, webhook_url: webhookUrl, ...(secret ? { signing_secret: secret } : {}) };
}

/** Re-encrypts every stored secret under the first DATA_ENCRYPTION_KEYS key (after adding a new key in front). */
export async function keysReencrypt(ctx: AdminContext) {
  const cipher = cipherOf(ctx);
  const signingKeys = await reencryptSigningKeys(ctx.db, cipher);
  const webhookSecrets = await reencryptWebhookSecrets(ctx.db, cipher);
  await recordAudit(ctx.db, { actor: ctx.by.actor, action: 'keys.reencrypted', details: { signing_keys: signingKeys, webhook_secrets: webhookSecrets, ...(ctx.by.reason ? { reason: ctx.by.reason } : {}) } });
  return { reencrypted: { signing_keys: signingKeys, webhook_secrets: webhookSecrets } };
}

const isoOrNull = (date: Date | null) => date?.toISOString() ?? null;

/**
 * `keys rotate [--delay D]`: a new token-signing key, published by every running instance at once
 * and signing after the delay; the key it replaces stays published until what it signed has
 * expired (ID_TOKEN_TTL after the new one starts signing). docs/operations.md.
 */
export async function keysRotate(ctx: AdminContext, opts: { delay?: string } = {}) {
  const delaySeconds = opts.delay === undefined ? DEFAULT_ROTATION_DELAY : parseDuration(opts.delay, '--delay', { min: 0, max: MAX_ROTATION_DELAY });
  const rotation = await rotateSigningKey({ db: ctx.db, records: ctx.records, cipher: cipherOf(ctx), clock: ctx.clock }, delaySeconds);
  const details = { kid: rotation.kid, sign_from: rotation.signFrom.toISOString(), replaced: rotation.replaced.map((r) => r.kid), removed: rotation.removed, ...(ctx.by.reason ? { reason: ctx.by.reason } : {}) };
  await recordAudit(ctx.db, { actor: ctx.by.actor, action: 'keys.rotated', details });
  return {
    kid: rotation.kid,
    published_at: rotation.publishedAt.toISOString(),
    sign_from: rotation.signFrom.toISOString(),
    replaced: rotation.replaced.map((r) => ({ kid: r.kid, retire_after: r.retireAfter.toISOString() })),
    removed: rotation.removed,
    retire_window_seconds: ID_TOKEN_TTL,
  };
}

/** `keys list`: every token-signing key's kid, state and times; never key material. */
export async function keysList(ctx: Pick<AdminContext, 'db' | 'clock'>) {
  const keys = await listSigningKeys(ctx.db, ctx.clock);
  return {
    keys: keys.map((k) => ({ kid: k.kid, state: k.state, created_at: k.createdAt.toISOString(), sign_from: k.signFrom.toISOString(), retire_after: isoOrNull(k.retireAfter) })),
  };
}

export async function secretsGenerate(ctx: AdminContext, clientId: string, opts: { expiresIn?: string } = {}) {
  const expiresInSeconds = opts.expiresIn === undefined ? undefined : parseDuration(opts.expiresIn, '--expires-in', { min: 1, max: MAX_SECRET_LIFETIME_SECONDS });
  const secret = await generateSecret(ctx, clientId, ctx.by, { expiresInSeconds });
  return { secret_id: secret.id, client_secret: secret.value, expires_at: isoOrNull(secret.expiresAt) };
}

/** `secrets rotate ID --overlap D`: a new secret now; the current one expires after the overlap. */
export async function secretsRotate(ctx: AdminContext, clientId: string, opts: { overlap: string; expiresIn?: string }) {
  const overlapSeconds = parseDuration(opts.overlap, '--overlap', { min: 0, max: MAX_ROTATION_OVERLAP_SECONDS });
  const expiresInSeconds = opts.expiresIn === undefined ? undefined : parseDuration(opts.expiresIn, '--expires-in', { min: 1, max: MAX_SECRET_LIFETIME_SECONDS });
  await ctx.assertStoresReachable?.();
  const secret = await rotateSecret(ctx, clientId, ctx.by, { overlapSeconds, expiresInSeconds });
  return {
    secret_id: secret.id,
    client_secret: secret.value,
    expires_at: isoOrNull(secret.expiresAt),
    previous_secret: { secret_id: secret.previous.id, expires_at: secret.previous.expiresAt.toISOString() },
  };
}

function secretIdOf(value: string): number {
  const id = parseIntegerId(value);
  if (id === undefined) throw new InputError(`not a secret id: "${value}" (secret ids are whole numbers from 1 to ${MAX_INTEGER_ID}; see secrets list)`);
  return id;
}

export async function secretsRevoke(ctx: AdminContext, clientId: string, secretId: string, opts: { force?: boolean } = {}) {
  const id = secretIdOf(secretId);
  await ctx.assertStoresReachable?.();
  await revokeSecret(ctx, clientId, id, ctx.by, { force: opts.force === true });
  return { secret_id: id, revoked: true };
}

export async function secretsList({ db }: AdminContext, clientId: string) {
  await getClient(db, clientId);
  return { secrets: await secretsJson(db, clientId) };
}

// ---- organizations, teams, installations (docs/organizations.md)

/** USER as the scripts take it: a user id, or an e-mail address. */
export async function resolveUser(db: Db, ref: string): Promise<{ id: number; email: string; name: string }> {
  const id = parseIntegerId(ref);
  const query = db('users').select('id', 'email', 'name');
  const row = id !== undefined ? await query.where('id', id).first() : ref.includes('@') && !ref.includes('\0') ? await query.where('email', ref.trim().toLowerCase()).first() : undefined;
  if (!row) throw new NotFoundError(`no user ${JSON.stringify(ref)} (give a user id or e-mail; see users list)`);
  return row;
}

async function resolveOrg(db: Db, ref: string): Promise<Organization> {
  const org = await orgs.findOrg(db, ref);
  if (!org) throw new NotFoundError(`no organization ${JSON.stringify(ref)} (organization ids are whole numbers)`);
  return org;
}

async function resolveTeam(db: Db, ref: string): Promise<Team> {
  const team = await orgs.findTeam(db, ref);
  if (!team) throw new NotFoundError(`no team ${JSON.stringify(ref)} (team ids are whole numbers)`);
  return team;
}

function oneOf<T extends string>(value: string, allowed: readonly T[], what: string): T {
  if (!allowed.includes(value as T)) throw new InputError(`${what} must be one of ${allowed.join(', ')}: not ${JSON.stringify(value)}`);
  return value as T;
}

const audit = (ctx: AdminContext, action: string, details: Record<string, unknown>, userId?: number) =>
  recordAudit(ctx.db, { actor: ctx.by.actor, action, userId, details: { ...details, ...(ctx.by.reason ? { reason: ctx.by.reason } : {}) } });

/** What the organization changes need in a script: its storage, and the bound grants read from the database. */
export function installationDeps(ctx: AdminContext): InstallationDeps {
  return { db: ctx.db, outbox: ctx.outbox, artifacts: ctx.artifacts, bindings: grantBindings(ctx.db), records: ctx.records };
}

export const orgJson = (org: Organization) => ({ id: org.id, name: org.name, app_policy: org.appPolicy, ...(org.logoUrl ? { logo_url: org.logoUrl } : {}) });
export const teamJson = (team: Team) => ({ id: team.id, name: team.name, org_id: team.orgId });

/**
 * team_ids are the teams the installation reaches now: for all_teams, the organization's current
 * ones (`orgTeams` caches them across a list).
 */
export async function installationJson(db: Db, installation: Installation, orgTeams = new Map<number, Promise<number[]>>()) {
  let teamIds = installation.teamIds;
  if (installation.allTeams) {
    if (!orgTeams.has(installation.orgId)) orgTeams.set(installation.orgId, orgs.teamsOfOrg(db, installation.orgId).then((teams) => teams.map((t) => t.id)));
    teamIds = await orgTeams.get(installation.orgId)!;
  }
  return {
    id: installation.id,
    client_id: installation.clientId,
    org_id: installation.orgId,
    all_teams: installation.allTeams,
    team_ids: teamIds,
    scopes: installation.scopes,
    status: installation.status,
    installed_by: installation.installedBy,
    installed_at: installation.installedAt.toISOString(),
  };
}

export async function orgsCreate(ctx: AdminContext, options: { name: string; logoUrl?: string }) {
  const logoUrl = validateClientLink(options.logoUrl, 'logo');
  const org = await orgs.createOrg(ctx.db, { name: options.name, logoUrl });
  await audit(ctx, 'org.created', { org_id: org.id, name: org.name });
  return orgJson(org);
}

/**
 * Adds a member, or changes an existing member's role when --role differs; the same membership
 * again is refused as a duplicate (nothing to do, and likely a mistaken id).
 */
export async function orgsAddMember(ctx: AdminContext, orgRef: string, userRef: string, options: { role?: string } = {}) {
  const role = oneOf<OrgRole>(options.role ?? 'member', ORG_ROLES, '--role');
  const org = await resolveOrg(ctx.db, orgRef);
  const user = await resolveUser(ctx.db, userRef);
  const current = await orgs.orgRole(ctx.db, org.id, user.id);
  if (current === role) throw new InputError(`user ${user.id} is already a member of organization ${org.id} as ${role}; nothing changed`);
  // An admin becoming a member loses what only admins reach: those grants end (src/orgs/installations.ts).
  const demoted = isOrgAdmin(current) && !isOrgAdmin(role);
  if (demoted) await ctx.assertStoresReachable?.();
  const membership = await orgs.addOrgMember(ctx.db, org.id, user.id, role);
  const revoked = demoted ? (await memberDemoted(installationDeps(ctx), org.id, user.id)).revoked : 0;
  await audit(ctx, current ? 'org.member_role_changed' : 'org.member_added', { org_id: org.id, role, ...(current ? { previous_role: current } : {}), ...(demoted ? { revoked_grants: revoked } : {}) }, user.id);
  return { org_id: membership.orgId, user_id: membership.userId, role: membership.role };
}

/** Every organization, with how many members and teams it has (for finding an id). */
export async function orgsList({ db }: AdminContext) {
  const rows = await db('organizations as o')
    .orderBy('o.id')
    .select('o.*', db.raw('(select count(*)::int from org_memberships m where m.org_id = o.id) as member_count'), db.raw('(select count(*)::int from teams t where t.org_id = o.id) as team_count'));
  return { organizations: rows.map((r) => ({ ...orgJson({ id: r.id, name: r.name, appPolicy: r.app_policy, logoUrl: r.logo_url }), members: r.member_count, teams: r.team_count })) };
}

export async function orgsShow({ db }: AdminContext, orgRef: string) {
  const org = await resolveOrg(db, orgRef);
  const members = await db('org_memberships as m').join('users as u', 'u.id', 'm.user_id').where('m.org_id', org.id).orderBy('u.id').select('u.id', 'u.email', 'u.name', 'm.role');
  const teams = await orgs.teamsOfOrg(db, org.id);
  const teamMembers = teams.length
    ? await db('team_memberships').whereIn('team_id', teams.map((t) => t.id)).orderBy('user_id').select('team_id', 'user_id', 'role')
    : [];
  return {
    ...orgJson(org),
    members: members.map((m) => ({ user_id: m.id, email: m.email, name: m.name, role: m.role })),
    teams: teams.map((t) => ({ ...teamJson(t), members: teamMembers.filter((m) => m.team_id === t.id).map((m) => ({ user_id: m.user_id, role: m.role })) })),
  };
}

export async function teamsCreate(ctx: AdminContext, options: { name: string; org?: string }) {
  const org = options.org === undefined ? undefined : await resolveOrg(ctx.db, options.org);
  const team = await orgs.createTeam(ctx.db, { name: options.name, orgId: org?.id ?? null });
  // A team of an organization closed to unbound tokens is closed too (src/orgs/closed-orgs.ts).
  if (team.orgId !== null) await ctx.records.announce(ctx.db, 'org', team.orgId);
  await audit(ctx, 'team.created', { team_id: team.id, org_id: team.orgId, name: team.name });
  return teamJson(team);
}

/**
 * Adds a member to a team, or changes their role there (same rule as orgs add-member). A team of
 * an organization takes only that organization's members: add them there first.
 */
export async function teamsAddMember(ctx: AdminContext, teamRef: string, userRef: string, options: { role?: string } = {}) {
  const role = oneOf<TeamRole>(options.role ?? 'member', TEAM_ROLES, '--role');
  const team = await resolveTeam(ctx.db, teamRef);
  const user = await resolveUser(ctx.db, userRef);
  const current = (await ctx.db('team_memberships').where({ team_id: team.id, user_id: user.id }).first('role'))?.role as TeamRole | undefined;
  if (current === role) throw new InputError(`user ${user.id} is already a member of team ${team.id} as ${role}; nothing changed`);
  if (team.orgId !== null && !(await orgs.orgRole(ctx.db, team.orgId, user.id))) {
    throw new InputError(`user ${user.id} is not a member of organization ${team.orgId}, which team ${team.id} belongs to: add them with orgs add-member first`);
  }
  const membership = await orgs.addTeamMember(ctx.db, team.id, user.id, role);
  await audit(ctx, current ? 'team.member_role_changed' : 'team.member_added', { team_id: team.id, role, ...(current ? { previous_role: current } : {}) }, user.id);
  return { team_id: membership.teamId, user_id: membership.userId, role: membership.role };
}

export async function installationsList(ctx: AdminContext, options: { org?: string; client?: string } = {}) {
  const { db } = ctx;
  const org = options.org === undefined ? undefined : await resolveOrg(db, options.org);
  if (options.client !== undefined) await getClient(db, options.client);
  const found = await orgs.listInstallations(db, { orgId: org?.id, clientId: options.client });
  const orgTeams = new Map<number, Promise<number[]>>();
  const installations = [];
  for (const installation of found) installations.push(await installationJson(db, installation, orgTeams));
  return { installations };
}
