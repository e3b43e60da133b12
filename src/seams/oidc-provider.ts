/// <reference path="./oidc-provider-internals.d.ts" />
// The one place that reaches past the published APIs of oidc-provider (and of knex): its deep
// imports, its models' unpublished methods, its error details, the way it reads a request body.
// Everything here is tied to the exact library version pinned in package.json (LIBRARY_VERSION);
// test/unit/library-boundary.test.ts fails on any such reach anywhere else in src/,
// test/unit/seam-fingerprints.test.ts on a change to the files below, and
// test/unit/upstream-fingerprints.test.ts on any change to the upstream files the fast path mirrors.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import type Provider from 'oidc-provider';
import type { AdapterPayload } from 'oidc-provider';
import instance from 'oidc-provider/lib/helpers/weak_cache.js';
import LRU from 'oidc-provider/lib/helpers/lru.js';
import type { UpstreamFile } from './upstream.ts';

export const UPSTREAM: readonly UpstreamFile[] = [
  { file: 'oidc-provider/lib/helpers/weak_cache.js', sha256: 'c2ff20221466d4757125b0165de17493624a68a26c897f9ff71d3fb7cb1f2a99', what: "a provider's resolved configuration, its built clients (dynamicClients) and DPoPNonces" },
  { file: 'oidc-provider/lib/helpers/lru.js', sha256: '0e1369ecea58389fcdbe6c3d970a6b405129e70e490fe8898a9e1c853aa8655e', what: 'the LRU the built clients are kept in (enlargeBuiltClientCache)' },
  { file: 'oidc-provider/lib/models/base_model.js', sha256: '77623c1d7d76d840f93f58b1aef57713c7d48dde1f689686208827320ef06d2c', what: 'generateTokenId, the id given to a Grant kept (makeTokenIds, grantWithId)' },
  { file: 'oidc-provider/lib/models/replay_detection.js', sha256: '043828fda75887e655b9fdbcb2ad31b782f801bb4ca7ec6c009d9a57f7a0ca7a', what: 'ReplayDetection.unique decides replays of client assertions and DPoP proofs (replaceReplayDetection)' },
  { file: 'oidc-provider/lib/helpers/validate_dpop.js', sha256: '937991243a02287da30ce3c4369f9ea8c27e6b57713634c2db23d2c70e5eb6a5', what: 'DPoPNonces.nextChallenge and checkChallenge (dpopNonces)' },
  { file: 'oidc-provider/lib/shared/selective_body.js', sha256: '850da4702de01145f3a718d8a17387b3bbd6e90ba43749c9e0a05cab8de1bad8', what: 'a body already read is taken from req.body (withBodyToRead, keepBodyForProvider)' },
  { file: 'oidc-provider/lib/actions/grants/refresh_token.js', sha256: 'd3bcebb1e448545e0deff5b935f6233964b69c40f5ab2f639c6fdb5e81c5c1d2', what: "the error details of a refresh token's reuse (isRefreshTokenReuse, isLibraryReplay)" },
  { file: 'oidc-provider/lib/helpers/keystore.js', sha256: '9d78577c6055cdf085256bc2495c683c97043c862643efd65193f08dfe539037', what: 'KeyStore.clear and add, and selectForSign taking the first matching key in order (replaceSigningKeys)' },
  { file: 'oidc-provider/lib/helpers/initialize_keystore.js', sha256: '6e178e2a43cb5b32c4c2ddc889340fa1886d3f1a1619a5fc9cef9991bbc9d900', what: "the keystore and the published jwks kept in the provider's internals, and the members published (replaceSigningKeys)" },
  { file: 'oidc-provider/lib/actions/jwks.js', sha256: '02072b992975a01d0e9939e51ec432db780c17a5f3a9adaa8bf4e6b389e78e5e', what: 'the jwks_uri answer read from the internals at each request (replaceSigningKeys)' },
  { file: 'oidc-provider/lib/models/id_token.js', sha256: '809a238a6d68b391115f1e21bd755b388198064d9163cb44e176df4f171a6880', what: 'ID tokens and JWT responses signed with the keystore read at each signing (replaceSigningKeys)' },
  { file: 'oidc-provider/lib/actions/authorization/pushed_authorization_requests.js', sha256: 'a3d434f0aabf6d7e5d3302c9c2f273dcd4167eb92d7baabc0a717be9ffb4698b', what: 'a pushed request lives MAX_TTL (PUSHED_REQUEST_TTL) and is stored as an unsigned JWT its client issued (pushedRequestClientId)' },
  { file: 'oidc-provider/lib/models/client.js', sha256: '37841c70b72be69297851e4c9a091261748f7045ed8ae9a32f6b6c3ad9c312cb', what: "a client's jwks_uri keys kept in a key store it refreshes only on a failed check past its cache time (keepClientKeysCurrent)" },
  { file: 'oidc-provider/lib/helpers/jwt.js', sha256: 'e52ef4048fcf0277223a2e5fd40ffe5672c5187b49d608e582281f005bcacc51', what: 'a client assertion verified against that key store (keepClientKeysCurrent)' },
  { file: 'knex/lib/execution/transaction.js', sha256: '17ebc527bce986224880a2303c934c5a69ae0311619dd2cc723460a8806e3eba', what: "a transaction's executionPromise (transactionSettled)" },
];

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
    throw new Error('oidc-provider no longer keeps its built clients in dynamicClients: review src/seams/oidc-provider.ts');
  }
  internals.dynamicClients = new LRU({ maxSize });
}

