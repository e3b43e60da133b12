// What an administrator's approval of a metadata-document or registered client covers
// (docs/agents.md, "A document that changes"): the scopes, redirect URIs and links it saw. An
// approved client gets what its document asks for now within what was approved: a narrower
// document applies at once, a wider one waits — what it asks beyond the approval is a pending
// change for an administrator. The approval is never narrowed by a document: one that drops a
// scope and asks for it again gets it back without review (it was reviewed), and a document
// that fails or shrinks for a while loses nothing stored. Pure functions, for clients.ts,
// registration.ts and review.ts.
import { createHash } from 'node:crypto';
import { ALL_SCOPES, scopeShape } from '../scopes.ts';

export const isUserScope = (scope: string) => scopeShape(scope).audience === 'you';
const USER_SCOPES = ALL_SCOPES.filter(isUserScope);

/**
 * The client's scopes: what its document asks for (its `scope`), or every user scope when it says
 * none. The tier is applied to each request, not here (the provider checks the client's scopes
 * before ours, and an unreviewed client asking for more is told why: src/oauth/provider.ts,
 * extraParams.scope), and again at consent (src/web/interactions.ts).
 */
export const clientScopes = (asked: readonly string[]): string[] => (asked.length ? [...asked] : [...USER_SCOPES]);

/** The links the consent page shows (a privacy policy, terms of service); null: none. */
export interface ClientDocLinks {
  policyUri: string | null;
  tosUri: string | null;
}

export const NO_LINKS: ClientDocLinks = { policyUri: null, tosUri: null };

/**
 * What a client asks for (its document as last read, or its registration), or what an approval
 * covered. `scopes` as the document says them: empty is "none declared", every user scope
 * (clientScopes).
 */
export interface ClientAsks {
  scopes: string[];
  redirectUris: string[];
  links: ClientDocLinks;
}

/** What a client asks for beyond its approval, waiting for an administrator. */
export interface CimdPendingChange {
  addScopes: string[];
  addRedirectUris: string[];
  /** Links new or changed (each the value asked for; null where the link is not part of the change). */
  setLinks: ClientDocLinks | null;
}

const LINK_KEYS = ['policyUri', 'tosUri'] as const;
const minus = (a: readonly string[], b: readonly string[]) => a.filter((x) => !b.includes(x));

/** What an approved client may use now: what it asks within what was approved. */
export function withinApproval(asks: ClientAsks, approved: ClientAsks): { scopes: string[]; redirectUris: string[]; links: ClientDocLinks } {
  const allowed = clientScopes(approved.scopes);
  const links = { ...NO_LINKS };
  for (const key of LINK_KEYS) if (asks.links[key] !== null && asks.links[key] === approved.links[key]) links[key] = asks.links[key];
  return {
    scopes: clientScopes(asks.scopes).filter((s) => allowed.includes(s)),
    redirectUris: asks.redirectUris.filter((u) => approved.redirectUris.includes(u)),
    links,
  };
}

/** What the client asks for beyond its approval, or undefined when it asks for nothing more. */
export function pendingChange(asks: ClientAsks, approved: ClientAsks): CimdPendingChange | undefined {
  const addScopes = minus(clientScopes(asks.scopes), clientScopes(approved.scopes));
  const addRedirectUris = minus(asks.redirectUris, approved.redirectUris);
  const changedLinks = LINK_KEYS.filter((key) => asks.links[key] !== null && asks.links[key] !== approved.links[key]);
  if (!addScopes.length && !addRedirectUris.length && !changedLinks.length) return undefined;
  const setLinks = changedLinks.length ? { ...NO_LINKS, ...Object.fromEntries(changedLinks.map((key) => [key, asks.links[key]])) } : null;
  return { addScopes, addRedirectUris, setLinks };
}

/** The approval widened by a pending change an administrator approved. */
export function widenApproval(approved: ClientAsks, change: CimdPendingChange): ClientAsks {
  const links = { ...approved.links };
  for (const key of LINK_KEYS) if (change.setLinks?.[key]) links[key] = change.setLinks[key];
  return {
    // Listed from then on: "none declared" (every user scope) and the scopes added.
    scopes: [...new Set([...clientScopes(approved.scopes), ...change.addScopes])],
    redirectUris: [...new Set([...approved.redirectUris, ...change.addRedirectUris])],
    links,
  };
}

/** A short fingerprint of what an administrator was shown, so that a decision is on what was seen. */
export const fingerprint = (value: ClientAsks | CimdPendingChange) => {
  const shown = 'addScopes' in value ? [value.addScopes, value.addRedirectUris, value.setLinks] : [value.scopes, value.redirectUris, value.links];
  return createHash('sha256').update(JSON.stringify(shown)).digest('base64url').slice(0, 16);
};
