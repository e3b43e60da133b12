// The client registry's use cases, for the operator scripts, the pages and the provider. Each
// change is one transaction that locks the client, writes it and its audit row: nothing is ever
// half-written. Owners' edits and pending changes are in changes.ts.
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import type { ClientArtifacts } from '../storage/client-artifacts.ts';
import { ConflictError, InputError, LimitError, NotFoundError } from '../errors.ts';
import { recordAudit } from '../audit.ts';
import { assertSafeToSetScopes } from './legacy.ts';
import { generateClientId, generateClientSecret, hashClientSecret } from './secrets.ts';
import { validateClientLinks, validateClientName, validateClientScopes, validateOptionalScopes, validateRedirectUri, validateRedirectUris, validateResourceUri } from './validate.ts';
import {
  hasSecrets,
  mayUseKeys,
  usesKeys,
  clientVersion,
  MAX_ACTIVE_SECRETS,
  MAX_REDIRECT_URIS,
  MAX_REFRESH_GRACE_SECONDS,
  MAX_TOKEN_REQUESTS_PER_MINUTE,
  type Actor,
  type ClientKeys,
  type ClientKind,
  type ClientLinks,
  type ClientRecord,
  type SecretInfo,
} from './model.ts';
import * as repo from './repository.ts';
import { mayMove, type ClientStatus } from '../directory/status.ts';
import type { WebhookOutbox } from '../webhooks/outbox.ts';
import type { CachedDb, RecordCache } from '../storage/record-cache.ts';
import { webhookEvent, type WebhookEvent } from '../webhooks/events.ts';
import { POLICY } from '../settings.ts';

export { findUsableClient, activeSecretReader, type UsableClient } from './repository.ts';

/** What the registry's use cases work with: built in system.ts, and by the operator scripts' context (src/admin/program.ts). */
export interface ClientDeps {
  db: Db;
  artifacts: ClientArtifacts;
  /** Where a change writes the webhook events it causes (src/webhooks/outbox.ts). */
  outbox: WebhookOutbox;
  /** The record cache, which a change tells (src/storage/record-cache.ts). */
  records: RecordCache;
}

/** What a change of a client needs. */
export type ChangeDeps = Pick<ClientDeps, 'db' | 'outbox' | 'records'>;

export interface NewClient extends ClientLinks {
  name: string;
  redirectUris: string[];
  scopes: string[];
  kind: ClientKind;
  legacy: boolean;
  ownerUserId?: number;
  /** A resource server's resource (RFC 8707): its tokens' audience. Absent: the platform API. */
  resourceUri?: string | undefined;
  /** http on loopback allowed for the resource URI (RESOURCE_URI_ALLOW_LOOPBACK, development). */
  allowLoopback?: boolean;
  /** Keys instead of a secret (private_key_jwt), judged (src/cimd/fetch.ts judgedClientKeys): then no secret is issued. */
  keys?: ClientKeys | undefined;
}

export interface CreatedClient {
  client: ClientRecord;
  /** Present for confidential clients: the only time the secret is ever available. */
  secret?: { id: number; value: string };
}

/** The links that were given, with the audit trail's key names. */
const definedLinks = (links: { policyUri: string | null; tosUri: string | null }) => ({
  ...(links.policyUri ? { policy_uri: links.policyUri } : {}),
  ...(links.tosUri ? { tos_uri: links.tosUri } : {}),
});

function auditDetails(by: Actor, details: Record<string, unknown> = {}) {
  return { ...details, ...(by.reason ? { reason: by.reason } : {}) };
}

/**
 * Locks the client, runs the change and records it: one transaction, with the webhook events the
 * change causes (src/webhooks/outbox.ts: delivered only if it commits).
 */
export async function changeClient<T>(
  { db, outbox, records }: ChangeDeps,
  clientId: string,
  by: Actor,
  change: (trx: Knex.Transaction, client: ClientRecord) => Promise<{ result: T; action: string; details: Record<string, unknown>; events?: WebhookEvent[] }>,
): Promise<T> {
  await outbox.prepare(clientId);
  return db.transaction(async (trx) => {
    const client = await repo.lockClient(trx, clientId, records);
    const { result, action, details, events = [] } = await change(trx, client);
    await recordAudit(trx, { actor: by.actor, action, clientId, details: auditDetails(by, details) });
    await outbox.enqueue(trx, clientId, events);
    return result;
  });
}

