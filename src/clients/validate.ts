// Rules for what a client may be registered with (spec 2.1, 5.5, 8).
import { InputError } from '../errors.ts';
import { isKnownScope } from '../oauth/scopes.ts';

export const MAX_REDIRECT_URIS = 10;
export type ClientKind = 'confidential' | 'public';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** https anywhere; http only on loopback; a private-use scheme (RFC 8252 7.1) only for public clients. */
export function validateRedirectUri(uri: string, kind: ClientKind): string {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new InputError(`redirect URI must be an absolute URL: "${uri}"`);
  }
  if (uri.includes('#')) throw new InputError(`redirect URI must not have a fragment: "${uri}"`);
  if (url.username || url.password) throw new InputError(`redirect URI must not carry credentials: "${uri}"`);
  if (url.protocol === 'https:') return uri;
  if (url.protocol === 'http:') {
    if (LOOPBACK_HOSTS.has(url.hostname)) return uri;
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
  const unique = [...new Set(uris)];
  if (unique.length === 0) throw new InputError('at least one redirect URI is required');
  if (unique.length > MAX_REDIRECT_URIS) throw new InputError(`at most ${MAX_REDIRECT_URIS} redirect URIs per client, got ${unique.length}`);
  return unique.map((uri) => validateRedirectUri(uri, kind));
}

export function validateClientScopes(scopes: readonly string[], legacy: boolean): string[] {
  const unknown = scopes.filter((s) => !isKnownScope(s));
  if (unknown.length) throw new InputError(`unknown scope: ${unknown.join(', ')}`);
  if (scopes.length === 0 && !legacy) throw new InputError('at least one scope is required (or --legacy)');
  return [...new Set(scopes)];
}

export function validateClientName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed || trimmed.length > 100) throw new InputError('the client name must be 1 to 100 characters');
  return trimmed;
}
