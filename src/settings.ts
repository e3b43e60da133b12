// The settings table: every environment variable the server reads, and every policy number a
// deployer might ask about, declared once here — name, type, default, bounds, production rule,
// one line of documentation. src/config.ts parses the variables by these rows (one parser per
// type); the modules that apply a fixed number import it from POLICY; docs/configuration.md and the
// README's short table are generated from both (`npm run docs:settings`, src/settings-docs.ts) and
// test/unit/settings.test.ts fails when they disagree. A leaf module: it imports nothing of ours.

export type NodeEnv = 'development' | 'production' | 'test';
/** A value that differs by NODE_ENV: the environments named, and `otherwise` for the rest. */
export type PerEnv<T> = T | ({ readonly [E in NodeEnv]?: T } & { readonly otherwise: T });

interface Row {
  name: string;
  /** One line for the docs' table (Markdown). */
  doc: string;
  /** How the default reads in the docs when it is not a plain value (derived, or unset). */
  defaultText?: string;
  /** Refused when NODE_ENV=production (a development and test convenience). */
  devOnly?: true;
  /** Required when NODE_ENV=production: the words the refusal adds in brackets. */
  requiredInProduction?: string;
  /** In the README's short table of what a newcomer sets. */
  readme?: true;
}

export type EnvSetting = Row &
  (
    | { type: 'int'; default?: number; min: PerEnv<number>; max?: number; unit?: 'seconds' | 'days'; zeroMeans?: string }
    | { type: 'port'; default?: number }
    | { type: 'bool'; default: PerEnv<boolean>; on: readonly string[]; off: readonly string[]; offFirst?: true }
    | { type: 'enum'; values: readonly string[]; default: PerEnv<string>; unknownIsDefault?: true }
    | { type: 'string'; default?: PerEnv<string>; maxLength?: number }
    | { type: 'url'; protocols: readonly string[]; public?: true }
    | { type: 'list'; minLengthInProduction?: number }
    | { type: 'host-ports' }
    | { type: 'path'; default: string }
    | { type: 'proxy-hops'; max: number }
    | { type: 'removed'; why: string }
  );

/** A policy number that is not a setting: its value, where it applies, and why it is fixed. */
export interface Fixed {
  setting: false;
  value: number;
  unit: 'seconds' | 'milliseconds' | 'bytes' | 'characters' | 'count' | 'per minute' | 'per hour' | 'days' | 'hours';
  where: string;
  doc: string;
  why: string;
}

const fixed = (value: number, unit: Fixed['unit'], where: string, doc: string, why: string): Fixed => ({ setting: false, value, unit, where, doc, why });

const DAY = 86_400;
const HOUR = 3600;
const KIB = 1024;

