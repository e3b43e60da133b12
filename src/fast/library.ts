/// <reference path="./oidc-provider-internals.d.ts" />
// The one place that reaches past the published APIs of oidc-provider (and of knex): its deep
// imports, its models' unpublished methods, its error details, the way it reads a request body.
// Everything here is tied to the exact library version pinned in package.json (LIBRARY_VERSION);
// test/unit/library-boundary.test.ts fails on any such reach anywhere else in src/, and
// test/unit/upstream-fingerprints.test.ts on any change to the upstream files the fast path mirrors.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import type Provider from 'oidc-provider';
import type { AdapterPayload } from 'oidc-provider';
import instance from 'oidc-provider/lib/helpers/weak_cache.js';
import LRU from 'oidc-provider/lib/helpers/lru.js';

/** The library version whose internals this file and the fast path (src/fast/) were checked against. */
export const LIBRARY_VERSION = '9.13.3';

/** The installed library's version, from its own package.json. */
export function installedLibraryVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('oidc-provider/package.json') as { version: string }).version;
}

// ---------------------------------------------------------------- the provider's configuration

/** The configuration as the provider resolved it (our settings over its defaults), or undefined. */
export function resolvedConfiguration(provider: Provider): Record<string, unknown> | undefined {
  return instance(provider)?.configuration as Record<string, unknown> | undefined;
}

/**
 * Swaps the library's LRU of built clients for a larger one of its own kind (src/oauth/built-clients.ts).
 * Throws when the library no longer keeps them there.
 */
export function enlargeBuiltClientCache(provider: Provider, maxSize: number): void {
  const internals = instance(provider);
  if (!internals || !('dynamicClients' in internals)) {
    throw new Error('oidc-provider no longer keeps its built clients in dynamicClients: review src/fast/library.ts');
  }
  internals.dynamicClients = new LRU({ maxSize });
}

// ---------------------------------------------------------------- token models

/** What the provider's token models offer beyond their published types. */
export interface NewToken {
  jti: string;
  gty?: string;
  scope?: string;
  claims?: unknown;
  readonly scopes: Set<string>;
  readonly expiration: number;
  readonly remainingTTL: number;
  generateTokenId(): string;
  getValueAndPayload(): Promise<{ value: string; payload: AdapterPayload }>;
}

/** A new (unsaved) token model seen with its unpublished methods. */
export const asNewToken = <T>(token: T) => token as unknown as NewToken & T;

/** A model's find() without its adapter read: the stored payload verified and made a model, or undefined. */
export async function fromStore<T>(model: unknown, stored: AdapterPayload): Promise<T | undefined> {
  const Model = model as { verify(stored: AdapterPayload, options: { ignoreExpiration: boolean }): Promise<AdapterPayload>; instantiate(payload: AdapterPayload): T };
  try {
    return Model.instantiate(await Model.verify(stored, { ignoreExpiration: true }));
  } catch {
    return undefined;
  }
}

/**
 * Makes the ids (the values: opaque tokens are their ids) of new access tokens, refresh tokens and
 * authorization codes with `make` (src/credentials/format.ts) instead of the library's nanoid. Its
 * generateTokenId is what every save() and the fast refresh (toSave) call, so this covers both
 * paths. For an access token the library's own runs first: it decides the format
 * (lib/models/formats/index.js), and a JWT keeps the library's jti. Refresh tokens and codes are
 * always opaque (base_model.js's generateTokenId). Throws when the models no longer make their
 * ids there.
 */
export function makeTokenIds(provider: Provider, make: (model: 'AccessToken' | 'RefreshToken' | 'AuthorizationCode') => string): void {
  for (const model of ['AccessToken', 'RefreshToken', 'AuthorizationCode'] as const) {
    const proto = (provider[model] as unknown as { prototype: { generateTokenId?: (this: { format?: string }) => string } }).prototype;
    const libraryMade = proto.generateTokenId;
    if (typeof libraryMade !== 'function') throw new Error(`oidc-provider's ${model} no longer has generateTokenId: review src/fast/library.ts`);
    // Only an access token's format can be a JWT: the library's call decides it (and sets `format`).
    // A refresh token or code is always opaque, and its library-made id would be thrown away.
    proto.generateTokenId =
      model === 'AccessToken'
        ? function generateTokenId() {
            const id = libraryMade.call(this);
            return this.format === 'jwt' ? id : make(model);
          }
        : () => make(model);
  }
}

/** A new token's id, payload and lifetime, made as its model's save() makes them. */
export async function toSave(token: NewToken): Promise<{ id: string; payload: AdapterPayload; expiresIn: number }> {
  token.jti = token.generateTokenId();
  const expiresIn = token.remainingTTL;
  const { payload } = await token.getValueAndPayload();
  return { id: token.jti, payload, expiresIn };
}

/**
 * A new (unsaved) Grant with the id given: the model's constructor keeps a `jti` from its input
 * and save() generates one only when there is none (lib/models/base_model.js), though the
 * published types do not list it. Bound grants (src/orgs/bindings.ts) have marked ids this way.
 */
