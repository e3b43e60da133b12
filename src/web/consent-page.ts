// What the consent page says about a request: who is asking (the app, its developer, whether the
// platform reviewed it, its policies), where the browser goes back to, and what the app would get,
// grouped the way people read it. Read from the registry as it is now, not from the request.
import { findUserById } from '../accounts/store.ts';
import { findClient } from '../clients/service.ts';
import { groupScopes, LEGACY_FULL_ACCESS } from '../scopes.ts';
import type { CachedDb } from '../storage/record-cache.ts';

export interface ConsentRequest {
  clientId: string;
  clientName: string;
  /** The scope names of the request; the legacy marker means full access. */
  requested: string[];
  /** This request's redirect_uri, or undefined when the client's only one is implied. */
  redirectUri: string | undefined;
}

/** Where Allow or Deny sends the browser: a web address, or an app on this device. */
export interface ReturnTarget {
  place: string;
  onDevice: boolean;
}

export function returnTarget(redirectUri: string): ReturnTarget {
  let url: URL;
  try {
    url = new URL(redirectUri);
  } catch {
    return { place: redirectUri, onDevice: false };
  }
  if (url.protocol === 'https:') return { place: url.host, onDevice: false };
  // Registered http is loopback only; other schemes are a native app's own (com.example.app:).
  if (url.protocol === 'http:') return { place: url.host, onDevice: true };
  return { place: url.protocol.slice(0, -1), onDevice: true };
}

export async function consentPageData(users: CachedDb, request: ConsentRequest) {
  const record = await findClient(users.db, request.clientId);
  const owner = record?.ownerUserId ? await findUserById(users, record.ownerUserId) : undefined;
  const scopes = request.requested.filter((s) => s !== LEGACY_FULL_ACCESS);
  const redirectUri = request.redirectUri ?? record?.redirectUris[0];
  return {
    clientName: request.clientName,
    // No owner: registered with the operator scripts. An owner whose account is gone: unknown.
    developer: owner ? { name: owner.name, email: owner.email } : undefined,
    byOperators: record !== undefined && record.ownerUserId === null,
    reviewed: record?.status === 'approved',
    policyUri: record?.policyUri ?? null,
    tosUri: record?.tosUri ?? null,
    returnTo: redirectUri ? returnTarget(redirectUri) : undefined,
    fullAccess: request.requested.includes(LEGACY_FULL_ACCESS),
    groups: groupScopes(scopes),
    codes: scopes,
  };
}