export const POLICY = {
  // Tokens and sessions
  ACCESS_TOKEN_TTL: fixed(30 * 60, 'seconds', 'src/oauth/provider.ts', "an access token's lifetime: the token response's `expires_in`", 'apps, gateways and the refresh limits (`RATE_LIMIT_REFRESH_PER_MINUTE_PER_USER`) are sized by it; a revoked grant ends its tokens at once anyway'),
  AUTHORIZATION_CODE_TTL: fixed(60, 'seconds', 'src/oauth/provider.ts', 'how long an authorization code may be exchanged (once)', 'a redirect and an exchange take seconds; RFC 6749 asks for a short life, and the demo page tells it'),
  REFRESH_TOKEN_TTL: fixed(30 * DAY, 'seconds', 'src/oauth/provider.ts', "a refresh token's lifetime, renewed at each rotation (sliding)", 'an app used once a month keeps its users signed in; a longer idle life is a longer life for a stolen token'),
  REFRESH_TOKEN_MAX_AGE: fixed(365 * DAY, 'seconds', 'src/oauth/provider.ts', "the longest any refresh token lives after the user's consent, rotations included", 'a user sees the consent page at least once a year; users revoke access on the apps-with-access page meanwhile'),
  UNREVIEWED_REFRESH_TTL: fixed(7 * DAY, 'seconds', 'src/cimd/clients.ts', 'the longest a refresh token of an unreviewed app (metadata document or open registration) lives after consent', 'the limited tier\'s promise ([agents.md](agents.md#the-tiers)): unreviewed access ends within a week unless an administrator approves the app'),
  SESSION_TTL: fixed(14 * DAY, 'seconds', 'src/oauth/provider.ts', "the provider's sign-in session (the consent flow's cookie)", 'the session of the consent pages, not the life of any token: a user signs in again after two weeks'),
  ID_TOKEN_TTL: fixed(HOUR, 'seconds', 'src/oauth/signing-keys.ts', "the lifetime of an ID token, the longest-lived of what the token-signing key would sign (none is issued while `openid` is refused: [security.md](security.md#token-signing-keys)); a key replaced by `keys rotate` stays in the key set this long after its successor starts signing", "the provider library's own default; whatever the old key signed has expired by then"),
  SIGNING_KEY_ROTATION_DELAY: fixed(HOUR, 'seconds', 'src/oauth/signing-keys.ts', "`keys rotate`'s default `--delay`: the new key is published at once and signs only after it", 'apps and gateways that cache the key set (jwks_uri) fetch it again within the hour, so none meets a key it has not seen'),
  MAX_SIGNING_KEY_ROTATION_DELAY: fixed(30 * DAY, 'seconds', 'src/oauth/signing-keys.ts', 'the longest `keys rotate --delay`', 'a rotation is planned in days, not months'),
  SIGNING_KEYS_REREAD_SECONDS: fixed(5 * 60, 'seconds', 'src/oauth/signing-keys.ts', "how often an instance reads the token-signing keys again, besides at once on the change feed's notice of a rotation", 'a safety net only: a rotation reaches every instance at once through the change feed, and its delay is far longer'),
  INTERACTION_TTL: fixed(HOUR, 'seconds', 'src/oauth/provider.ts', 'how long a started authorization (sign-in and consent) may take; a pushed request (`request_uri`, [par.md](par.md)) is remembered as spent or not for as long', 'long enough to find a password; a pushed request stays single-use however long its authorization takes'),
  WEB_SESSION_HOURS: fixed(12, 'hours', 'src/web/session.ts', 'a sign-in session of the pages (developer settings, review, apps with access)', 'short enough for shared machines, long enough for a working day'),
  PUBLIC_CLIENT_GRACE_SECONDS: fixed(2, 'seconds', 'src/oauth/refresh-grace.ts', "a public client's default refresh grace window (at most `REFRESH_GRACE_SECONDS`)", 'a public client proves nothing with a replay: each second more is a second a stolen spent token works; `clients set-refresh-grace` sets one client\'s'),
  MAX_REFRESH_GRACE_SECONDS: fixed(60, 'seconds', 'src/clients/model.ts', 'the longest refresh grace window (`REFRESH_GRACE_SECONDS`, `clients set-refresh-grace`)', 'a retry or a race comes within seconds; a spent token good for longer is a stolen token good for longer'),
  DPOP_PROOF_MAX_AGE_SECONDS: fixed(300, 'seconds', 'src/oauth/dpop.ts', "how far a DPoP proof's `iat` may be from now", 'RFC 9449 11.1: a proof is for the request it came with; the provider\'s own window is the same 300'),
  DPOP_PROOF_MAX_LENGTH: fixed(4096, 'characters', 'src/oauth/dpop.ts', 'the longest `DPoP` header the gateway check and `/v2/me` read (longer: `invalid_dpop_proof`)', 'a proof with a 4096-bit RSA key is about 2000 characters; a longer one only costs'),
  // Keys instead of shared secrets (private_key_jwt, RFC 7523: private-key-jwt.md)
  MAX_CLIENT_KEYS: fixed(10, 'count', 'src/clients/keys.ts', 'the most keys a registered key set (`clients set-keys --jwks`, the developer page) may hold', 'a current key and the next one, with room to spare; each key is judged on every assertion that names none'),
  CLOCK_TOLERANCE_SECONDS: fixed(15, 'seconds', 'src/oauth/provider.ts', "the provider's clock tolerance: how long past its `exp` a client assertion still passes (and its `jti` is kept)", "the library's default: clients' clocks drift by seconds; a larger one is a longer life for a stolen assertion"),
  CLIENT_ASSERTION_MAX_SECONDS: fixed(300, 'seconds', 'src/oauth/client-keys.ts', "how far in the future a client assertion's `exp` may be", 'an assertion is for the request it comes with (RFC 7523 3); its `jti` is kept until `exp`, so a far one would be kept for as long'),
  JWKS_REFETCH_SECONDS: fixed(10, 'seconds', 'src/oauth/client-keys.ts', "a `jwks_uri` is fetched again when an assertion names a key it lacks (a rotation), at most once per this many seconds per app and instance; a key set is also used no longer than its caching headers say (at least 60 s)", 'a rotated key works within seconds, and no request can make this server fetch an app\'s keys more often'),
  FORM_LIFETIME_SECONDS: fixed(DAY, 'seconds', 'src/web/single-use.ts', 'how long a rendered form can be sent (and its claim kept)', 'longer than a sign-in session, so no form outlives the session it was shown in'),
  KNOWN_DEVICE_DAYS: fixed(400, 'days', 'src/web/known-devices.ts', 'how long a browser stays known for the accounts signed in on it', "about the longest browsers keep a cookie"),
  KNOWN_DEVICE_ACCOUNTS: fixed(5, 'count', 'src/web/known-devices.ts', 'accounts remembered per browser (the most recent)', 'a shared family or team machine; more would let one browser vouch for many accounts'),
  // Sign-in limits (the counts are settings: RATE_LIMIT_SIGNIN_…)
  SIGNIN_ACCOUNT_WINDOW_SECONDS: fixed(DAY, 'seconds', 'src/web/sign-in-limits.ts', "the window of an account's failed sign-ins (`RATE_LIMIT_SIGNIN_FREE_FAILURES`)", 'the settings are worded per day and per hour; the counts are what deployments tune'),
  SIGNIN_IP_WINDOW_SECONDS: fixed(HOUR, 'seconds', 'src/web/sign-in-limits.ts', "the window of an address's failed sign-ins (`RATE_LIMIT_SIGNIN_FAILURES_PER_HOUR_PER_IP`)", 'as above'),
  SIGNIN_CHALLENGE_SECONDS: fixed(2 * 60, 'seconds', 'src/web/sign-in-limits.ts', 'how long a proof-of-work challenge is good for, once', 'too short to stockpile solutions ahead of an attack, long enough to solve one'),
  CHALLENGE_ITERATIONS: fixed(1000, 'count', 'src/web/sign-in-limits.ts', 'PBKDF2 iterations per counter value of a challenge (the unit of `RATE_LIMIT_SIGNIN_CHALLENGE_WORK`)', 'the challenge script and the check agree on it; the work settings scale it'),
  PASSWORD_HASH_CONCURRENCY: fixed(2, 'count', 'src/accounts/password.ts', 'password checks hashed at once per instance (128 MiB each)', 'each hash takes 128 MiB and a core for a while; past it a check waits, and a flood turns into challenges, not hashes'),
  PASSWORD_HASH_MAX_QUEUED: fixed(32, 'count', 'src/accounts/password.ts', 'password checks waiting per instance, beyond which one is refused at once', 'a short line keeps a flood from queueing unbounded work and memory'),
  MIN_PASSWORD_LENGTH: fixed(8, 'characters', 'src/accounts/store.ts', 'the shortest password a user may be given', "NIST SP 800-63B's minimum"),
  // Clients
  MAX_CLIENTS_PER_OWNER: fixed(25, 'count', 'src/clients/service.ts', 'clients one user may own, registered in the developer settings or by `clients create --owner`', 'each may send events and take delivery slots; clients without an owner are not counted'),
  MAX_REDIRECT_URIS: fixed(10, 'count', 'src/clients/model.ts', "a client's redirect URIs", 'an app needs a few (environments, platforms); each is shown to reviewers'),
  MAX_ACTIVE_SECRETS: fixed(2, 'count', 'src/clients/model.ts', "a client's active secrets", 'two are what a rotation needs ([secret-rotation.md](secret-rotation.md))'),
  MAX_SECRET_LIFETIME_SECONDS: fixed(730 * DAY, 'seconds', 'src/clients/service.ts', 'the longest `--expires-in` of a client secret', 'two years: a secret that expires should be rotated before its owner forgets how'),
  MAX_ROTATION_OVERLAP_SECONDS: fixed(7 * DAY, 'seconds', 'src/clients/service.ts', "the longest overlap of a rotation's two secrets", 'a week is enough to deploy the new secret everywhere'),
  RECENT_USE_SECONDS: fixed(10 * 60, 'seconds', 'src/clients/service.ts', 'a secret used this recently needs `--force` to revoke', 'it may be in use by the app right now'),
  MAX_LINK_LENGTH: fixed(500, 'characters', 'src/clients/validate.ts', "the longest privacy-policy or terms-of-service link of a client", 'stored and shown on the consent page; a longer one has no use'),
  MAX_RESOURCE_URI_LENGTH: fixed(500, 'characters', 'src/clients/validate.ts', "the longest resource URI of a resource server", 'it is compared, stored and shown'),
  GUARD_WINDOW_DAYS: fixed(7, 'days', 'src/clients/legacy.ts', 'a legacy client gets scopes only after this long without an authorization request that lacks `scope` (or with `--force`)', 'the order guard of [legacy-migration.md](legacy-migration.md), which `--force` overrides'),
  MAX_TOKEN_REQUESTS_PER_MINUTE: fixed(1_000_000, 'per minute', 'src/clients/model.ts', "the highest per-client rate limit an operator may set (`clients set-rate-limit`)", 'a bound on the number, not a limit any app reaches'),
  // Metadata documents and open registration (the user cap and fetch limits are settings: CIMD_…)
  MAX_CLIENT_ID_URL: fixed(2000, 'characters', 'src/cimd/client-id.ts', 'the longest URL `client_id`', 'users read it on the consent page; a longer one has no use and only costs'),
  MAX_DOCUMENT_BYTES: fixed(5 * KIB, 'bytes', 'src/cimd/fetch.ts', 'the largest metadata document fetched', 'a document is a few hundred bytes; the bound keeps every fetch cheap'),
  MAX_JWKS_BYTES: fixed(16 * KIB, 'bytes', 'src/cimd/fetch.ts', "the largest key set of an app (private_key_jwt): fetched from a `jwks_uri`, or registered with `clients set-keys`", 'a few keys, a few KB'),
  FETCH_TIMEOUT_MS: fixed(3000, 'milliseconds', 'src/cimd/fetch.ts', 'how long a document fetch may take', 'the authorization request waits for it'),
  CACHE_MIN_SECONDS: fixed(60, 'seconds', 'src/cimd/fetch.ts', 'the shortest a fetched document is used before it is fetched again, whatever its headers say', 'a document host cannot make this server fetch on every request'),
  CACHE_MAX_SECONDS: fixed(DAY, 'seconds', 'src/cimd/fetch.ts', 'the longest a fetched document is used before it is fetched again', "a changed document is seen within a day"),
  REFUSAL_KEPT_MS: fixed(10_000, 'milliseconds', 'src/cimd/clients.ts', 'how long a document that could not be used is not fetched again', 'otherwise every request naming a failing URL would make this server fetch again'),
  CIMD_DOCUMENTS_KEPT: fixed(1000, 'count', 'src/cimd/clients.ts', 'metadata documents kept in memory per instance (each at most 5 KB)', 'a cache size: more are fetched again, nothing else changes'),
  UNUSED_REGISTRATION_SECONDS: fixed(HOUR, 'seconds', 'src/registration/registration.ts', 'how long an openly registered client may go without a token before it is removed', 'a registration is for an app about to use it'),
  // Webhooks (the first retry wait is a setting: WEBHOOK_RETRY_BASE_SECONDS)
  RETRY_WINDOW_SECONDS: fixed(DAY, 'seconds', 'src/webhooks/queue.ts', 'deliveries are retried this long after the event, then given up', 'an app down for longer reads its state from the API'),
  MAX_RETRY_DELAY_SECONDS: fixed(HOUR, 'seconds', 'src/webhooks/queue.ts', 'the longest wait between two attempts', 'an app back up gets its events within the hour'),
  ATTEMPT_TIMEOUT_MS: fixed(5000, 'milliseconds', 'src/webhooks/delivery.ts', 'how long one delivery attempt may take', 'a slow app holds a worker slot for no longer'),
  WORKER_SLOTS: fixed(4, 'count', 'src/webhooks/delivery.ts', 'delivery worker slots per instance', 'instances are how capacity grows'),
  OWNER_CONCURRENCY: fixed(1, 'count', 'src/webhooks/delivery.ts', "slots one owner's deliveries take at once", 'in order per owner, and no owner takes every slot'),
  KEPT_ATTEMPTS: fixed(50, 'count', 'src/webhooks/delivery.ts', 'delivery attempts kept per client for the developer page', 'enough to debug with'),
  TEST_EVENTS_PER_HOUR: fixed(10, 'per hour', 'src/clients/webhook-settings.ts', 'test events a client may send', 'enough to debug, too few to keep the delivery slots busy'),
  WEBHOOK_SECRET_OVERLAP_SECONDS: fixed(DAY, 'seconds', 'src/webhooks/secrets.ts', 'a replaced webhook signing secret still signs (beside the new one) this long', 'every delivery in the retry window is verifiable with one of the two'),
  MAX_WEBHOOK_URL_LENGTH: fixed(2000, 'characters', 'src/webhooks/address-policy.ts', 'the longest webhook URL', 'stored and shown on the developer page; a longer one has no use'),
  // Request size limits
  MAX_URL_LENGTH: fixed(8 * KIB, 'bytes', 'src/http/url-limits.ts', 'the longest request URL (longer: `414`)', 'no legitimate use here, and only parsing cost; headers are capped by Node at 16 KiB'),
  TOKEN_BODY_LIMIT: fixed(16 * KIB, 'bytes', 'src/oauth/request-shims.ts', 'the largest body of the token, revocation, introspection and pushed authorization request endpoints (larger: `413`)', 'a form of a few parameters; a client assertion fits many times over'),
  LEAK_REPORT_BODY_LIMIT: fixed(64 * KIB, 'bytes', 'src/leak-reports/revoke-endpoint.ts', 'the largest leaked-credential report', `at most MAX_CREDENTIALS_PER_REPORT credentials of at most 512 characters`),
  MAX_CREDENTIALS_PER_REPORT: fixed(100, 'count', 'src/leak-reports/revoke-endpoint.ts', 'credentials in one leaked-credential report', 'secret scanners batch reports; more are sent as another'),
  LEAK_REPORTS_PER_MINUTE: fixed(30, 'per minute', 'src/leak-reports/revoke-endpoint.ts', 'leaked-credential reports per address', 'an open endpoint: enough for scanners, too few to probe with'),
  MAX_STATE_LENGTH: fixed(2048, 'characters', 'src/oauth/authorization-params.ts', 'the longest `state` of an authorization request', 'nothing an unauthenticated request sends sizes what is kept; clients carry a little of their own state in it'),
  MAX_PARAM_LENGTH: fixed(1024, 'characters', 'src/oauth/authorization-params.ts', 'the longest other authorization parameter', 'as above'),
  DRAIN_LIMIT: fixed(64 * KIB, 'bytes', 'src/http/unread-bodies.ts', 'unread body bytes discarded to keep a connection alive after an early answer; beyond it the connection closes', 'reading more costs more than a new connection'),
  PURGE_INTERVAL_MS: fixed(10 * 60_000, 'milliseconds', 'src/system.ts', 'how often expired codes, tokens and sessions are removed from the SQL database (each is refused from its expiry on, whether removed yet or not)', 'housekeeping only: nothing a client sees depends on it'),
  // Memory caches (per instance; a miss reads storage, nothing else changes)
  BUILT_CLIENTS_KEPT: fixed(10_000, 'count', 'src/oauth/built-clients.ts', "the provider library's built clients kept (a few KiB each)", 'a cache size'),
  RECORD_CACHE_ENTRIES: fixed(50_000, 'count', 'src/storage/record-cache.ts', 'client, user and organization records kept', 'a cache size'),
  TOKEN_CACHE_ENTRIES: fixed(50_000, 'count', 'src/storage/token-cache.ts', 'access tokens kept for the gateway check and `/v2/me`', 'a cache size'),
  BINDINGS_KEPT: fixed(50_000, 'count', 'src/orgs/bindings.ts', "grants' organization bindings kept (the oldest go first)", 'a cache size'),
  ROUTE_POLICY_REMEMBERED: fixed(10_000, 'count', 'src/api/route-policy.ts', 'answers of the route policy remembered (paths up to 256 characters)', 'a cache size'),
  LAST_USE_REMEMBERED: fixed(100_000, 'count', 'src/storage/last-use.ts', 'keys remembered as written within the minute, per "last used" recorder', 'a cache size: beyond it a key may be written twice in a minute'),
} as const satisfies Record<string, Fixed>;

