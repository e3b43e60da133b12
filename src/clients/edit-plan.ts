// An owner's edit of a client, planned as a pure function of (the client now, what the form asks):
// narrowing applies at once; widening a reviewed client (a new redirect URI, more scopes, a new
// policy or terms link) waits for an administrator as a pending change, while the approved
// settings stay in force. A client that has scopes never loses them all by an edit: back to none
// is full access for a legacy client, a widening that always waits for an administrator.
import { InputError } from '../errors.ts';
import { isUnscopedLegacy, type ChangeRequest, type ClientRecord, type StoredLinks } from './model.ts';
import { validateClientScopes, validateRedirectUris } from './validate.ts';

export interface RequestedEdit {
  scopes: string[];
  redirectUris: string[];
  /** The links the form asks for, validated (null: none); absent: they stay as they are. */
  links?: StoredLinks;
}

export interface EditPlan {
  /** The client's scopes, redirect URIs and links from now on. */
  scopes: string[];
  redirectUris: string[];
  links: StoredLinks;
  /** What waits for review, if anything widens a reviewed client. */
  pending?: ChangeRequest;
}

const minus = (a: readonly string[], b: readonly string[]) => a.filter((x) => !b.includes(x));

/** Each link stays, goes at once (removing shows users less), or waits when it is new or changed. */
function planLinks(current: StoredLinks, requested: StoredLinks, reviewed: boolean): { now: StoredLinks; widens: boolean } {
  const now = { ...current };
  let widens = false;
  for (const key of ['policyUri', 'tosUri'] as const) {
    if (requested[key] === current[key]) continue;
    if (requested[key] === null || !reviewed) now[key] = requested[key];
    else widens = true;
  }
  return { now, widens };
}

export function planEdit(current: ClientRecord, requested: RequestedEdit): EditPlan {
  const redirectUris = validateRedirectUris(requested.redirectUris, current.kind);
  const scopes = validateClientScopes(requested.scopes, current.legacy);
  const currentLinks = { policyUri: current.policyUri, tosUri: current.tosUri };
  const reviewed = current.status !== 'pending';
  // A legacy client that still has full access narrows by selecting any scopes (step 2 of docs/legacy-migration.md).
  const fullAccess = isUnscopedLegacy(current);
  // Back to no scopes is back to full access: never at once, whatever the client's status.
  const toFullAccess = !fullAccess && scopes.length === 0;
  const addScopes = fullAccess ? [] : minus(scopes, current.scopes);
  const addUris = minus(redirectUris, current.redirectUris);
  const removedUris = minus(current.redirectUris, redirectUris);
  const links = planLinks(currentLinks, requested.links ?? currentLinks, reviewed);
  const widening = toFullAccess || (reviewed && (addScopes.length > 0 || addUris.length > 0 || links.widens));
  if (!widening) return { scopes, redirectUris, links: links.now };

  const heldUris = reviewed ? addUris : [];
  if (heldUris.length > 0 && removedUris.length === current.redirectUris.length) {
    throw new InputError('keep at least one of the approved redirect URIs until the new ones are reviewed');
  }
  // Until the change is decided the client keeps what it has and the form does not take away.
  const scopesNow = fullAccess ? scopes : toFullAccess ? current.scopes : current.scopes.filter((s) => scopes.includes(s));
  if (!fullAccess && scopesNow.length === 0) {
    // No scopes while the new ones wait would be none at all (full access, for a legacy client).
    throw new InputError('keep at least one of the approved scopes until the new ones are reviewed');
  }
  return {
    scopes: scopesNow,
    redirectUris: reviewed ? current.redirectUris.filter((u) => redirectUris.includes(u)) : redirectUris,
    links: links.now,
    pending: {
      addScopes,
      addRedirectUris: heldUris,
      toFullAccess,
      ...(links.widens ? { setLinks: requested.links! } : {}),
    },
  };
}