export function grantWithId(provider: Provider, id: string, properties: { accountId: string; clientId: string }): InstanceType<Provider['Grant']> {
  const grant = new provider.Grant({ ...properties, jti: id } as ConstructorParameters<Provider['Grant']>[0]);
  if (grant.jti !== id) throw new Error('oidc-provider no longer keeps the id given to a Grant: review src/fast/library.ts');
  return grant;
}

// ---------------------------------------------------------------- its events

/** What a rotating refresh made, for the events the provider emits about it. */
export interface RefreshMade {
  consumed: object;
  refresh: object;
  access: object;
  grant: object;
  client: object;
  ip: string;
  headers: IncomingHttpHeaders;
}

/**
 * The events the provider emits for a rotating refresh, in its order: the presented token spent
 * (its model's consume()), the successors saved (save()), then grant.success (lib/actions/token.js).
 * grant.success carries the request's context; the fast path has none, so listeners get a
 * stand-in with what they may read: ctx.oidc (route, params.grant_type, client, entities), ctx.ip
 * and ctx.get(header).
 */
export function emitRefreshEvents(provider: Provider, made: RefreshMade): void {
  provider.emit('refresh_token.consumed', made.consumed);
  provider.emit('refresh_token.saved', made.refresh);
  provider.emit('access_token.saved', made.access);
  if (provider.listenerCount('grant.success') === 0) return;
  const oidc = {
    route: 'token',
    provider,
    client: made.client,
    params: { grant_type: 'refresh_token' },
    entities: { Client: made.client, Grant: made.grant, RotatedRefreshToken: made.consumed, RefreshToken: made.refresh, AccessToken: made.access },
  };
  const header = (name: string) => {
    const value = made.headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(', ') : (value ?? '');
  };
  provider.emit('grant.success', { oidc, ip: made.ip, headers: made.headers, get: header });
}

// ---------------------------------------------------------------- its error details

// What oidc-provider 9 says (error_detail) when it finds a spent code or refresh token presented
// again (it then revokes the grant).
const REFRESH_TOKEN_REUSED = 'refresh token already used';
const LIBRARY_REPLAYS = new Set(['authorization code already consumed', REFRESH_TOKEN_REUSED]);

type Detailed = Error & { error_detail?: string };
/** The library found a spent code or refresh token presented again. */
export const isLibraryReplay = (err: Detailed): boolean => LIBRARY_REPLAYS.has(err.error_detail ?? '');
/** The library found a spent refresh token presented again, and revoked its grant. */
export const isRefreshTokenReuse = (err: Detailed): boolean => err.error_detail === REFRESH_TOKEN_REUSED;

/**
 * Why the library refused an authorization code at the token endpoint, from its error details
 * (lib/helpers/grant_source.js, lib/actions/grants/authorization_code.js, lib/helpers/pkce.js):
 * `unknown` covers a code not found, one of another client and one whose grant is gone alike, so
 * the answer tells a client nothing about codes it was not given.
 */
export type CodeRefusal = 'expired' | 'used' | 'unknown' | 'redirect_uri' | 'pkce';
const CODE_REFUSALS: Record<string, CodeRefusal> = {
  'authorization code is expired': 'expired',
  'authorization code already consumed': 'used',
  'authorization code not found': 'unknown',
  'client mismatch': 'unknown',
  'grant not found': 'unknown',
  'grant is expired': 'unknown',
  'authorization code redirect_uri mismatch': 'redirect_uri',
};
export function codeRefusalOf(err: Detailed): CodeRefusal | undefined {
  const detail = err.error_detail ?? '';
  if (CODE_REFUSALS[detail]) return CODE_REFUSALS[detail];
  // PKCE: the detail is the cause's message (code_verifier missing, method, mismatch).
  if (/code_verifier|code_challenge/.test(detail) || /code_verifier|code_challenge/.test(String((err.cause as Error | undefined)?.message ?? ''))) return 'pkce';
  return undefined;
}

// ---------------------------------------------------------------- request bodies

const bodiesRead = new WeakMap<IncomingMessage, string>();

/** A token endpoint body our app read (src/oauth/request-shims.ts), kept for the provider to read again. */
export function keepBodyForProvider(req: IncomingMessage, form: string): void {
  bodiesRead.set(req, form);
}

/**
 * The request as the provider should see it: a body our app already read is handed over as a
 * stream to read again, as if untouched (the library's body reader, lib/shared/selective_body.js,
 * takes `readable` and async iteration).
 */
