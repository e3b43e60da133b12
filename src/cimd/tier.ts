// The limited tier's checks at consent (docs/agents.md): an unreviewed metadata-document client
// may have at most CIMD_MAX_USERS users (users holding a grant of it); the next one is refused with
// access_denied. The page says the app is unreviewed and where it comes from.
import type { Db } from '../storage/db.ts';
import { isUserScope } from './approval.ts';
import { factsOf, isUnreviewed, reviewOf, scopesOf } from '../directory/facts.ts';
import { usersOf } from './store.ts';

/** The reason a new user may not authorize this client now, or undefined. */
export async function userLimitReached(db: Db, client: { clientId: string }, accountId: string, maxUsers: number): Promise<string | undefined> {
  if (!isUnreviewed(client)) return undefined;
  const { count, includes } = await usersOf(db, client.clientId, accountId);
  if (includes || count < maxUsers) return undefined;
  return `This app has not been reviewed yet and already has as many users as an unreviewed app may have (${maxUsers}). Try again once it has been reviewed.`;
}

/**
 * What the consent page says of an unreviewed metadata-document or self-registered client
 * (partials/unreviewed-notice.ejs): the host that serves its document, or null when it registered
 * itself (the hosts it names were never checked).
 */
export function unreviewedApp(client: object): { host: string | null } | undefined {
  const review = reviewOf(client);
  return review && review.status !== 'approved' ? { host: review.host } : undefined;
}

/**
 * What the consent page's facts say of a metadata-document or self-registered client, in place of
 * the registry's: it is reviewed when approved, and who stands behind it is the host that
 * publishes its document — or nobody known, for a client that registered itself. Its links are
 * those an administrator approved (the provider's view holds no other: clients.ts reviewedAsks);
 * an unreviewed client shows none.
 */
export function consentFacts(client: object): { reviewed?: boolean; developer?: { name: string; email: string } | undefined; byOperators?: boolean; selfRegistered?: boolean; policyUri?: string | null; tosUri?: string | null } {
  const review = reviewOf(client);
  if (!review) return {};
  const reviewed = review.status === 'approved';
  const { policyUri, tosUri } = factsOf(client);
  const links = { policyUri: (reviewed && policyUri) || null, tosUri: (reviewed && tosUri) || null };
  if (review.host === null) return { reviewed, developer: undefined, byOperators: false, selfRegistered: true, ...links };
  return { reviewed, developer: { name: '', email: review.host }, byOperators: false, ...links };
}

/** The scopes a client may be granted now: its own, only user scopes while it is an unreviewed metadata-document client. */
export function tierScopes(client: object): string[] {
  const scopes = scopesOf(client);
  return isUnreviewed(client) ? scopes.filter(isUserScope) : scopes;
}
