// Open dynamic client registration (RFC 7591), off unless an operator sets
// DYNAMIC_REGISTRATION=open (docs/agents.md). A registered client lands as a metadata-document
// client does: unreviewed, in the limited tier, listed for review, decided the same way. It has no
// host of its own: the hosts of its redirect URIs are only named by it, so it is shown as
// "registered by itself", never by one of them; a host block covering any of them refuses it. It authenticates without a shared secret (`none` with
// PKCE, or `private_key_jwt`), so nothing secret is stored; no registration access token is
// issued (no RFC 7592 management). A registration with no token issued within an hour is removed
// by a sweep (src/system.ts): registration floods leave nothing behind.
import { randomBytes } from 'node:crypto';
import { errors, type AdapterPayload } from 'oidc-provider';
import { providerView } from '../directory/view.ts';
import type { Db } from '../storage/db.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import { validateClientName, validateRedirectUris } from '../clients/validate.ts';
import { InputError } from '../errors.ts';
import { isKnownScope, parseScopeList } from '../scopes.ts';
import { defaultScope, reviewedAsks } from '../cimd/clients.ts';
import { documentLinks, type CimdAuthMethod } from '../cimd/document.ts';
import { DocumentError } from '../cimd/fetch.ts';
import { approvalOf, blockCovering, type StoredApproval } from '../cimd/store.ts';
import type { CimdStatus } from '../directory/status.ts';
import { hostnameOf } from '../cimd/host-blocks.ts';
import { POLICY } from '../settings.ts';

/**
 * A registered client's id: 128 random bits in base64url (the library's form of ids), never
 * starting with '-', which an operator script would take for an option (`clients approve -x…`).
 */
export function registeredClientId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (id[0] !== '-') return id;
  }
}

/** How long a registration may go without a token before the sweep removes it. */
export const UNUSED_REGISTRATION_SECONDS = POLICY.UNUSED_REGISTRATION_SECONDS.value;

// What a registration keeps of the metadata the provider validated: the standard fields it uses.
// require_pushed_authorization_requests (RFC 9126 5, docs/par.md) and dpop_bound_access_tokens
// (RFC 9449 5.2, docs/dpop.md) stand as registered: each only narrows what the client may do.
const KEPT = ['client_name', 'redirect_uris', 'token_endpoint_auth_method', 'jwks_uri', 'jwks', 'grant_types', 'response_types', 'application_type', 'scope', 'logo_uri', 'client_uri', 'policy_uri', 'tos_uri', 'client_id_issued_at', 'require_pushed_authorization_requests', 'dpop_bound_access_tokens'];

/** Checks and stores a registration (the provider's Client adapter upsert); throws invalid_client_metadata. */
export async function storeRegistration(db: Db, clientId: string, metadata: AdapterPayload): Promise<void> {
  const method = metadata.token_endpoint_auth_method;
  if (method !== 'none' && method !== 'private_key_jwt') {
    throw new errors.InvalidClientMetadata('token_endpoint_auth_method must be none (with PKCE) or private_key_jwt: this server keeps no shared secrets of registered clients');
  }
  let redirectUris: string[];
  let name: string | null = null;
  try {
    redirectUris = validateRedirectUris((metadata.redirect_uris as string[] | undefined) ?? [], method === 'none' ? 'public' : 'confidential');
  } catch (err) {
    if (err instanceof InputError) throw new errors.InvalidClientMetadata(`redirect_uris: ${err.message}`);
    throw err;
  }
  try {
    // Shown on the consent page: the registry's rule for names (no control or text-direction characters).
    if (typeof metadata.client_name === 'string') name = validateClientName(metadata.client_name.trim().slice(0, 100));
  } catch (err) {
    if (err instanceof InputError) throw new errors.InvalidClientMetadata(`client_name: ${err.message}`);
    throw err;
  }
  const kept: Record<string, unknown> = Object.fromEntries(KEPT.filter((k) => metadata[k] !== undefined).map((k) => [k, metadata[k]]));
  if (name) kept.client_name = name;
  const scopes = typeof metadata.scope === 'string' ? parseScopeList(metadata.scope).filter(isKnownScope) : [];
  // Shown on the consent page once approved (approval.ts), under the rule of a document's links.
  const links = documentLinks(metadata);
  await db('cimd_clients').insert({
    client_id: clientId,
    host: new URL(redirectUris[0]!).host.toLowerCase(),
    registered: true,
    registration: JSON.stringify(kept),
    name,
    redirect_uris: JSON.stringify(redirectUris),
    scopes: JSON.stringify(scopes),
    policy_uri: links.policyUri,
    tos_uri: links.tosUri,
    token_endpoint_auth_method: method,
  });
}

