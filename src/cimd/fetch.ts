// Fetching a client ID metadata document (docs/agents.md): the server reaches out to a URL that
// anyone can name, so the fetch follows the webhooks' address rule (src/webhooks/address-policy.ts)
// — public addresses only, checked before connecting and again by the connection's own lookup, so
// that the socket goes to the address that was checked (no DNS rebinding in between) — and it is
// small and short: no redirects, at most MAX_DOCUMENT_BYTES, a few seconds in all.
import http from 'node:http';
import https from 'node:https';
import { allowedAddresses, checkedLookup, type AddressPolicy } from '../webhooks/address-policy.ts';
import { POLICY } from '../settings.ts';
import { InputError } from '../errors.ts';
import { validateClientKeys, validatePublishedKeys, type KeysInput } from '../clients/keys.ts';
import type { ClientKeys } from '../clients/model.ts';

export const MAX_DOCUMENT_BYTES = POLICY.MAX_DOCUMENT_BYTES.value;
export const FETCH_TIMEOUT_MS = POLICY.FETCH_TIMEOUT_MS.value;
/** How long a fetched document is used before it is fetched again, whatever its headers say. */
export const CACHE_MIN_SECONDS = POLICY.CACHE_MIN_SECONDS.value;
export const CACHE_MAX_SECONDS = POLICY.CACHE_MAX_SECONDS.value;

/** Why a document could not be used: said to the client as the invalid_client description. */
export class DocumentError extends Error {
  override name = 'DocumentError';
}

export interface Fetched {
  /** The body, at most MAX_DOCUMENT_BYTES. */
  body: string;
  /** How long it may be used, within the bounds. */
  maxAgeSeconds: number;
  /** The answer's headers (the provider's key fetch reads its caching headers itself). */
  headers: http.IncomingHttpHeaders;
}

/** A metadata document's key set (private_key_jwt): a few keys, a few KB. */
export const MAX_JWKS_BYTES = POLICY.MAX_JWKS_BYTES.value;

// The address rule speaks of webhooks; here it is documents.
const ourWords = (message: string) => message.replace(/webhooks go to public addresses only/, 'documents are fetched from public addresses only');

/** Seconds from Cache-Control max-age (or Expires), within [CACHE_MIN_SECONDS, CACHE_MAX_SECONDS]. */
export function cacheSeconds(headers: http.IncomingHttpHeaders, now = Date.now()): number {
  let seconds: number | undefined;
  const control = String(headers['cache-control'] ?? '').toLowerCase();
  const maxAge = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/.exec(control);
  if (/(?:^|,)\s*(no-store|no-cache)\b/.test(control)) seconds = 0;
  else if (maxAge) seconds = Number(maxAge[1]);
  else if (headers.expires) {
    const at = Date.parse(String(headers.expires));
    if (!Number.isNaN(at)) seconds = Math.floor((at - now) / 1000);
  }
  return Math.max(CACHE_MIN_SECONDS, Math.min(CACHE_MAX_SECONDS, seconds ?? CACHE_MIN_SECONDS));
}

/**
 * GETs the document at `url` under the address policy. Any failure — an address the rule refuses
 * (nothing is connected to), a status other than 200 (a redirect included: never followed), a
 * body over the limit, a timeout — is a DocumentError saying which.
 */