const reread = async (trx: Knex.Transaction, clientId: string) => (await repo.readClient(trx, clientId))!;

export async function createClient({ db, records }: CachedDb, input: NewClient, by: Actor): Promise<CreatedClient> {
  const name = validateClientName(input.name);
  const redirectUris = validateRedirectUris(input.redirectUris, input.kind);
  // A resource server's scopes are optional: the tokens it may introspect (none listed: any).
  const scopes = validateClientScopes(input.scopes, input.legacy || input.kind === 'resource_server');
  const links = validateClientLinks(input);
  const clientId = generateClientId();
  if (input.keys && !mayUseKeys(input.kind)) throw new InputError('a public client does not authenticate: it has neither a secret nor keys (it uses PKCE)');
  const secretValue = hasSecrets(input.kind) && !input.keys ? generateClientSecret() : undefined;
  if (input.kind === 'resource_server' && input.legacy) throw new InputError('a resource server cannot be a legacy client');
  if (input.resourceUri !== undefined && input.kind !== 'resource_server') throw new InputError('only a resource server has a resource URI (--resource-server)');
  const resourceUri = input.resourceUri === undefined ? null : validateResourceUri(input.resourceUri, input.allowLoopback === true);
  if (resourceUri && (await repo.resourceServerIdFor(db, resourceUri))) throw new InputError(`another resource server already serves ${resourceUri}`);
  return db.transaction(async (trx) => {
    if (input.ownerUserId != null) await refuseOverOwnerCap(trx, input.ownerUserId);
    const fields = { name, kind: input.kind, legacy: input.legacy, scopes, ownerUserId: input.ownerUserId ?? null, ...links, resourceUri };
    let client = await repo.insertClient(trx, clientId, fields, redirectUris, records);
    if (input.keys) {
      await repo.updateClient(trx, clientId, { keys: input.keys });
      client = await reread(trx, clientId);
    }
    const secret = secretValue ? { id: (await repo.insertSecret(trx, clientId, hashClientSecret(secretValue))).id, value: secretValue } : undefined;
    await recordAudit(trx, { actor: by.actor, action: 'client.created', clientId, details: auditDetails(by, { kind: input.kind, legacy: input.legacy, scopes, redirectUris, ...definedLinks(links), ...(resourceUri ? { resource_uri: resourceUri } : {}), ...(input.keys ? { auth: 'private_key_jwt' } : {}) }) });
    return { client, ...(secret ? { secret } : {}) };
  });
}

/** Clients one user may own, registered on the developer page or by `clients create --owner` alike: each may send events and take delivery slots. */
export const MAX_CLIENTS_PER_OWNER = POLICY.MAX_CLIENTS_PER_OWNER.value;

async function refuseOverOwnerCap(trx: Knex.Transaction, ownerUserId: number): Promise<void> {
  // The owner's row locked: two registrations at once are counted one after the other.
  await trx('users').where('id', ownerUserId).forUpdate().first('id');
  const owned = await repo.listClientRecords(trx, { ownerUserId });
  if (owned.length >= MAX_CLIENTS_PER_OWNER) throw new LimitError(`you have ${owned.length} clients, the most one account may register: delete one you no longer use first`);
}

export const findClient = (db: Db, clientId: string) => repo.readClient(db, clientId);
export const listClients = (db: Db, filter: { status?: ClientStatus; ownerUserId?: number } = {}) => repo.listClientRecords(db, filter);
/** One page of the administrators' review table, filtered and counted in SQL (repository.ts). */
export const reviewClients = (db: Db, filter: repo.ReviewFilter) => repo.reviewListing(db, filter);
export const listActiveSecrets = (db: Db, clientId: string): Promise<SecretInfo[]> => repo.activeSecrets(db, clientId);

export async function getClient(db: Db, clientId: string): Promise<ClientRecord> {
  const client = await repo.readClient(db, clientId);
  if (!client) throw new NotFoundError(`no client with id ${clientId}`);
  return client;
}

