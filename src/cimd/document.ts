// What a client ID metadata document must say to be used (docs/agents.md): the same client_id as
// its URL, exact redirect URIs (as every client's: src/clients/validate.ts), and a way to
// authenticate without a shared secret — `none` (a public client: PKCE required) or
// `private_key_jwt` with a `jwks_uri`. Anything else is refused with the reason.
import { InputError } from '../errors.ts';
import { validateClientLink, validateClientName, validateRedirectUris } from '../clients/validate.ts';
import { isKnownScope, parseScopeList } from '../scopes.ts';
import { DocumentError } from './fetch.ts';
import { allowsLoopback, LOOPBACK_ADDRESS_ONLY } from '../http/loopback.ts';
import type { ClientDocLinks } from './approval.ts';

export type CimdAuthMethod = 'none' | 'private_key_jwt';

/** A document's facts as this server uses them. */
export interface CimdDocument {
  clientId: string;
  name: string;
  redirectUris: string[];
  authMethod: CimdAuthMethod;
  jwksUri?: string;
  /** Known scopes it asks for (its `scope`); empty: it did not say, and may ask for any user scope. */
  scopes: string[];
  /** Its `policy_uri` and `tos_uri`, when usable as the registry's links are. */
  links: ClientDocLinks;
  /** Its `require_pushed_authorization_requests` (RFC 9126 5, docs/par.md): held as a registry client's setting is. */
  requirePar: boolean;
  /** Its `dpop_bound_access_tokens` (RFC 9449 5.2, docs/dpop.md): held as a registry client's setting is. */
  requireDpop: boolean;
}

const MAX_NAME = 100;

/**
 * The links a document or registration gives, each kept only if it passes the registry's rule for
 * links (https, no credentials, no control characters): a link is shown, never needed, so one
 * that does not pass is dropped rather than the client refused.
 */
export function documentLinks(d: Record<string, unknown>): ClientDocLinks {
  const link = (value: unknown) => {
    if (typeof value !== 'string') return null;
    try {
      return validateClientLink(value, 'link');
    } catch (err) {
      if (err instanceof InputError) return null;
      throw err;
    }
  };
  return { policyUri: link(d.policy_uri), tosUri: link(d.tos_uri) };
}
const refuse = (why: string): never => {
  throw new DocumentError(`the client_id metadata document ${why}`);
};

/** The document's text, checked; `clientId` is the URL it was fetched from. */
export function readDocument(text: string, clientId: string, { allowLoopback = false } = {}): CimdDocument {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return refuse('is not JSON');
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return refuse('is not a JSON object');
  const d = doc as Record<string, unknown>;
  if (d.client_id !== clientId) return refuse('states another client_id than its own URL');
  if ('client_secret' in d || 'client_secret_expires_at' in d) return refuse('must not contain a client_secret');
  // Held as stated (docs/par.md, docs/dpop.md): each only narrows what the client may do, so the document's word is enough.
  const par = d.require_pushed_authorization_requests;
  if (par !== undefined && typeof par !== 'boolean') return refuse('must say require_pushed_authorization_requests true or false');
  const dpop = d.dpop_bound_access_tokens;
  if (dpop !== undefined && typeof dpop !== 'boolean') return refuse('must say dpop_bound_access_tokens true or false');
  const method = d.token_endpoint_auth_method;
  if (method !== 'none' && method !== 'private_key_jwt') return refuse('must say token_endpoint_auth_method "none" (with PKCE) or "private_key_jwt"');
  let jwksUri: string | undefined;
  if (method === 'private_key_jwt') {
    const keys = typeof d.jwks_uri === 'string' && URL.canParse(d.jwks_uri) ? new URL(d.jwks_uri) : undefined;
    // Fetched under the document's rules (fetch.ts ruledFetch): https, or the loopback in development.
    const usable = keys && (keys.protocol === 'https:' || allowsLoopback(keys, allowLoopback, LOOPBACK_ADDRESS_ONLY));
    if (!usable) return refuse('must give an https jwks_uri with private_key_jwt');
    jwksUri = d.jwks_uri as string;
  }
  const uris = d.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || !uris.every((u) => typeof u === 'string')) return refuse('must list its redirect_uris');
  let redirectUris: string[];
  let name: string;
  try {
    redirectUris = validateRedirectUris(uris as string[], method === 'none' ? 'public' : 'confidential');
    const stated = typeof d.client_name === 'string' && d.client_name.trim() ? d.client_name.trim().slice(0, MAX_NAME) : new URL(clientId).host;
    name = validateClientName(stated);
  } catch (err) {
    if (err instanceof InputError) return refuse(`is not usable: ${err.message}`);
    throw err;
  }
  const scopes = typeof d.scope === 'string' ? parseScopeList(d.scope).filter(isKnownScope) : [];
  return { clientId, name, redirectUris, authMethod: method, ...(jwksUri ? { jwksUri } : {}), scopes: [...new Set(scopes)], links: documentLinks(d), requirePar: par === true, requireDpop: dpop === true };
}
