// What a registry client is: its kinds and its limits (its statuses and the decisions between them
// are every kind's status machine, src/directory/status.ts). Spelled once here; the pages, the
// scripts and the service read them.
import { createHash } from 'node:crypto';
import { POLICY } from '../settings.ts';
import type { ClientStatus } from '../directory/status.ts';

/**
 * confidential: a server-side app with a secret; public: a native or browser app (PKCE, no secret);
 * resource_server: an API or gateway that introspects others' tokens and obtains none itself.
 */
export type ClientKind = 'confidential' | 'public' | 'resource_server';

/** Kinds that authenticate with a secret (and rotate two of them). */
export const hasSecrets = (kind: ClientKind) => kind !== 'public';

export const MAX_REDIRECT_URIS = POLICY.MAX_REDIRECT_URIS.value;
export const MAX_ACTIVE_SECRETS = POLICY.MAX_ACTIVE_SECRETS.value; // docs/secret-rotation.md
export const MAX_TOKEN_REQUESTS_PER_MINUTE = POLICY.MAX_TOKEN_REQUESTS_PER_MINUTE.value;
/** The longest refresh grace window a client may have (as REFRESH_GRACE_SECONDS). */
export const MAX_REFRESH_GRACE_SECONDS = POLICY.MAX_REFRESH_GRACE_SECONDS.value;

/** Who makes a change, and why: recorded in the audit trail. */
export interface Actor {
  actor: string;
  reason?: string | undefined;
}

export interface ClientRecord {
  clientId: string;
  name: string;
  kind: ClientKind;
  status: ClientStatus;
  legacy: boolean;
  scopes: string[];
  /** Scopes (of `scopes`) the user may untick on the consent page; the app works without them. */
  optionalScopes: string[];
  redirectUris: string[];
  /** The user who registered it in the developer settings; null when an operator did. */
  ownerUserId: number | null;
  /** Its own budget of token requests per minute (clients set-rate-limit); null: the default. */
  tokenRequestsPerMinute: number | null;
  /** Its own refresh grace window in seconds, 0 = off (clients set-refresh-grace); null: the default. */
  refreshGraceSeconds: number | null;
  /** The app's privacy policy and terms of service, shown on the consent page; null when not given. */
  policyUri: string | null;
  tosUri: string | null;
  /**
   * A resource server's resource (RFC 8707, docs/resources.md): the audience of the tokens issued
   * for it, and the only tokens it may introspect. Null: it serves the platform API.
   */
  resourceUri?: string | null;
  /** Every token request must carry a DPoP proof (RFC 9449 5.2; clients set-dpop, the developer page). */
  dpopBoundAccessTokens?: boolean;
  /** Every authorization request must be pushed first (RFC 9126 5; clients set-par, the developer page). */
  requirePushedAuthorizationRequests?: boolean;
  /**
   * Held to the high-trust profile (FAPI 2.0 Security Profile; clients set-high-trust, the
   * developer page): PAR, PKCE, DPoP and keys required, whatever the two settings above say
   * (src/directory/view.ts). Only a confidential client with keys may be.
   */
  highTrust?: boolean;
  /**
   * The keys it authenticates with (private_key_jwt, RFC 7523; clients set-keys, the developer
   * page): then it has no secret. Null: it authenticates as its kind does (a secret, or none).
   */
  keys?: ClientKeys | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A client's registered public keys: where they are published, or the set itself (docs/private-key-jwt.md). */
export type ClientKeys = { jwksUri: string } | { jwks: { keys: Array<Record<string, unknown>> } };

/** Kinds that may authenticate with keys instead of a secret: those that authenticate at all. */
export const mayUseKeys = (kind: ClientKind) => kind !== 'public';

/** Whether the client authenticates with private_key_jwt (and so has no secret). */
export const usesKeys = (client: Pick<ClientRecord, 'keys'>) => Boolean(client.keys);

/** A legacy client that has not selected scopes yet: it still has full access (docs/legacy-migration.md). */
export const isUnscopedLegacy = (client: Pick<ClientRecord, 'legacy' | 'scopes'>) => client.legacy && client.scopes.length === 0;

/** The optional links of a client (see ClientRecord); '' or absent means none. */
export interface ClientLinks {
  policyUri?: string | undefined;
  tosUri?: string | undefined;
}

export interface SecretInfo {
  id: number;
  /** Its place among the client's secrets, revoked ones counted (1 for the first): what the pages call it. */
  number: number;
  createdAt: Date;
  lastUsedAt: Date | null;
  /** When it expires by itself (a lifetime, or a rotation's overlap); null: never. */
  expiresAt: Date | null;
}

/** The links a pending change sets when approved (null: that link removed). */
export interface StoredLinks {
  policyUri: string | null;
  tosUri: string | null;
}

/** What an owner's edit asks an administrator for: each part widens what the client may do or show. */
export interface ChangeRequest {
  addScopes: string[];
  addRedirectUris: string[];
  /** A migrated legacy client back to no scopes: full access again (docs/legacy-migration.md). */
  toFullAccess: boolean;
  /** New privacy-policy or terms links; absent: the links stay. */
  setLinks?: StoredLinks;
}

export interface PendingChange extends ChangeRequest {
  id: number;
  clientId: string;
  requestedBy: string;
  requestedAt: Date;
}

/**
 * What a reviewer sees of a client, as a short digest: a review form carries it, and a decision on
 * a client that changed since (a redirect URI replaced while the page was open) is refused.
 */
export function clientVersion(client: ClientRecord): string {
  const seen = [client.name, client.kind, client.status, client.legacy, client.scopes, client.redirectUris, client.ownerUserId, client.policyUri, client.tosUri];
  return createHash('sha256').update(JSON.stringify(seen)).digest('base64url').slice(0, 22);
}