// ---------------------------------------------------------------- its signing keys

/** What the library publishes of each key at jwks_uri (lib/helpers/initialize_keystore.js): no private member. */
const PUBLISHED_MEMBERS = ['kty', 'use', 'key_ops', 'kid', 'alg', 'crv', 'e', 'n', 'x', 'x5c', 'y', 'pub'] as const;

/**
 * Makes `keys` the provider's signing keys, the first the one it signs with, and all of them what
 * jwks_uri serves (src/oauth/signing-keys.ts: a rotation without a restart). The library builds
 * its keystore once, from configuration.jwks (lib/helpers/initialize_keystore.js), keeps it and
 * the published key set in its internals, reads both at each signing and each jwks_uri request
 * (lib/models/id_token.js, lib/actions/jwks.js), and signs with the first key that fits the
 * algorithm (lib/helpers/keystore.js selectForSign). The keystore is changed in place, as other
 * parts may hold it. The keys must be as configuration.jwks takes them: each with kid, alg and use.
 * Throws when the library no longer keeps them there.
 */
export function replaceSigningKeys(provider: Provider, jwks: readonly object[]): void {
  const keys = jwks as readonly Record<string, unknown>[];
  const internals = instance(provider);
  const keystore = internals?.keystore as { clear?: unknown; add?: unknown } | undefined;
  if (!internals || !('jwks' in internals) || typeof keystore?.clear !== 'function' || typeof keystore.add !== 'function') {
    throw new Error('oidc-provider no longer keeps its signing keys in keystore and jwks: review src/seams/oidc-provider.ts');
  }
  if (keys.some((key) => typeof key.kid !== 'string' || typeof key.alg !== 'string' || key.use !== 'sig')) throw new Error('a signing key needs its kid, alg and use "sig"');
  // One synchronous swap: no request sees the keystore empty or half filled.
  (keystore.clear as () => void).call(keystore);
  for (const key of keys) (keystore.add as (key: object) => void).call(keystore, structuredClone(key));
  internals.jwks = { keys: keys.map((key) => Object.fromEntries(PUBLISHED_MEMBERS.filter((m) => key[m] !== undefined).map((m) => [m, key[m]]))) };
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
 * Pushed authorization requests (RFC 9126): how long the library keeps one usable (its MAX_TTL,
 * not configurable) and which client pushed one — it stores the request as an unsigned JWT of
 * the parameters, issued by that client (lib/actions/authorization/pushed_authorization_requests.js).
 */
export const PUSHED_REQUEST_TTL = 60;
export function pushedRequestClientId(request: string): string | undefined {
  try {
    const payload = JSON.parse(Buffer.from(request.split('.')[1] ?? '', 'base64url').toString('utf8')) as { iss?: unknown };
    return typeof payload.iss === 'string' ? payload.iss : undefined;
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
    if (typeof libraryMade !== 'function') throw new Error(`oidc-provider's ${model} no longer has generateTokenId: review src/seams/oidc-provider.ts`);
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
  if (grant.jti !== id) throw new Error('oidc-provider no longer keeps the id given to a Grant: review src/seams/oidc-provider.ts');
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
 * What the library said was wrong with a request it refused: the detail it keeps and does not send
 * (a failed client authentication is "client authentication failed" to everyone, a grant refusal
 * "grant request is invalid"), else the description it sends.
 */
export const refusalCause = (err: Detailed & { error_description?: string }): string => err.error_detail ?? err.error_description ?? '';

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
  if (typeof model?.unique !== 'function') throw new Error('oidc-provider no longer decides replays in ReplayDetection.unique: review src/seams/oidc-provider.ts');
  model.unique = unique;
}

/** The provider's DPoP server nonces (features.dPoP.nonceSecret; lib/helpers/challenge.js), for the resource side. */
export function dpopNonces(provider: Provider): { nextChallenge(): string; checkChallenge(nonce: string): boolean } | undefined {
  const nonces = instance(provider)?.DPoPNonces as { nextChallenge?: unknown; checkChallenge?: unknown } | undefined;
  if (!nonces) return undefined;
  if (typeof nonces.nextChallenge !== 'function' || typeof nonces.checkChallenge !== 'function') throw new Error('oidc-provider no longer keeps its DPoP nonces in DPoPNonces: review src/seams/oidc-provider.ts');
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
    throw new Error("oidc-provider no longer keeps a client's jwks_uri keys in a refreshable key store: review src/seams/oidc-provider.ts");
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