/**
 * Moves a client to another status. A client that stops being approved loses every code, token
 * and grant at once (bearer verification then needs only the token lookup); reinstating does not
 * bring them back. With `expected.version`, the client must still be what the reviewer saw.
 */
export async function setClientStatus(
  deps: ClientDeps,
  clientId: string,
  to: ClientStatus,
  by: Actor,
  expected: { version?: string } = {},
): Promise<ClientRecord> {
  // Reinstating brings nothing back, also what a suspension could not reach (a status set in the
  // table directly): a suspended client is issued nothing, so this sweep races no new token.
  const { db, artifacts } = deps;
  if (to === 'approved' && (await repo.readClient(db, clientId))?.status === 'suspended') await artifacts.revokeClient(clientId);
  const client = await changeClient(deps, clientId, by, async (trx, current) => {
    if (expected.version !== undefined && expected.version !== clientVersion(current)) {
      throw new ConflictError('this client changed since you opened the page; review it again');
    }
    if (!mayMove('registry', current.status, to)) throw new InputError(`${/^[aeiou]/.test(current.status) ? 'an' : 'a'} ${current.status} client cannot become ${to}`);
    await repo.updateClient(trx, clientId, { status: to });
    const events: WebhookEvent[] = [webhookEvent(clientId, 'client.status_changed', { from: current.status, to })];
    // Leaving approved ends every user's grant (revokeEverythingIssued): tell the app whose.
    if (current.status === 'approved') {
      for (const userId of await repo.usersWithGrants(trx, clientId)) events.push(webhookEvent(clientId, 'grant.revoked', { user_id: userId, reason: 'client_suspended' }));
      await trx('user_grants').where('client_id', clientId).delete(); // those grants are gone: no second event later
    }
    return { result: await reread(trx, clientId), action: `client.${to}`, details: { from: current.status }, events };
  });
  if (to !== 'approved') await revokeEverythingIssued(artifacts, clientId);
  return client;
}

/** Deletes whatever a client that is not approved still holds (`clients suspend` repeated). */
export async function sweepClient({ artifacts }: ClientDeps, clientId: string): Promise<void> {
  await artifacts.revokeClient(clientId);
}

/**
 * Deletes every code, token and grant of the client, once, after the change has committed. A token
 * request that read the client as usable just before may still save a grant or tokens after this
 * sweep; they are refused all the same, by the rule every path applies at each use
 * (src/oauth/token-liveness.ts: the grant present, the client usable), and the facts an instance
 * keeps in memory about a token end when it learns that the token's client changed (system.ts).
 * They stay stored until they expire, or until reinstating the client sweeps again.
 */
async function revokeEverythingIssued(artifacts: ClientArtifacts, clientId: string): Promise<void> {
  await artifacts.revokeClient(clientId);
}

/**
 * Removes a client for good (its owner, in the developer settings): everything it was issued is
 * revoked as at suspension, its rows go, and the audit trail keeps its history. With
 * `expected.ownerUserId`, only that user's client is removed (anyone else's is "not found").
 */
export async function deleteClient(deps: ClientDeps, clientId: string, by: Actor, expected: { ownerUserId?: number } = {}): Promise<ClientRecord> {
  const client = await changeClient(deps, clientId, by, async (trx, current) => {
    if (expected.ownerUserId !== undefined && current.ownerUserId !== expected.ownerUserId) throw new NotFoundError(`no client with id ${clientId}`);
    await repo.deleteClientRows(trx, clientId);
    return { result: current, action: 'client.deleted', details: { name: current.name, status: current.status, kind: current.kind } };
  });
  await revokeEverythingIssued(deps.artifacts, clientId);
  return client;
}

/**
 * Replaces the client's scopes (at least one; all from the catalogue). For a legacy client this is
 * migration step 2 of docs/legacy-migration.md, refused by the order guard unless forced.
 */