export function withBodyToRead(req: IncomingMessage): IncomingMessage {
  const body = bodiesRead.get(req);
  if (body === undefined) return req;
  const bytes = Buffer.from(body, 'utf8');
  req.headers['content-length'] = String(bytes.length);
  delete req.headers['transfer-encoding'];
  const handedOver = new Proxy(req, {
    get(target, prop) {
      if (prop === 'readable') return true;
      if (prop === 'iterator') return () => [bytes].values();
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  bodiesRead.set(handedOver, body);
  return handedOver;
}

/** The body our app read for this request (the provider's steps see the request handed over), if any. */
export const bodyReadByApp = (req: IncomingMessage): string | undefined => bodiesRead.get(req);

// ---------------------------------------------------------------- knex

/** When a knex transaction settles (its executionPromise; undefined for a plain connection). */
export function transactionSettled(db: object): Promise<unknown> | undefined {
  return (db as { executionPromise?: Promise<unknown> }).executionPromise;
}

// ---------------------------------------------------------------- DPoP (src/oauth/dpop.ts)

/**
 * Makes the provider's ReplayDetection (DPoP proofs' and client assertions' jti) one atomic claim
 * (src/oauth/dpop.ts singleUse), where its static unique() finds and then saves
 * (lib/models/replay_detection.js). Throws when the model no longer decides there.
 */
export function replaceReplayDetection(provider: Provider, unique: (iss: string, jti: string, exp: number) => Promise<boolean>): void {
  const model = (provider as unknown as { ReplayDetection?: { unique?: unknown } }).ReplayDetection;
  if (typeof model?.unique !== 'function') throw new Error('oidc-provider no longer decides replays in ReplayDetection.unique: review src/fast/library.ts');
  model.unique = unique;
}

/** The provider's DPoP server nonces (features.dPoP.nonceSecret; lib/helpers/challenge.js), for the resource side. */
export function dpopNonces(provider: Provider): { nextChallenge(): string; checkChallenge(nonce: string): boolean } | undefined {
  const nonces = instance(provider)?.DPoPNonces as { nextChallenge?: unknown; checkChallenge?: unknown } | undefined;
  if (!nonces) return undefined;
  if (typeof nonces.nextChallenge !== 'function' || typeof nonces.checkChallenge !== 'function') throw new Error('oidc-provider no longer keeps its DPoP nonces in DPoPNonces: review src/fast/library.ts');
  return nonces as { nextChallenge(): string; checkChallenge(nonce: string): boolean };
}

// ---------------------------------------------------------------- client keys (src/oauth/client-keys.ts)

/** What a built client's jwks_uri key set is (lib/models/client.js ClientKeyStore, over lib/helpers/keystore.js). */
interface LibraryKeyStore extends Iterable<unknown> {
  jwksUri?: string;
  fresh(): boolean;
  refresh(): Promise<void>;
  getKeyObject(key: unknown, getPublic?: boolean): unknown;
}

const keptCurrent = new WeakSet<object>();

/**
 * Keeps a built client's jwks_uri key set current. The library (lib/helpers/jwt.js verify) fetches
 * the set again only when a verification fails *and* the set's caching headers have lapsed (at
 * least 60 s after the last fetch), and it goes on using a key it found however long ago it was
 * fetched. So an assertion signed with a key just added at the jwks_uri (a rotation) would be
 * refused for up to a minute or more, and a key removed from it would go on working. Here:
 * - a failed verification fetches the set again when the last attempt began `refetchSeconds` ago
 *   or more (never more often, whatever is sent: a request cannot make us fetch at its rate);
 * - a set whose caching headers lapsed is fetched before its keys are used again; when that fetch
 *   fails, the keys last fetched go on being used (the jwks_uri briefly down is no outage).
 * Once per key set; throws when the library no longer keeps client keys this way.
 */
export function keepClientKeysCurrent(client: object, refetchSeconds: number, now: () => number = Date.now): void {
  const store = (client as { asymmetricKeyStore?: LibraryKeyStore }).asymmetricKeyStore;
  if (!store || keptCurrent.has(store) || !store.jwksUri) return;
  if (typeof store.fresh !== 'function' || typeof store.refresh !== 'function' || typeof store.getKeyObject !== 'function') {
    throw new Error("oidc-provider no longer keeps a client's jwks_uri keys in a refreshable key store: review src/fast/library.ts");
  }
  keptCurrent.add(store);
  const headersFresh = store.fresh.bind(store);
  const libraryRefresh = store.refresh.bind(store);
  const libraryKey = store.getKeyObject.bind(store);
  let attemptedAt = -Infinity;
  const attemptedRecently = () => now() - attemptedAt < refetchSeconds * 1000;
  // "Fresh" is what the library asks before it fetches (after a failed verification, in refresh()).
  store.fresh = () => attemptedRecently();
  let inFlight: Promise<void> | undefined;
  store.refresh = () => {
    // Requests arriving while it is fetched wait for the same fetch.
    if (inFlight) return inFlight;
    if (attemptedRecently()) return Promise.resolve();
    // The library's refresh checks fresh() before its first await: the attempt is marked after.
    const fetching = libraryRefresh();
    attemptedAt = now();
    inFlight = fetching
      // Keys fetched before go on being used (verify tries them again); none: the failure stands.
      .catch((err: unknown) => {
        if ([...store].length === 0) throw err;
      })
      .finally(() => (inFlight = undefined));
    return inFlight;
  };
  // A lapsed set is not used until it was fetched again (or that fetch failed, just now).
  store.getKeyObject = (key, getPublic) => {
    if (getPublic && !headersFresh() && !attemptedRecently()) throw new Error('the key set lapsed: fetched again first');
    return libraryKey(key, getPublic);
  };
}