export type PolicyName = keyof typeof POLICY;

/** The environment variables, in the order the docs list them. */
export const ENV_SETTINGS: readonly EnvSetting[] = [
  { name: 'NODE_ENV', type: 'enum', values: ['development', 'production', 'test'], default: 'development', unknownIsDefault: true, readme: true, doc: '`production` refuses every development default (dev cookie keys, dev data encryption key, embedded database) with a clear message; any other value is `development`' },
  { name: 'PORT', type: 'port', default: 3000, readme: true, doc: 'listening port (`0` = any free port; the chosen port is printed)' },
  { name: 'HOST', type: 'string', default: '127.0.0.1', readme: true, doc: 'listening address' },
  { name: 'METRICS_PORT', type: 'port', defaultText: 'unset: no metrics listener', doc: 'port of a separate listener serving only `GET /metrics` (Prometheus); `0` = any free port, printed. Metrics are never served on `PORT`' },
  { name: 'METRICS_HOST', type: 'string', defaultText: 'same as `HOST`', doc: 'listening address of the metrics listener (e.g. an internal interface only Prometheus reaches)' },
  { name: 'APP_URL', type: 'url', protocols: ['http:', 'https:'], public: true, defaultText: '`http://localhost:$PORT`', readme: true, doc: 'public address of the web application (authorization, sign-in and consent pages)' },
  { name: 'BASE_URL', type: 'url', protocols: ['http:', 'https:'], public: true, defaultText: 'same as `APP_URL`', readme: true, doc: 'public address of the API (token endpoint, `/v2/me`); the issuer is `$BASE_URL/v2/auth/oauth2`' },
  { name: 'PLATFORM_NAME', type: 'string', default: 'Scheduling Platform', maxLength: 60, doc: 'the platform\'s name as users read it on the consent page ("Approved by …", "Registered by the operators of …")' },
  { name: 'DATABASE_URL', type: 'url', protocols: ['postgres:', 'postgresql:'], defaultText: 'unset: embedded PGlite', requiredInProduction: 'the embedded database is for development only', readme: true, doc: '`postgres://…` for a real PostgreSQL' },
  { name: 'REDIS_URL', type: 'url', protocols: ['redis:', 'rediss:'], defaultText: 'unset: artifacts in the SQL database', readme: true, doc: '`redis://…`: sessions, interactions, codes, tokens, grants and rate-limit counters live in Redis' },
  { name: 'REDIS_CLUSTER_NODES', type: 'host-ports', defaultText: 'unset', doc: 'instead of `REDIS_URL`: a Redis Cluster, `host:port,host:port,…` (any reachable nodes)' },
  { name: 'REDIS_SENTINELS', type: 'host-ports', defaultText: 'unset', doc: 'instead of `REDIS_URL`: Sentinel-managed Redis, `host:port,…`; needs `REDIS_SENTINEL_NAME`' },
  { name: 'REDIS_SENTINEL_NAME', type: 'string', defaultText: 'unset', doc: 'the master group name the Sentinels monitor' },
  { name: 'REDIS_PASSWORD', type: 'string', defaultText: 'unset', doc: 'password for Cluster or Sentinel nodes (for `REDIS_URL`, put it in the URL)' },
  { name: 'DATABASE_POOL_MAX', type: 'int', default: 10, min: 1, doc: 'PostgreSQL connections per instance' },
  { name: 'DATA_DIR', type: 'path', default: './.data', doc: 'where the embedded database lives' },
  { name: 'COOKIE_KEYS', type: 'list', minLengthInProduction: 32, defaultText: 'development keys, with a warning', requiredInProduction: 'comma-separated secrets for signed cookies', readme: true, doc: 'comma-separated secrets for signed cookies (first one signs; keep old ones after it while rotating)' },
  { name: 'DATA_ENCRYPTION_KEYS', type: 'list', minLengthInProduction: 32, defaultText: 'a development key, with a warning', requiredInProduction: 'comma-separated keys that encrypt stored signing keys and webhook secrets', readme: true, doc: 'comma-separated keys that encrypt the secrets the server stores and must read back: the token-signing private keys and each app\'s webhook signing secret (AES-256-GCM; each value names its key). The first encrypts, the others still decrypt; see [Rotating the data encryption key](security.md#rotating-the-data-encryption-key)' },
  { name: 'TRUST_PROXY', type: 'proxy-hops', max: 10, readme: true, doc: 'how many proxies stand in front of the server: `false` (none), `true` (one) or a number. The client address is the `X-Forwarded-For` entry the nearest trusted proxy added (never one the client wrote); `-Proto` and `-Host` are trusted too. In production, a request with `X-Forwarded-Proto` while this is `false` logs a warning once' },
  { name: 'LOG_LEVEL', type: 'string', default: { test: 'silent', otherwise: 'info' }, doc: "pino level; each request's line is at `debug` in development (NODE_ENV unset), `info` otherwise" },
  { name: 'LOG_FORMAT', type: 'enum', values: ['json', 'pretty'], default: { development: 'pretty', otherwise: 'json' }, doc: '`json`: one JSON document a line (production, log collectors); `pretty`: one readable line each (`14:03:07 INFO: …`)' },
  // Where users come from (docs/accounts.md): local accounts, an upstream OpenID provider, or both.
  { name: 'UPSTREAM_ISSUER', type: 'url', protocols: ['https:', 'http:'], defaultText: 'unset: no upstream, users are local', doc: "the issuer of an upstream OpenID Connect provider people sign in with (\"Sign in with …\" on the sign-in page; [accounts.md](accounts.md)); its discovery document is read from `$UPSTREAM_ISSUER/.well-known/openid-configuration`. `http` only on the loopback with `UPSTREAM_ALLOW_LOOPBACK=true`" },
  { name: 'UPSTREAM_NAME', type: 'string', maxLength: 60, defaultText: "the issuer's host", doc: 'the upstream provider\'s name as the sign-in page says it ("Sign in with …")' },
  { name: 'UPSTREAM_CLIENT_ID', type: 'string', defaultText: 'unset (required with `UPSTREAM_ISSUER`)', doc: 'this server\'s client id at the upstream provider; register the redirect URI `$APP_URL/login/upstream/callback` there' },
  { name: 'UPSTREAM_CLIENT_AUTH', type: 'enum', values: ['client_secret_basic', 'private_key_jwt'], default: 'client_secret_basic', doc: 'how this server authenticates at the upstream\'s token endpoint: with `UPSTREAM_CLIENT_SECRET`, or with a client assertion signed by `UPSTREAM_PRIVATE_KEY`' },
  { name: 'UPSTREAM_CLIENT_SECRET', type: 'string', defaultText: 'unset (required with `client_secret_basic`)', doc: 'its client secret at the upstream; never logged' },
  { name: 'UPSTREAM_PRIVATE_KEY', type: 'string', defaultText: 'unset (required with `private_key_jwt`)', doc: 'a private JWK (JSON on one line: RSA, EC P-256/P-384 or Ed25519, with its `kid`) that signs the client assertion; register its public half (without `d`) at the upstream; never logged' },
  { name: 'UPSTREAM_SCOPES', type: 'string', default: 'openid email profile', doc: 'the scopes asked of the upstream provider (`openid` is always asked)' },
  { name: 'UPSTREAM_EMAIL_CLAIM', type: 'string', default: 'email', doc: 'the claim that holds the e-mail address (from the ID token, else the userinfo endpoint); `email_verified` must be `true` for it to be used' },
  { name: 'UPSTREAM_NAME_CLAIM', type: 'string', default: 'name', doc: 'the claim that holds the name a user created by a first sign-in gets' },
  { name: 'UPSTREAM_LINKING', type: 'enum', values: ['existing', 'create'], default: 'existing', doc: '`existing`: an upstream account signs in only as a user that exists here, found by its link, or the first time by its verified e-mail; `create`: a user is also created at the first sign-in (just-in-time). Either way the link is by issuer and subject, never the e-mail alone' },
  { name: 'UPSTREAM_ALLOW_LOOPBACK', type: 'bool', default: false, on: ['true'], off: ['false'], devOnly: true, doc: '`true` lets `UPSTREAM_ISSUER` be `http` on this machine\'s loopback (`localhost`, `127.0.0.1`, `[::1]`), for development and tests' },
  { name: 'LOCAL_PASSWORDS', type: 'bool', default: true, on: ['on'], off: ['off'], doc: '`off` (only with `UPSTREAM_ISSUER`): the sign-in page offers the upstream provider only, and a password sign-in is refused' },
  { name: 'REFRESH_GRACE_SECONDS', type: 'int', default: 10, min: 0, max: POLICY.MAX_REFRESH_GRACE_SECONDS.value, unit: 'seconds', zeroMeans: 'off', doc: 'a spent refresh token presented again by its own client within this many seconds gets the very same token response, while its successor is unused. The default of confidential clients; public clients default to at most 2 s; `clients set-refresh-grace` sets a client\'s own' },
  { name: 'WEBHOOK_ALLOW_LOOPBACK', type: 'bool', default: false, on: ['true'], off: ['false'], devOnly: true, doc: '`true` lets webhook URLs point to this machine\'s loopback addresses (`127.0.0.0/8`, `::1`, `localhost`) for development and tests; never private or link-local ones' },
  { name: 'CIMD_ENABLED', type: 'bool', default: { production: false, otherwise: true }, on: ['true', 'on'], off: ['false', 'off'], doc: 'client ID metadata documents: a URL `client_id` is fetched and used in a limited tier until reviewed ([agents.md](agents.md)); off in production unless an operator turns it on. Off: the metadata says `client_id_metadata_document_supported: false`, and a URL `client_id` is an unknown client (nothing is fetched)' },
  { name: 'CIMD_ALLOW_LOOPBACK', type: 'bool', default: false, on: ['true'], off: ['false'], devOnly: true, doc: '`true` allows `http://127.0.0.1:…` metadata documents and `jwks_uri`s (every client\'s: [private-key-jwt.md](private-key-jwt.md)) and loopback addresses, for development and tests' },
  { name: 'RESOURCE_URI_ALLOW_LOOPBACK', type: 'bool', default: false, on: ['true'], off: ['false'], devOnly: true, doc: "`true` lets a resource server's URI be `http` on `localhost`, `127.0.0.1` or `[::1]` (`clients create --resource-server --resource-uri`), for development and tests. Each concern's loopback has its own setting, decided by one rule (`src/http/loopback.ts`); redirect URIs may always be `http` on the loopback (RFC 8252)" },
  { name: 'CIMD_MAX_USERS', type: 'int', default: 100, min: 1, doc: 'distinct users (holding a grant of it) an unreviewed metadata-document (or openly registered) app may have' },
  { name: 'CIMD_FETCHES_PER_ADDRESS_PER_MINUTE', type: 'int', default: 10, min: 1, doc: 'fetches of metadata documents never seen before, per requesting address; past it the URL is refused like any document that cannot be fetched ([agents.md](agents.md#where-documents-may-come-from)); off with `RATE_LIMITS=off`' },
  { name: 'CIMD_FETCHES_PER_ADDRESS_PER_HOUR', type: 'int', default: 60, min: 1, doc: 'the same per hour (a person trying a few new agents fetches a handful)' },
  { name: 'CIMD_FETCHES_PER_SITE_PER_MINUTE', type: 'int', default: 30, min: 1, doc: 'the same per site (registrable domain, or IP address) of the document URLs: a site serving many agents\' documents sees a few dozen new ones a minute at most' },
  { name: 'DYNAMIC_REGISTRATION', type: 'bool', default: false, on: ['open'], off: ['off'], offFirst: true, doc: '`open` serves RFC 7591 registration at `$BASE_URL/v2/auth/oauth2/register` (named `registration_endpoint` in the metadata); registered apps are unreviewed, and those with no token after an hour are removed ([agents.md](agents.md#open-dynamic-registration-rfc-7591))' },
  { name: 'SECRET_EXPIRY_NOTICE_DAYS', type: 'int', default: 14, min: 1, max: 90, unit: 'days', doc: 'how long before a client secret expires the app gets `secret.expiring`' },
  { name: 'WEBHOOK_RETRY_BASE_SECONDS', type: 'int', default: 30, min: 1, max: 3600, unit: 'seconds', doc: 'the first wait before a failed webhook is tried again; each later wait doubles (with jitter, at most an hour), for 24 hours after the event (tests use 1)' },
  { name: 'FAST_PATHS', type: 'bool', default: true, on: ['on'], off: ['off'], doc: "`off` sends every request through the Koa app and the provider, none answered on the fast path (`src/fast/`): slower, the same answers. The fast path also switches itself off at start, with one warning, when the provider's configuration or version is not what it mirrors ([architecture.md](architecture.md#every-request-in-order))" },
  { name: 'RATE_LIMITS', type: 'bool', default: true, on: ['on'], off: ['off'], doc: '`off` disables every abuse limit (benchmarks only)' },
  // An app with 100,000 connected users refreshes about 3,300 times a minute on 30-minute tokens.
  { name: 'RATE_LIMIT_TOKEN_PER_MINUTE_PER_CLIENT', type: 'int', default: 6000, min: 1, doc: 'token, revocation, introspection and pushed authorization requests per minute of one **authenticated** client (its secret accepted; a public client: per client and address, requests accepted); an operator can set a client\'s own, a resource server\'s too, with `clients set-rate-limit`. How the limits work: [security.md](security.md#what-is-protected)' },
  // A user's tokens are refreshed once per access token lifetime: a few a minute leaves room for
  // retries and several devices, and stops a loop within seconds.
  { name: 'RATE_LIMIT_REFRESH_PER_MINUTE_PER_USER', type: 'int', default: 10, min: 1, doc: "refreshes per minute of one client for one user; past it that pair is answered `429` (the app's other users are not touched)" },
  { name: 'RATE_LIMIT_AUTH_FAILURES', type: 'int', default: 10, min: 1, doc: 'requests that fail client authentication, per (claimed client id, address), before further failures are held back' },
  { name: 'RATE_LIMIT_AUTH_FAILURES_PER_IP', type: 'int', default: 100, min: 1, doc: 'the same from one address across client ids' },
  { name: 'RATE_LIMIT_AUTH_WINDOW_SECONDS', type: 'int', default: 900, min: 1, doc: 'how long those failures are counted, in seconds' },
  { name: 'RATE_LIMIT_AUTH_MAX_DELAY_SECONDS', type: 'int', default: 300, min: 1, doc: 'the longest `Retry-After` of a held-back failure (1, 2, 4 … seconds up to it)' },
  { name: 'RATE_LIMIT_SIGNIN_FREE_FAILURES', type: 'int', default: 5, min: 1, doc: 'failed sign-ins of one account in a day, from any browser or address, before each further attempt for it from a browser not known for it must solve a proof-of-work challenge' },
  { name: 'RATE_LIMIT_SIGNIN_FAILURES_PER_HOUR_PER_IP', type: 'int', default: 20, min: 1, doc: 'failed sign-ins from one address in an hour (any accounts) before attempts from it must solve the challenge' },
  { name: 'RATE_LIMIT_SIGNIN_CHALLENGE_WORK', type: 'int', default: 2000, min: 1, doc: "the first challenge's work (counter values of 1,000 PBKDF2-SHA-256 iterations each, this many on average); it doubles with each further failure, and grows with the password-check load" },
  { name: 'RATE_LIMIT_SIGNIN_CHALLENGE_MAX_WORK', type: 'int', default: 32000, min: 1, doc: 'the most work a challenge asks: the ceiling that keeps it a delay, never a block' },
  // Never below OWASP's guidance outside tests; 20 (1 GiB per hash) is more than any server wants.
  { name: 'PASSWORD_HASH_LOG_N', type: 'int', default: 17, min: { test: 10, otherwise: 17 }, max: 20, doc: "log2 of scrypt's N for new password hashes (r=8, p=1; 128 MiB each, OWASP's guidance); below 17 only with `NODE_ENV=test`" },
  // Settings of the old lockout design, which refused even the right secret: said so, not ignored.
  { name: 'RATE_LIMIT_TOKEN_PER_MINUTE_PER_IP', type: 'removed', why: 'valid requests are no longer limited per address; see RATE_LIMIT_AUTH_FAILURES_PER_IP', doc: 'removed: refused with what replaced it' },
  { name: 'RATE_LIMIT_AUTH_LOCKOUT_SECONDS', type: 'removed', why: 'there is no lockout any more; use RATE_LIMIT_AUTH_WINDOW_SECONDS', doc: 'removed: refused with what replaced it' },
  { name: 'RATE_LIMIT_SIGNIN_MAX_DELAY_SECONDS', type: 'removed', why: 'sign-ins past the limits solve a proof-of-work challenge instead of waiting; see RATE_LIMIT_SIGNIN_CHALLENGE_MAX_WORK', doc: 'removed: refused with what replaced it' },
];

const BY_NAME = new Map(ENV_SETTINGS.map((row) => [row.name, row]));

/** The row of a variable; throws for a name that is not in the table (a typo in our code). */
export function envSetting(name: string): EnvSetting {
  const row = BY_NAME.get(name);
  if (!row) throw new Error(`${name} is not in the settings table (src/settings.ts)`);
  return row;
}

/** The value for one NODE_ENV. */
export function forEnv<T>(value: PerEnv<T>, env: NodeEnv): T {
  if (value !== null && typeof value === 'object' && 'otherwise' in value) return (value as { [E in NodeEnv]?: T })[env] ?? value.otherwise;
  return value as T;
}

/** The default of an int row (PASSWORD_HASH_LOG_N's is also the hashing module's). */
export function intDefault(name: string): number {
  const row = envSetting(name);
  if (row.type !== 'int' || row.default === undefined) throw new Error(`${name} is not an int with a default in the settings table`);
  return row.default;
}
