// The provider's Client model, read from the client registry tables. Only approved clients exist
// as far as the provider is concerned. Dynamic registration is off, so only find() is used.
import Provider, { errors, type Adapter, type AdapterPayload } from 'oidc-provider';
import { findUsableClient, type UsableClient } from '../clients/service.ts';
import { ALL_SCOPES, LEGACY_FULL_ACCESS } from '../scopes.ts';
import { isUnscopedLegacy } from '../clients/model.ts';
import { HighTrustUnmet, providerView } from '../directory/view.ts';
import type { CachedDb } from '../storage/record-cache.ts';
import { isUrlClientId } from '../cimd/client-id.ts';
import type { CimdClients } from '../cimd/clients.ts';
import { DocumentError } from '../cimd/fetch.ts';
import { registeredClient, storeRegistration } from '../registration/registration.ts';

/** A registry client as the provider's Client model reads it. */
function registryView({ client, secrets }: UsableClient): AdapterPayload {
  const source = { clientId: client.clientId, name: client.name, redirectUris: client.redirectUris };
  // Its budget, as any client's (clients set-rate-limit); null: the server's default.
  const budget = { token_requests_per_minute: client.tokenRequestsPerMinute };
  // Keys instead of a secret (clients set-keys; docs/private-key-jwt.md): private_key_jwt against
  // its jwks_uri (the provider fetches it under the documents' rules) or its registered key set.
  const keys = client.keys ? ('jwksUri' in client.keys ? { jwks_uri: client.keys.jwksUri } : { jwks: structuredClone(client.keys.jwks) }) : undefined;
  const secretMethod = keys ? 'private_key_jwt' : 'client_secret_basic';
  if (client.kind === 'resource_server') {
    // It authenticates with its secrets (or keys), has no redirect URIs and may use no grant: only
    // introspection (see its policy in src/oauth/provider.ts).
    return providerView({ ...source, redirectUris: [], authMethod: secretMethod, flow: 'none' }, {
      ...keys,
      secret_hashes: keys ? [] : secrets,
      resource_server: true,
      // It may introspect only tokens with at least one of these scopes; none listed: any token.
      introspect_scopes: client.scopes,
      // The resource it serves (RFC 8707): it sees only tokens for it; null: the platform API's.
      resource_uri: client.resourceUri ?? null,
      ...budget,
    });
  }
  const unscopedLegacy = isUnscopedLegacy(client);
  return providerView({ ...source, authMethod: client.kind === 'confidential' ? secretMethod : 'none', flow: 'code', highTrust: client.highTrust === true }, {
    ...(client.kind === 'confidential' ? keys : undefined),
    // A legacy client that has not selected scopes may ask for any of them, or for none (docs/legacy-migration.md).
    scope: (unscopedLegacy ? [...ALL_SCOPES, LEGACY_FULL_ACCESS] : client.scopes).join(' '),
    secret_hashes: keys ? [] : secrets,
    // True while a legacy client has not selected scopes yet (step 2 of docs/legacy-migration.md not done).
    legacy: unscopedLegacy,
    // A pending client is usable only by its owner, for testing before review (directory/facts.ts usableBy).
    pending_owner: client.status === 'pending' ? String(client.ownerUserId) : null,
    ...budget,
    // The operator's refresh grace window for this client (clients set-refresh-grace); null: the default.
    refresh_grace_seconds: client.refreshGraceSeconds,
    // Every token request with a DPoP proof (clients set-dpop; docs/dpop.md).
    dpop_bound_access_tokens: client.dpopBoundAccessTokens === true,
    // Every authorization request pushed first (clients set-par; docs/par.md).
    require_pushed_authorization_requests: client.requirePushedAuthorizationRequests === true,
  });
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
  if (!view) views.set(usable, (view = registryView(usable)));
  return view;
}

export class ClientAdapter implements Adapter {
  constructor(
    private readonly clients: CachedDb,
    private readonly cimd?: CimdClients,
    /** DYNAMIC_REGISTRATION=open: registered clients (src/registration/registration.ts) exist too. */
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
        if (err instanceof DocumentError || err instanceof HighTrustUnmet) throw new errors.InvalidClient(err.message);
        throw err;
      }
    }
    try {
      const view = await clientView(this.clients, clientId);
      // A copy: the provider may keep or change what it is given.
      if (view) return { ...view };
      return this.registration ? await registeredClient(this.clients, clientId) : undefined;
    } catch (err) {
      // A high-trust client whose registration falls short of the profile (a registry client cannot:
      // clients/service.ts) is refused with the reason, not a 500.
      throw err instanceof HighTrustUnmet ? new errors.InvalidClient(err.message) : err;
    }
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