export async function fetchDocument(url: URL, policy: AddressPolicy, maxBytes = MAX_DOCUMENT_BYTES, what = 'the client_id metadata document'): Promise<Fetched> {
  // Checked here first: a literal address gets no lookup from Node, and a refused name gets a clear
  // reason before any socket. The connection's lookup checks the name again, and connects to what passed.
  try {
    await allowedAddresses(url.hostname, policy);
  } catch (err) {
    throw new DocumentError(`${what} cannot be fetched: ${ourWords((err as Error).message)}`);
  }
  const request = url.protocol === 'https:' ? https.request : http.request;
  return new Promise<Fetched>((resolve, reject) => {
    const fail = (why: string) => reject(new DocumentError(`${what} cannot be fetched: ${why}`));
    const req = request(url, {
      method: 'GET',
      headers: { accept: 'application/json', 'user-agent': 'oauth-cimd-fetch' },
      lookup: checkedLookup(policy),
      // No keep-alive pool shared with anything else; one request, one socket.
      agent: false,
    });
    const deadline = setTimeout(() => req.destroy(Object.assign(new Error('timed out'), { code: 'CIMD_TIMEOUT' })), FETCH_TIMEOUT_MS);
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(deadline);
      fail(err.code === 'CIMD_TIMEOUT' ? `no answer within ${FETCH_TIMEOUT_MS / 1000} seconds` : err.code === 'ENOTFOUND' ? ourWords(err.message) : 'the connection failed');
    });
    req.on('response', (res) => {
      const done = (outcome: () => void) => {
        clearTimeout(deadline);
        outcome();
      };
      if (res.statusCode !== 200) {
        res.resume();
        req.destroy();
        const redirect = res.statusCode! >= 300 && res.statusCode! < 400;
        return done(() => fail(redirect ? `it answered with a redirect (${res.statusCode}), which is not followed` : `it answered with status ${res.statusCode}`));
      }
      const declared = Number(res.headers['content-length']);
      if (declared > maxBytes) {
        req.destroy();
        return done(() => fail(`it is larger than ${maxBytes} bytes`));
      }
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > maxBytes) {
          req.destroy();
          return done(() => fail(`it is larger than ${maxBytes} bytes`));
        }
        chunks.push(chunk);
      });
      res.on('end', () => done(() => resolve({ body: Buffer.concat(chunks).toString('utf8'), maxAgeSeconds: cacheSeconds(res.headers), headers: res.headers })));
      res.on('error', () => done(() => fail('the connection failed')));
    });
    req.end();
  });
}

/**
 * The provider's `fetch` (its configuration): the only fetch it makes here is a metadata-document
 * client's jwks_uri (private_key_jwt), under the same rules as the document itself.
 */
export function ruledFetch(policy: AddressPolicy) {
  return async (url: string | URL, _options?: unknown): Promise<Response> => {
    const fetched = await fetchDocument(new URL(String(url)), policy, MAX_JWKS_BYTES, 'the jwks_uri');
    const headers = new Headers();
    for (const name of ['content-type', 'cache-control', 'expires']) {
      const value = fetched.headers[name];
      if (typeof value === 'string') headers.set(name, value);
    }
    return new Response(fetched.body, { status: 200, headers });
  };
}

/**
 * A registry client's jwks_uri as it is registered (clients set-keys, the developer page): fetched
 * now, by the rules the provider's fetch follows (ruledFetch), and its keys judged — so a wrong
 * address, keys not published yet, or a set with private parts are refused with the reason when
 * they are set, not at the app's first token request.
 */
export async function checkPublishedKeys(jwksUri: string, policy: AddressPolicy): Promise<void> {
  let body: string;
  try {
    ({ body } = await fetchDocument(new URL(jwksUri), policy, MAX_JWKS_BYTES, 'the jwks_uri'));
  } catch (err) {
    if (err instanceof DocumentError) throw new InputError(`${err.message} (publish the keys there first)`);
    throw err;
  }
  try {
    validatePublishedKeys(body);
  } catch (err) {
    if (err instanceof InputError) throw new InputError(`the keys published at the jwks_uri: ${err.message}`);
    throw err;
  }
}

/**
 * The keys a registry client is given (clients set-keys and create, the developer page), judged
 * in one place: the key set or the jwks_uri (validateClientKeys), and a jwks_uri fetched now
 * (checkPublishedKeys). `policy.allowLoopback`: CIMD_ALLOW_LOOPBACK, which the provider's fetch follows.
 */
export async function judgedClientKeys(input: KeysInput, policy: AddressPolicy): Promise<ClientKeys> {
  const keys = validateClientKeys(input, { allowLoopback: policy.allowLoopback === true });
  if ('jwksUri' in keys) await checkPublishedKeys(keys.jwksUri, policy);
  return keys;
}