export async function setClientScopes(
  deps: ChangeDeps,
  clientId: string,
  scopes: string[],
  by: Actor,
  { force = false, optional = [] as string[] } = {},
): Promise<ClientRecord> {
  const valid = validateClientScopes(scopes, false);
  const optionalScopes = validateOptionalScopes(optional, valid);
  return changeClient(deps, clientId, by, async (trx, current) => {
    if (!force) await assertSafeToSetScopes(trx, current);
    await repo.updateClient(trx, clientId, { scopes: valid, optionalScopes });
    const optionalChange = optionalScopes.length || current.optionalScopes.length ? { optional_from: current.optionalScopes, optional_to: optionalScopes } : {};
    return { result: await reread(trx, clientId), action: 'client.scopes_set', details: { from: current.scopes, to: valid, ...optionalChange, ...(force ? { forced: true } : {}) } };
  });
}

export async function addRedirectUri(deps: ChangeDeps, clientId: string, uri: string, by: Actor): Promise<ClientRecord> {
  return changeClient(deps, clientId, by, async (trx, current) => {
    const valid = validateRedirectUri(uri, current.kind);
    if (current.redirectUris.includes(valid)) throw new InputError(`the client already has the redirect URI ${valid}`);
    if (current.redirectUris.length >= MAX_REDIRECT_URIS) throw new InputError(`at most ${MAX_REDIRECT_URIS} redirect URIs per client`);
    await repo.replaceRedirectUris(trx, clientId, [...current.redirectUris, valid]);
    await repo.updateClient(trx, clientId, {});
    return { result: await reread(trx, clientId), action: 'client.redirect_uri_added', details: { uri: valid } };
  });
}

export async function removeRedirectUri(deps: ChangeDeps, clientId: string, uri: string, by: Actor): Promise<ClientRecord> {
  return changeClient(deps, clientId, by, async (trx, current) => {
    if (!current.redirectUris.includes(uri)) throw new InputError(`the client has no redirect URI ${uri}`);
    if (current.redirectUris.length === 1) throw new InputError('a client needs at least one redirect URI; add another before removing this one');
    await repo.replaceRedirectUris(trx, clientId, current.redirectUris.filter((u) => u !== uri));
    await repo.updateClient(trx, clientId, {});
    return { result: await reread(trx, clientId), action: 'client.redirect_uri_removed', details: { uri } };
  });
}

/** A new secret: shown once, with when it expires (null: never). */
export interface NewSecret {
  id: number;
  value: string;
  expiresAt: Date | null;
}

/** Why a client with keys gets no secret. */
const KEYS_NOT_SECRETS = 'this client authenticates with its keys (private_key_jwt) and has no secret; to go back to a secret, remove its keys first (clients set-keys ID --none)';

/** The longest lifetime a secret may be given, and the longest overlap of a rotation (docs/secret-rotation.md). */
export const MAX_SECRET_LIFETIME_SECONDS = POLICY.MAX_SECRET_LIFETIME_SECONDS.value;
export const MAX_ROTATION_OVERLAP_SECONDS = POLICY.MAX_ROTATION_OVERLAP_SECONDS.value;
/** A secret used this recently may be in use by the app right now: revoking it needs a confirmation. */
export const RECENT_USE_SECONDS = POLICY.RECENT_USE_SECONDS.value;

function assertLifetime(expiresInSeconds: number | undefined): void {
  if (expiresInSeconds !== undefined && (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 1 || expiresInSeconds > MAX_SECRET_LIFETIME_SECONDS)) {
    throw new InputError(`a secret's lifetime must be from 1 second to ${MAX_SECRET_LIFETIME_SECONDS / 86_400} days`);
  }
}

/**
 * A new secret for a confidential client, refused while it has MAX_ACTIVE_SECRETS active. The
 * client row lock makes concurrent calls take turns, so they can never exceed the limit.
 * `expiresInSeconds`: its lifetime; none, it lasts until revoked.
 */
export async function generateSecret(deps: ChangeDeps, clientId: string, by: Actor, { expiresInSeconds }: { expiresInSeconds?: number } = {}): Promise<NewSecret> {
  assertLifetime(expiresInSeconds);
  const value = generateClientSecret();
  return changeClient(deps, clientId, by, async (trx, current) => {
    if (!hasSecrets(current.kind)) throw new InputError('a public client has no secrets');
    if (usesKeys(current)) throw new InputError(KEYS_NOT_SECRETS);
    if ((await repo.activeSecrets(trx, clientId)).length >= MAX_ACTIVE_SECRETS) {
      throw new InputError(`the client already has ${MAX_ACTIVE_SECRETS} active secrets; revoke one first`);
    }
    const { id, expiresAt } = await repo.insertSecret(trx, clientId, hashClientSecret(value), expiresInSeconds);
    const details = { secret_id: id, ...(expiresAt ? { expires_at: expiresAt.toISOString() } : {}) };
    return { result: { id, value, expiresAt }, action: 'secret.generated', details, events: [webhookEvent(clientId, 'secret.generated', details)] };
  });
}

