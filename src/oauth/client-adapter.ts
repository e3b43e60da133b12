// The provider's Client model, read from the client registry tables. Only approved clients exist
// as far as the provider is concerned. Dynamic registration is off, so only find() is used.
import { createHmac, randomBytes } from 'node:crypto';
import Provider, { errors, type Adapter, type AdapterPayload } from 'oidc-provider';
import { findUsableClient, type UsableClient } from '../clients/service.ts';
import { ALL_SCOPES, LEGACY_FULL_ACCESS } from '../scopes.ts';
import { isNativeRedirect } from '../clients/validate.ts';
import type { CachedDb } from '../storage/record-cache.ts';
import { isUrlClientId } from '../cimd/client-id.ts';
import type { CimdClients } from '../cimd/clients.ts';
import { DocumentError } from '../cimd/fetch.ts';
import { registeredClient, storeRegistration } from '../cimd/registration.ts';

// The schema requires a client_secret for secret-based auth methods, but we keep only hashes.
// This placeholder is unguessable and never accepted: compareClientSecret checks the hashes.
const placeholderKey = randomBytes(32);
const placeholderSecret = (clientId: string) => createHmac('sha256', placeholderKey).update(clientId).digest('base64url');


/**
 * A resource server as the provider sees it: it authenticates with its secrets, has no redirect
 * URIs and may use no grant — only introspection (see its policy in src/oauth/provider.ts).
 */
function resourceServer({ client, secrets }: UsableClient): AdapterPayload {
  return {
    client_id: client.clientId,
    client_name: client.name,
    redirect_uris: [],
    response_types: [],
    grant_types: [],
    token_endpoint_auth_method: 'client_secret_basic',
    client_secret: placeholderSecret(client.clientId),
    secret_hashes: secrets,
    resource_server: true,
    // It may introspect only tokens with at least one of these scopes; none listed: any token.
    introspect_scopes: client.scopes,
    // The resource it serves (RFC 8707): it sees only tokens for it; null: the platform API's.
    resource_uri: client.resourceUri ?? null,
    // Its budget, as any client's: a gateway introspects on every call it serves.
    token_requests_per_minute: client.tokenRequestsPerMinute,
  };
}

/** A client record as the provider's Client model reads it. */
function providerView({ client, secrets }: UsableClient): AdapterPayload {
  if (client.kind === 'resource_server') return resourceServer({ client, secrets });
  const confidential = client.kind === 'confidential';
  return {
    client_id: client.clientId,
    client_name: client.name,
    redirect_uris: client.redirectUris,
    response_types: ['code'],
    // Only the query response mode (RFC 6749): no fragment, no auto-submitting form_post page.
    response_modes: ['query'],
    grant_types: ['authorization_code', 'refresh_token'],
    // A public client with a loopback or private-use redirect is a native app (RFC 8252): the
    // provider then accepts its loopback redirect on any port (7.3). Everything else matches exactly.
    application_type: !confidential && client.redirectUris.some(isNativeRedirect) ? 'native' : 'web',
    token_endpoint_auth_method: confidential ? 'client_secret_basic' : 'none',
    ...(confidential ? { client_secret: placeholderSecret(client.clientId) } : {}),
    // A legacy client that has not selected scopes may ask for any of them, or for none (docs/legacy-migration.md).
    scope: (client.legacy && client.scopes.length === 0 ? [...ALL_SCOPES, LEGACY_FULL_ACCESS] : client.scopes).join(' '),
    // Custom metadata (see extraClientMetadata in src/oauth/provider.ts).
    secret_hashes: secrets,
    // True while a legacy client has not selected scopes yet (step 2 of docs/legacy-migration.md not done).
    legacy: client.legacy && client.scopes.length === 0,
    // A pending client is usable only by its owner, for testing before review.
    pending_owner: client.status === 'pending' ? String(client.ownerUserId) : null,
    // The operator's budget for this client (clients set-rate-limit); null: the server's default.
    token_requests_per_minute: client.tokenRequestsPerMinute,
    // The operator's refresh grace window for this client (clients set-refresh-grace); null: the default.
    refresh_grace_seconds: client.refreshGraceSeconds,
    // Every token request with a DPoP proof (clients set-dpop; docs/dpop.md).
    dpop_bound_access_tokens: client.dpopBoundAccessTokens === true,
  };
}

// The provider's view of each cached record, made once: a client is looked up on every token
// request, and the view costs an HMAC and an object. A changed record is a new object (the record
// cache drops the old one), so its view is made anew.
const views = new WeakMap<UsableClient, AdapterPayload>();

/**
 * The provider's view of a usable client: the same object for as long as its record is cached,
 * a new one once the record changed (or for every read while the cache is bypassed). Not to be
 * changed: the adapter hands the provider copies.
 */
export async function clientView(clients: CachedDb, clientId: string): Promise<Readonly<AdapterPayload> | undefined> {
  const usable = await findUsableClient(clients, clientId);
  if (!usable) return undefined;
  let view = views.get(usable);
  if (!view) views.set(usable, (view = providerView(usable)));
  return view;
}

export class ClientAdapter implements Adapter {
  constructor(
    private readonly clients: CachedDb,
    private readonly cimd?: CimdClients,
    /** DYNAMIC_REGISTRATION=open: registered clients (src/cimd/registration.ts) exist too. */
    private readonly registration = false,
  ) {}

  async find(clientId: string): Promise<AdapterPayload | undefined> {
    // A URL client_id is a metadata document's (src/cimd/), never a registered client: a document
    // that cannot be used is invalid_client with the reason (the error page, at authorization).
    if (isUrlClientId(clientId)) {
      try {
        // The requester's address (its fetch limit: src/cimd/fetch-limits.ts), as our app judged
        // it (TRUST_PROXY: src/oauth/mount.ts hands it over); none outside the provider's requests.
        return await this.cimd?.find(clientId, Provider.ctx?.ip);
      } catch (err) {
        if (err instanceof DocumentError) throw new errors.InvalidClient(err.message);
        throw err;
      }
    }
    const view = await clientView(this.clients, clientId);
    // A copy: the provider may keep or change what it is given.
    if (view) return { ...view };
    return this.registration ? registeredClient(this.clients, clientId) : undefined;
  }

  /** Only open dynamic registration stores a client through the provider; the registry is the scripts' and pages'. */
  async upsert(clientId: string, metadata: AdapterPayload): Promise<void> {
    if (!this.registration) throw new Error('clients are managed by the operator scripts, not by the provider');
    await storeRegistration(this.clients.db, clientId, metadata);
  }
  async destroy(): Promise<void> {
    throw new Error('clients are managed by the operator scripts, not by the provider');
  }
  async consume(): Promise<void> {}
  async revokeByGrantId(): Promise<void> {}
  async findByUid(): Promise<undefined> {
    return undefined;
  }
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }
}
