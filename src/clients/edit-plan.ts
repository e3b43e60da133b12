// An owner's edit of a client, planned as a pure function of (the client now, what the form asks):
// narrowing applies at once; widening a reviewed client (a new redirect URI, more scopes) waits
// for an administrator as a pending change, while the approved settings stay in force.
import { InputError } from '../errors.ts';
import { isUnscopedLegacy, type ClientRecord } from './model.ts';
import { validateClientScopes, validateRedirectUris } from './validate.ts';

export interface RequestedEdit {
  scopes: string[];
  redirectUris: string[];
}

export interface EditPlan {
  /** The client's scopes and redirect URIs from now on. */
  scopes: string[];
  redirectUris: string[];
  /** What waits for review, if anything widens a reviewed client. */
  pending?: { addScopes: string[]; addRedirectUris: string[] };
}

const minus = (a: readonly string[], b: readonly string[]) => a.filter((x) => !b.includes(x));

export function planEdit(current: ClientRecord, requested: RequestedEdit): EditPlan {
  const redirectUris = validateRedirectUris(requested.redirectUris, current.kind);
  const scopes = validateClientScopes(requested.scopes, current.legacy);
  // A legacy client that still has full access narrows by selecting any scopes (spec 5.6 b).
  const fullAccess = isUnscopedLegacy(current);
  const addScopes = fullAccess ? [] : minus(scopes, current.scopes);
  const addUris = minus(redirectUris, current.redirectUris);
  const removedUris = minus(current.redirectUris, redirectUris);
  const widening = current.status !== 'pending' && (addScopes.length > 0 || addUris.length > 0);
  if (!widening) return { scopes, redirectUris };

  if (removedUris.length === current.redirectUris.length) {
    throw new InputError('keep at least one of the approved redirect URIs until the new ones are reviewed');
  }
  return {
    scopes: fullAccess ? scopes : current.scopes.filter((s) => scopes.includes(s)),
    redirectUris: current.redirectUris.filter((u) => redirectUris.includes(u)),
    pending: { addScopes, addRedirectUris: addUris },
  };
}