/**
 * Rotation with overlap: a new secret now, and the current one expires by itself after
 * `overlapSeconds` (0 to 7 days), so the last step of a rotation needs no one to remember it.
 * Refused unless exactly one secret is active (with two, which one to retire is the operator's
 * choice: revoke one first). With an overlap of 0 the old secret is revoked at once, as a revocation is.
 */
export async function rotateSecret(
  deps: ClientDeps,
  clientId: string,
  by: Actor,
  { overlapSeconds, expiresInSeconds }: { overlapSeconds: number; expiresInSeconds?: number },
): Promise<NewSecret & { previous: { id: number; expiresAt: Date } }> {
  if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > MAX_ROTATION_OVERLAP_SECONDS) {
    throw new InputError(`the overlap must be from 0 to ${MAX_ROTATION_OVERLAP_SECONDS / 86_400} days`);
  }
  assertLifetime(expiresInSeconds);
  const value = generateClientSecret();
  return changeClient(deps, clientId, by, async (trx, current) => {
    if (!hasSecrets(current.kind)) throw new InputError('a public client has no secrets');
    if (usesKeys(current)) throw new InputError(KEYS_NOT_SECRETS);
    const active = await repo.activeSecrets(trx, clientId);
    if (active.length === 0) throw new InputError('the client has no active secret to rotate; generate one instead');
    if (active.length >= MAX_ACTIVE_SECRETS) {
      throw new InputError(`the client already has ${MAX_ACTIVE_SECRETS} active secrets: revoke the one it no longer uses (secrets list shows when each was last used), then rotate`);
    }
    const old = active[0]!;
    const { id, expiresAt } = await repo.insertSecret(trx, clientId, hashClientSecret(value), expiresInSeconds);
    let oldExpiresAt: Date;
    if (overlapSeconds === 0) {
      // At once, on every instance: as a revocation (the mark is set before this commits).
      await repo.revokeSecretRow(trx, clientId, old.id);
      await deps.artifacts.markSecretRevoked(old.id);
      oldExpiresAt = new Date();
    } else oldExpiresAt = await repo.shortenSecretLife(trx, clientId, old.id, overlapSeconds);
    const details = { secret_id: id, ...(expiresAt ? { expires_at: expiresAt.toISOString() } : {}), previous_secret_id: old.id, previous_expires_at: oldExpiresAt.toISOString() };
    const events = [
      webhookEvent(clientId, 'secret.generated', { secret_id: id, ...(expiresAt ? { expires_at: expiresAt.toISOString() } : {}) }),
      overlapSeconds === 0 ? webhookEvent(clientId, 'secret.revoked', { secret_id: old.id }) : webhookEvent(clientId, 'secret.expiring', { secret_id: old.id, expires_at: oldExpiresAt.toISOString() }),
    ];
    return { result: { id, value, expiresAt, previous: { id: old.id, expiresAt: oldExpiresAt } }, action: 'secret.rotated', details, events };
  });
}

/** Refused with this when the secret was used within RECENT_USE_SECONDS and the revocation is not confirmed. */
export class RecentlyUsedSecretError extends ConflictError {
  constructor(readonly secretId: number, readonly lastUsedAt: Date) {
    super(`secret ${secretId} was last used ${lastUsedAt.toISOString()}, less than ${RECENT_USE_SECONDS / 60} minutes ago, so the app may still be sending it: nothing was revoked. To revoke it anyway, run the command again with --force`);
  }
}

/**
 * Revokes a secret; the next token request with it is refused, on every instance (the mark is set
 * before the revocation commits: if it cannot be set, nothing is revoked). With `keepOne` (the
 * pages), the only active secret is kept: the app would be locked out. A secret used in the last
 * RECENT_USE_SECONDS is revoked only with `force` (the app may still send it).
 */