interface RegisteredRow {
  status: CimdStatus;
  token_endpoint_auth_method: CimdAuthMethod;
  registration: Record<string, unknown>;
  redirect_uris: string[];
  scopes: string[];
  policy_uri: string | null;
  tos_uri: string | null;
  approved: StoredApproval | null;
  high_trust: boolean;
}

/** The provider's view of a registered client, or undefined; a rejected one or a blocked host is invalid_client. */
export async function registeredClient(deps: { db: Db; records: RecordCache }, clientId: string): Promise<AdapterPayload | undefined> {
  const row = await deps.records.read('client', clientId, async () => {
    const found: RegisteredRow | undefined = await deps.db('cimd_clients').where({ client_id: clientId, registered: true }).first('status', 'token_endpoint_auth_method', 'registration', 'redirect_uris', 'scopes', 'policy_uri', 'tos_uri', 'approved', 'high_trust');
    return found ?? null;
  });
  if (!row) return undefined;
  const blocks = await Promise.all([...new Set(row.redirect_uris.map(hostnameOf))].map((hostname) => blockCovering(deps, hostname)));
  const block = blocks.find((b) => b !== undefined);
  if (block) throw new errors.InvalidClient(`apps sending users back to ${block} are blocked on this server`);
  if (row.status === 'rejected') throw new errors.InvalidClient('this app was rejected by an administrator');
  // Without RFC 7592 a registration never changes; what it may use is decided as a document's is.
  const { policy_uri: _policy, tos_uri: _tos, ...registration } = row.registration;
  let reviewed: ReturnType<typeof reviewedAsks>;
  try {
    reviewed = reviewedAsks({ scopes: row.scopes, redirectUris: row.redirect_uris, links: { policyUri: row.policy_uri, tosUri: row.tos_uri } }, { status: row.status, approved: approvalOf(row.approved) });
  } catch (err) {
    if (err instanceof DocumentError) throw new errors.InvalidClient(err.message);
    throw err;
  }
  const { redirect_uris: redirectUris, ...facts } = reviewed;
  // Without RFC 7592 its standard metadata stands as registered (`registered`); no host: see the top of this file.
  return providerView(
    { clientId, redirectUris, authMethod: row.token_endpoint_auth_method, flow: 'code', registered: registration, highTrust: row.high_trust === true },
    { ...facts, default_scope: defaultScope(row.scopes, reviewed.scope), cimd_host: null },
  );
}

/** Marks that a registered client was issued a token (it then stays). Once per client per process. */
export function tokenIssuedRecorder(db: Db) {
  const marked = new Set<string>();
  return async (clientId: string) => {
    if (marked.has(clientId)) return;
    await db('cimd_clients').where({ client_id: clientId, registered: true }).whereNull('first_token_at').update({ first_token_at: db.fn.now() });
    marked.add(clientId);
  };
}

/** Removes registrations that had no token within UNUSED_REGISTRATION_SECONDS; answers how many. */
export async function sweepRegistrations({ db, records }: { db: Db; records: RecordCache }): Promise<number> {
  const ids: string[] = await db('cimd_clients')
    .where('registered', true)
    .whereNull('first_token_at')
    .where('first_seen_at', '<', db.raw(`now() - interval '${UNUSED_REGISTRATION_SECONDS} seconds'`))
    .delete()
    .returning('client_id')
    .then((rows: Array<{ client_id: string }>) => rows.map((r) => r.client_id));
  for (const id of ids) await records.announce(db, 'client', id);
  return ids.length;
}
