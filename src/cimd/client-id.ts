// Which client_ids are metadata document URLs, and which of those this server may fetch
// (docs/agents.md). Registered clients have ids of the registry's own form, never a URL, so the
// first test is a cheap prefix check on every client lookup.
import { DocumentError } from './fetch.ts';
import { allowsLoopback, LOOPBACK_ADDRESS_ONLY } from '../http/loopback.ts';
import { POLICY } from '../settings.ts';

export const MAX_CLIENT_ID_URL = POLICY.MAX_CLIENT_ID_URL.value;

/** Whether a client_id is meant as a metadata document's URL (as opposed to a registered id). */
export const isUrlClientId = (id: unknown): id is string => typeof id === 'string' && (id.startsWith('https://') || id.startsWith('http://'));

export interface UrlRule {
  /** CIMD_ALLOW_LOOPBACK=true: http://127.0.0.1:… too (development and tests). */
  allowLoopback: boolean;
}

/**
 * The URL of a document this server may fetch, or the reason not: https (or http on 127.0.0.1
 * with CIMD_ALLOW_LOOPBACK), a path, no credentials, query-free, no fragment, no dot segments, no
 * spaces or control characters, and as written (the client_id compared with the document's is the
 * exact string). Where it resolves to is checked when it is fetched (fetch.ts).
 */
export function documentUrl(id: string, rule: UrlRule): URL {
  const refuse = (why: string): never => {
    throw new DocumentError(`this client_id is not a usable metadata document URL: ${why}`);
  };
  if (id.length > MAX_CLIENT_ID_URL) refuse(`longer than ${MAX_CLIENT_ID_URL} characters`);
  if (/[\s\x00-\x1f\x7f\\]/.test(id)) refuse('it contains spaces, control characters or backslashes');
  if (id.includes('#')) refuse('it has a fragment');
  const url = URL.canParse(id) ? new URL(id) : refuse('not a URL');
  if (url.protocol !== 'https:' && !allowsLoopback(url, rule.allowLoopback, LOOPBACK_ADDRESS_ONLY)) refuse('it must use https');
  if (url.username || url.password) refuse('it must not carry a user name or password');
  if (url.search) refuse('it must not have a query');
  if (url.pathname === '/' || url.pathname === '') refuse('it must have a path');
  if (/(^|\/)(\.|%2e){1,2}(\/|$)/i.test(id.slice(id.indexOf('//') + 2))) refuse('it must not have . or .. segments');
  // What the URL parser would normalise (case, default port, percent-encoding) must already be so:
  // the document states this exact string as its client_id.
  if (url.href !== id) refuse('it must be written in its normal form');
  return url;
}