export async function revokeSecret(deps: ClientDeps, clientId: string, secretId: number, by: Actor, { keepOne = false, force = false } = {}): Promise<void> {
  const { artifacts } = deps;
  await changeClient(deps, clientId, by, async (trx) => {
    const active = await repo.activeSecrets(trx, clientId);
    if (keepOne && active.length === 1 && active[0]!.id === secretId) throw new InputError('this is the only active secret: generate a new one and switch your app to it before revoking this one');
    const lastUsedAt = active.find((s) => s.id === secretId)?.lastUsedAt;
    if (!force && lastUsedAt && Date.now() - lastUsedAt.getTime() < RECENT_USE_SECONDS * 1000) throw new RecentlyUsedSecretError(secretId, lastUsedAt);
    if (!(await repo.revokeSecretRow(trx, clientId, secretId))) throw new NotFoundError(`the client has no active secret with id ${secretId}`);
    await artifacts.markSecretRevoked(secretId);
    return { result: undefined, action: 'secret.revoked', details: { secret_id: secretId }, events: [webhookEvent(clientId, 'secret.revoked', { secret_id: secretId })] };
  });
}

/** The client's own budget of token requests per minute, or null for the server's default. */
export async function setClientRateLimit(deps: ChangeDeps, clientId: string, perMinute: number | null, by: Actor): Promise<ClientRecord> {
  if (perMinute !== null && (!Number.isInteger(perMinute) || perMinute < 1 || perMinute > MAX_TOKEN_REQUESTS_PER_MINUTE)) {
    throw new InputError(`the rate limit must be a whole number of requests per minute from 1 to ${MAX_TOKEN_REQUESTS_PER_MINUTE}, or "default"`);
  }
  return changeClient(deps, clientId, by, async (trx, current) => {
    await repo.updateClient(trx, clientId, { tokenRequestsPerMinute: perMinute });
    return { result: await reread(trx, clientId), action: 'client.rate_limit_set', details: { from: current.tokenRequestsPerMinute, to: perMinute } };
  });
}

/** The client's own refresh grace window in seconds (0: off), or null for the default (src/oauth/refresh-grace.ts). */
export async function setClientRefreshGrace(deps: ChangeDeps, clientId: string, seconds: number | null, by: Actor): Promise<ClientRecord> {
  if (seconds !== null && (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_REFRESH_GRACE_SECONDS)) {
    throw new InputError(`the refresh grace window must be a whole number of seconds from 0 (off) to ${MAX_REFRESH_GRACE_SECONDS}, or "default"`);
  }
  return changeClient(deps, clientId, by, async (trx, current) => {
    await repo.updateClient(trx, clientId, { refreshGraceSeconds: seconds });
    return { result: await reread(trx, clientId), action: 'client.refresh_grace_set', details: { from: current.refreshGraceSeconds, to: seconds } };
  });
}

/** Whether every token request of the client must carry a DPoP proof (RFC 9449 5.2, docs/dpop.md). */
export async function setClientDpopRequired(deps: ChangeDeps, clientId: string, required: boolean, by: Actor): Promise<ClientRecord> {
  return changeClient(deps, clientId, by, async (trx, current) => {
    await repo.updateClient(trx, clientId, { dpopBoundAccessTokens: required });
    return { result: await reread(trx, clientId), action: 'client.dpop_set', details: { from: current.dpopBoundAccessTokens === true, to: required } };
  });
}

/** Whether every authorization request of the client must be pushed first (RFC 9126 5, docs/par.md). */
export async function setClientParRequired(deps: ChangeDeps, clientId: string, required: boolean, by: Actor): Promise<ClientRecord> {
  return changeClient(deps, clientId, by, async (trx, current) => {
    await repo.updateClient(trx, clientId, { requirePushedAuthorizationRequests: required });
    return { result: await reread(trx, clientId), action: 'client.par_set', details: { from: current.requirePushedAuthorizationRequests === true, to: required } };
  });
}

/**
 * Whether the client is held to the high-trust profile (FAPI 2.0 Security Profile,
 * docs/security.md#the-high-trust-profile): its requests pushed, PKCE, DPoP-bound tokens and
 * private_key_jwt, whatever its own PAR and DPoP settings say (src/directory/view.ts). Only a
 * confidential client with keys: the profile has no public clients and no shared secrets, and a
 * resource server obtains no tokens.
 */
