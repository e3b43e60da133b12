// Rules for what a client may be registered with (docs/operations.md: operator scripts, redirect URIs).
import { InputError } from '../errors.ts';
import { isKnownScope, suggestScope } from '../scopes.ts';
import { hasUnsafeText } from '../text.ts';
import { allowsLoopback, REDIRECT_URI_LOOPBACK } from '../http/loopback.ts';

import { MAX_REDIRECT_URIS, type ClientKind, type ClientLinks } from './model.ts';
import { POLICY } from '../settings.ts';

/** https anywhere; http only on loopback; a private-use scheme (RFC 8252 7.1) only for public clients. */
export function validateRedirectUri(uri: string, kind: ClientKind): string {
  if (kind === 'resource_server') throw new InputError('a resource server has no redirect URIs: it obtains no tokens, it only introspects them');
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new InputError(`redirect URI must be an absolute URL: "${uri}"`);
  }
  if (uri.includes('#')) throw new InputError(`redirect URI must not have a fragment: "${uri}"`);
  // `*` would only ever match itself: registering one misleads the developer into expecting a wildcard.
  if (uri.includes('*')) throw new InputError(`redirect URIs are matched exactly, so "*" is not a wildcard: register each URI in full: "${uri}"`);
  if (url.username || url.password) throw new InputError(`redirect URI must not carry credentials: "${uri}"`);
  if (url.protocol === 'https:') return uri;
  if (url.protocol === 'http:') {
    if (allowsLoopback(url, REDIRECT_URI_LOOPBACK)) return uri;
    throw new InputError(`redirect URI must use https (http only for localhost, 127.0.0.1 or [::1]): "${uri}"`);
  }
  // Private-use URI schemes are reverse domain names, e.g. com.example.app:/callback.
  if (/^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(url.protocol)) {
    if (kind === 'public') return uri;
    throw new InputError(`a private-use scheme redirect URI is only allowed for public clients: "${uri}"`);
  }
  throw new InputError(`redirect URI scheme not allowed: "${uri}"`);
}

export function validateRedirectUris(uris: readonly string[], kind: ClientKind): string[] {
  if (kind === 'resource_server') {
    if (uris.length) throw new InputError('a resource server has no redirect URIs: it obtains no tokens, it only introspects them');
    return [];
  }
  const unique = [...new Set(uris)];
  if (unique.length === 0) throw new InputError('at least one redirect URI is required');
  if (unique.length > MAX_REDIRECT_URIS) throw new InputError(`at most ${MAX_REDIRECT_URIS} redirect URIs per client, got ${unique.length}`);
  return unique.map((uri) => validateRedirectUri(uri, kind));
}

export function validateClientScopes(scopes: readonly string[], legacy: boolean): string[] {
  const unknown = scopes.filter((s) => !isKnownScope(s));
  if (unknown.length) {
    const named = unknown.map((s) => {
      const meant = suggestScope(s);
      return meant ? `${s} (did you mean ${meant}?)` : s;
    });
    throw new InputError(`unknown scope: ${named.join(', ')}`);
  }
  if (scopes.length === 0 && !legacy) throw new InputError('at least one scope is required (or --legacy)');
  return [...new Set(scopes)];
}

/**
 * The scopes a user may untick on the consent page: some of the client's scopes (not all: a grant
 * with nothing in it is no authorization).
 */
export function validateOptionalScopes(optional: readonly string[], scopes: readonly string[]): string[] {
  const unique = [...new Set(optional)];
  const foreign = unique.filter((s) => !scopes.includes(s));
  if (foreign.length) throw new InputError(`optional scopes must be among the client's scopes: ${foreign.join(', ')} is not`);
  if (unique.length && unique.length === scopes.length) throw new InputError('at least one of the client\'s scopes must stay required: not every scope can be optional');
  return unique;
}

export function validateClientName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed || trimmed.length > 100) throw new InputError('the client name must be 1 to 100 characters');
  // Shown on consent pages and printed by the scripts: it must not forge lines or reorder text.
  if (hasUnsafeText(trimmed)) throw new InputError('the client name must not contain control or text-direction characters');
  return trimmed;
}

export const MAX_LINK_LENGTH = POLICY.MAX_LINK_LENGTH.value;

/**
 * A privacy-policy or terms-of-service link (shown on the consent page): https, or http on
 * loopback for development; '' means none. A link users click must not be javascript: or data:.
 */
export function validateClientLink(value: string | undefined, what: string): string | null {
  const uri = (value ?? '').trim();
  if (!uri) return null;
  if (uri.length > MAX_LINK_LENGTH) throw new InputError(`the ${what} link must be at most ${MAX_LINK_LENGTH} characters`);
  if (hasUnsafeText(uri)) throw new InputError(`the ${what} link must not contain control or text-direction characters`);
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new InputError(`the ${what} link must be an absolute URL: "${uri}"`);
  }
  if (url.username || url.password) throw new InputError(`the ${what} link must not carry credentials: "${uri}"`);
  if (url.protocol === 'https:' || allowsLoopback(url, REDIRECT_URI_LOOPBACK)) return uri;
  throw new InputError(`the ${what} link must use https (http only for localhost, 127.0.0.1 or [::1]): "${uri}"`);
}

/** Both links of a client, as stored (null: none). */
export function validateClientLinks(links: ClientLinks): { policyUri: string | null; tosUri: string | null } {
  return { policyUri: validateClientLink(links.policyUri, 'privacy policy'), tosUri: validateClientLink(links.tosUri, 'terms of service') };
}

/** The longest resource URI a resource server may register (it is compared, stored and shown). */
export const MAX_RESOURCE_URI_LENGTH = POLICY.MAX_RESOURCE_URI_LENGTH.value;

/**
 * A resource server's resource (RFC 8707 2): an absolute https URI without a fragment, compared
 * exactly as spelled (so it is kept as the URL parser writes it). http only on this machine's
 * loopback, and only with RESOURCE_URI_ALLOW_LOOPBACK (development, tests; src/http/loopback.ts).
 */
export function validateResourceUri(value: string, allowLoopback: boolean): string {
  const uri = value.trim();
  if (!uri || uri.length > MAX_RESOURCE_URI_LENGTH) throw new InputError(`the resource URI must be 1 to ${MAX_RESOURCE_URI_LENGTH} characters`);
  if (hasUnsafeText(uri)) throw new InputError('the resource URI must not contain control or text-direction characters');
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new InputError(`the resource URI must be an absolute URL: "${uri}"`);
  }
  if (uri.includes('#')) throw new InputError(`the resource URI must not have a fragment (RFC 8707): "${uri}"`);
  if (url.username || url.password) throw new InputError(`the resource URI must not carry credentials: "${uri}"`);
  if (url.protocol !== 'https:' && !allowsLoopback(url, allowLoopback)) {
    throw new InputError(`the resource URI must use https (http on localhost only with RESOURCE_URI_ALLOW_LOOPBACK=true): "${uri}"`);
  }
  // Tokens name it as sent in `resource`; the parser's spelling is the one clients see everywhere.
  if (url.href !== uri) throw new InputError(`write the resource URI as "${url.href}" (it is compared exactly)`);
  return uri;
}
