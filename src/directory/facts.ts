// What our code reads back from the provider's Client object: the custom metadata our provider
// views carry (src/directory/view.ts; declared as extraClientMetadata in src/oauth/provider.ts),
// and the few standard fields a rule needs. Read through factsOf, and only there: the one place
// that says what type they have. The rules every kind shares that hang on them — "is it
// unreviewed", "a pending client is usable only by its owner" — are said here once.
import type { CimdStatus } from './status.ts';

/** A client secret as stored: its hash, never the secret. */
export interface StoredSecret {
  id: number;
  hash: string;
  /** When it expires (ms since the epoch); null or absent: never. */
  expires?: number | null;
}

/** The custom metadata of a provider view (extraClientMetadata). Absent: not that kind's. */
export interface ClientFacts {
  /** A client with secrets (registry confidential, resource server): their hashes, never a secret. */
  secret_hashes?: StoredSecret[];
  /** True while a legacy client has not selected scopes yet (docs/legacy-migration.md). */
  legacy?: boolean;
  /** A pending registry client's owner (a user id): only they may use it before review. */
  pending_owner?: string | null;
  /** The operator's budget for this client (clients set-rate-limit); null: the server's default. */
  token_requests_per_minute?: number | null;
  /** The operator's refresh grace window for this client (clients set-refresh-grace); null: the default. */
  refresh_grace_seconds?: number | null;
  /** A resource server: it only introspects (src/oauth/provider.ts resourceServerMayIntrospect). */
  resource_server?: boolean;
  /** Which tokens a resource server may introspect (one of these scopes); none listed: any. */
  introspect_scopes?: string[];
  /** The resource a resource server serves (RFC 8707); null: the platform API. */
  resource_uri?: string | null;
  /** A metadata-document or registered client's review status (the limited tier until approved). */
  cimd_status?: CimdStatus;
  /** A document client's host (its URL's, which served the document); null for a self-registered client, which has none. */
  cimd_host?: string | null;
  /**
   * The scope its metadata declared (a document's or a registration's `scope`), which a request
   * without `scope` asks for (RFC 6749 3.3, a pre-defined default); null: it declared none.
   */
  default_scope?: string | null;
  /** Scopes an approved client asks for beyond its approval: refused until an administrator reviews them (src/cimd/approval.ts). */
  cimd_held_scopes?: string[];
  /** Held to the high-trust profile (FAPI 2.0 Security Profile; src/oauth/high-trust.ts). */
  high_trust?: boolean;
}

/** Every custom field, as the provider's extraClientMetadata lists them. */
export const FACT_NAMES = [
  'secret_hashes',
  'legacy',
  'pending_owner',
  'token_requests_per_minute',
  'refresh_grace_seconds',
  'resource_server',
  'introspect_scopes',
  'resource_uri',
  'cimd_status',
  'cimd_host',
  'default_scope',
  'cimd_held_scopes',
  'high_trust',
] as const satisfies ReadonlyArray<keyof ClientFacts>;

/** The standard fields (as the library's Client names them) that our rules read too. */
export interface ProviderClient extends ClientFacts {
  clientId?: string;
  scope?: string;
  clientAuthMethod?: string;
  policyUri?: string;
  tosUri?: string;
}

const NONE: Readonly<ProviderClient> = Object.freeze({});

/** The facts of a client the provider found (its Client, or our view of it); none for no client. */
export const factsOf = (client: object | undefined): Readonly<ProviderClient> => (client ?? NONE) as ProviderClient;

/** The facts of a client the provider found, with its id (the library's Client, whose extra fields it types as unknown). */
export const factsWithId = (client: { clientId: string }): Readonly<ProviderClient & { clientId: string }> => client as ProviderClient & { clientId: string };

/** How a client was reviewed when it is a metadata-document or registered one; undefined for the registry's. */
export function reviewOf(client: object | undefined): { status: CimdStatus; host: string | null } | undefined {
  const facts = factsOf(client);
  return facts.cimd_status ? { status: facts.cimd_status, host: facts.cimd_host ?? null } : undefined;
}

/** A metadata-document or registered client no administrator has decided on: the limited tier (docs/agents.md). */
export const isUnreviewed = (client: object | undefined): boolean => factsOf(client).cimd_status === 'unreviewed';

/**
 * A pending registry client is usable only by its owner, for testing before review: whether this
 * account (undefined: nobody signed in) may use it. Metadata-document and registered clients have
 * no owner: their limited tier (src/cimd/tier.ts) stands in for it.
 */
export function usableBy(client: object | undefined, accountId: string | undefined): boolean {
  const owner = factsOf(client).pending_owner;
  return !owner || owner === accountId;
}

/** Why a pending client is refused to everyone but its owner, as the pages say it. */
export const WAITING_FOR_REVIEW = 'This app is waiting for review by an administrator; only its developer can use it until then. Nothing was shared with it.';

/** The client's own scopes (its view's `scope`). */
export const scopesOf = (client: object | undefined): string[] => factsOf(client).scope?.split(' ').filter(Boolean) ?? [];

/** What a request without `scope` asks for: the scope the client declared; none for a registry client (`scope` required). */
export const defaultScopes = (client: object | undefined): string[] => factsOf(client).default_scope?.split(' ').filter(Boolean) ?? [];

/** Of `scopes`, those the client asks for that no administrator has approved yet (an approved client's document widened). */
export function heldForReview(client: object | undefined, scopes: readonly string[]): string[] {
  const held = factsOf(client).cimd_held_scopes ?? [];
  return scopes.filter((s) => held.includes(s));
}