export async function setClientHighTrust(deps: ChangeDeps, clientId: string, on: boolean, by: Actor): Promise<ClientRecord> {
  return changeClient(deps, clientId, by, async (trx, current) => {
    if (on && current.kind !== 'confidential') throw new InputError(`the high-trust profile is for confidential clients with keys: ${HIGH_TRUST_KINDS[current.kind]}`);
    if (on && !current.keys) throw new InputError('the high-trust profile authenticates with keys only (private_key_jwt): register the client\'s keys first (clients set-keys, or the developer page)');
    await repo.updateClient(trx, clientId, { highTrust: on });
    return { result: await reread(trx, clientId), action: 'client.high_trust_set', details: { from: current.highTrust === true, to: on } };
  });
}

const HIGH_TRUST_KINDS: Record<ClientKind, string> = {
  confidential: '',
  public: 'a public client authenticates with nothing (it uses PKCE alone)',
  resource_server: 'a resource server obtains no tokens (it only introspects them)',
};

/**
 * The keys the client authenticates with (private_key_jwt, RFC 7523; docs/private-key-jwt.md), or
 * none (null): back to a secret, of which it then has none until one is generated. With keys it
 * has no shared secret at all: its active secrets are revoked in the same change, on every
 * instance at once (as a revocation: the marks are set before it commits).
 */
export async function setClientKeys(deps: ClientDeps, clientId: string, keys: ClientKeys | null, by: Actor): Promise<{ client: ClientRecord; revokedSecrets: number[] }> {
  return changeClient(deps, clientId, by, async (trx, current) => {
    if (!mayUseKeys(current.kind)) throw new InputError('a public client does not authenticate: it has neither a secret nor keys (it uses PKCE)');
    if (!keys && !current.keys) throw new InputError('the client has no keys to remove');
    if (!keys && current.highTrust) throw new InputError('the client is held to the high-trust profile, which authenticates with keys only: turn it off first (clients set-high-trust ID off, or the developer page)');
    const revoked = keys ? (await repo.activeSecrets(trx, clientId)).map((s) => s.id) : [];
    for (const id of revoked) {
      await repo.revokeSecretRow(trx, clientId, id);
      await deps.artifacts.markSecretRevoked(id);
    }
    await repo.updateClient(trx, clientId, { keys });
    const details = { from: keySource(current.keys), to: keySource(keys), ...(keys && 'jwksUri' in keys ? { jwks_uri: keys.jwksUri } : {}), ...(revoked.length ? { revoked_secret_ids: revoked } : {}) };
    const events = revoked.map((id) => webhookEvent(clientId, 'secret.revoked', { secret_id: id }));
    return { result: { client: await reread(trx, clientId), revokedSecrets: revoked }, action: 'client.keys_set', details, events };
  });
}

const keySource = (keys: ClientKeys | null | undefined) => (!keys ? 'secret' : 'jwksUri' in keys ? 'jwks_uri' : 'jwks');

/**
 * Which of the client's current scopes the user may untick on the consent page. Never widens what
 * the app may do, so the owner sets it without review.
 */
export async function setOptionalScopes(deps: ChangeDeps, clientId: string, optional: string[], by: Actor): Promise<ClientRecord> {
  return changeClient(deps, clientId, by, async (trx, current) => {
    const valid = validateOptionalScopes(optional, current.scopes);
    await repo.updateClient(trx, clientId, { optionalScopes: valid });
    return { result: await reread(trx, clientId), action: 'client.optional_scopes_set', details: { from: current.optionalScopes, to: valid } };
  });
}

/** Renames the client; the same rule as at registration (the name is shown on consent pages). */
export async function renameClient(deps: ChangeDeps, clientId: string, name: string, by: Actor): Promise<ClientRecord> {
  const valid = validateClientName(name);
  return changeClient(deps, clientId, by, async (trx, current) => {
    await trx('oauth_clients').where('id', clientId).update({ name: valid, updated_at: trx.fn.now() });
    return { result: await reread(trx, clientId), action: 'client.renamed', details: { from: current.name, to: valid } };
  });
}
