// The server's settings, read from the environment once, here, by the rows of the settings table
// (src/settings.ts: name, type, default, bounds, production rule): one parser per type. Everything
// else receives a typed Config (src/views.ts also looks at NODE_ENV for its template cache; the
// operator scripts' entry passes the environment to loadConfig).
import path from 'node:path';
import { hasUnsafeText } from './text.ts';
import type { LogFormat } from './log.ts';
import { ENV_SETTINGS, envSetting, forEnv, type EnvSetting, type NodeEnv } from './settings.ts';

export interface Config {
  env: 'development' | 'production' | 'test';
  port: number;
  host: string;
  /** Port of the separate metrics listener (GET /metrics), or undefined for none. Never the public port. */
  metricsPort: number | undefined;
  metricsHost: string;
  /** Public address of the web application (authorization and consent pages), no trailing slash. */
  appUrl: string;
  /** Public address of the API (token endpoint, /v2/me), no trailing slash. */
  baseUrl: string;
  /** `$BASE_URL/v2/auth/oauth2` */
  issuer: string;
  /** postgres://… or undefined for the embedded PGlite database in dataDir. */
  databaseUrl: string | undefined;
  /** Redis (single node, Cluster or Sentinel), or undefined: artifacts then live in the SQL database. */
  redis: RedisConfig | undefined;
  /** Connections per instance in the PostgreSQL pool. */
  databasePoolMax: number;
  dataDir: string;
  cookieKeys: string[];
  /** True when COOKIE_KEYS was not given and the development keys are in use. */
  usingDevCookieKeys: boolean;
  /** DATA_ENCRYPTION_KEYS: the first encrypts stored secrets, the others still decrypt (src/storage/data-encryption.ts). */
  dataEncryptionKeys: string[];
  /** True when DATA_ENCRYPTION_KEYS was not given and the development key is in use. */
  usingDevDataKeys: boolean;
  /** Proxies in front of this server whose X-Forwarded-* headers are trusted (0: none). */
  proxyHops: number;
  logLevel: string;
  /** LOG_FORMAT (src/log.ts). */
  logFormat: LogFormat;
  /** The level of the one line per request: debug in development (a quiet console), info otherwise. */
  requestLogLevel: 'info' | 'debug';
  /** PASSWORD_HASH_LOG_N: log2 of scrypt's N for new password hashes (bounds in src/settings.ts; lower only with NODE_ENV=test). */
  passwordHashLogN: number;
  rateLimits: RateLimitConfig;
  /** A spent refresh token presented again by its client within this many seconds gets the same answer (0: off). */
  refreshGraceSeconds: number;
  /** The platform's name as users read it on the consent page ("Approved by …"). */
  platformName: string;
  /** The first wait before a failed webhook is tried again, in seconds; it doubles each time (src/webhooks/queue.ts). */
  webhookRetryBaseSeconds: number;
  /** How long before a client secret expires the app is told (secret.expiring), in seconds (SECRET_EXPIRY_NOTICE_DAYS). */
  secretExpiryNoticeSeconds: number;
  /** WEBHOOK_ALLOW_LOOPBACK=true (development only): webhooks may also go to this machine's loopback addresses. */
  webhookAllowLoopback: boolean;
  /** RESOURCE_URI_ALLOW_LOOPBACK=true (development only): a resource server's URI may be http on this machine's loopback (src/http/loopback.ts). */
  resourceUriAllowLoopback: boolean;
  /** FAST_PATHS=off: every request through the Koa app and the provider, none answered on the fast path (src/fast/). */
  fastPaths: boolean;
  /** Client ID metadata documents (docs/agents.md): URL client_ids are fetched and used, in a limited tier until reviewed. */
  cimd: CimdConfig;
  /** DYNAMIC_REGISTRATION=open: anyone may register a client (RFC 7591), which lands unreviewed; off by default. */
  dynamicRegistration: boolean;
  /** UPSTREAM_…: the upstream OpenID provider people sign in with (docs/accounts.md), or undefined for none. */
  upstream: UpstreamConfig | undefined;
  /** LOCAL_PASSWORDS: password sign-in is offered (off only with an upstream). */
  localPasswords: boolean;
}

export interface UpstreamConfig {
  issuer: string;
  /** UPSTREAM_NAME, else the issuer's host: "Sign in with …". */
  name: string;
  clientId: string;
  /** UPSTREAM_CLIENT_AUTH with its credential: the secret, or the private JWK of the client assertion. */
  clientAuth: { method: 'client_secret_basic'; secret: string } | { method: 'private_key_jwt'; jwk: PrivateJwk };
  /** UPSTREAM_SCOPES, openid first. */
  scopes: string;
  emailClaim: string;
  nameClaim: string;
  /** UPSTREAM_LINKING: whether a first sign-in may create a user. */
  linking: 'existing' | 'create';
  /** UPSTREAM_ALLOW_LOOPBACK=true (development only): the issuer may be http on the loopback. */
  allowLoopback: boolean;
}

export interface CimdConfig {
  /** CIMD_ENABLED (its default differs in production: src/settings.ts). */
  enabled: boolean;
  /** CIMD_ALLOW_LOOPBACK=true (development only): a client_id may be an http://127.0.0.1:… document. */
  allowLoopback: boolean;
  /** CIMD_MAX_USERS: distinct users an unreviewed client may have. */
  maxUsers: number;
  /** Fetches of documents never seen, per requesting address and per site (src/cimd/fetch-limits.ts); off with RATE_LIMITS=off. */
  fetchLimits: CimdFetchLimits | undefined;
}

export interface CimdFetchLimits {
  /** CIMD_FETCHES_PER_ADDRESS_PER_MINUTE */
  perAddressPerMinute: number;
  /** CIMD_FETCHES_PER_ADDRESS_PER_HOUR */
  perAddressPerHour: number;
  /** CIMD_FETCHES_PER_SITE_PER_MINUTE: per registrable domain (or IP address) of the document URLs. */
  perSitePerMinute: number;
}

export type RedisConfig =
  | { mode: 'single'; url: string }
  | { mode: 'cluster'; nodes: Array<{ host: string; port: number }>; password?: string | undefined }
  | { mode: 'sentinel'; sentinels: Array<{ host: string; port: number }>; name: string; password?: string | undefined };

/** Abuse limits (see src/oauth/rate-limits.ts). All counts are per window; windows in seconds. */
export interface RateLimitConfig {
  enabled: boolean;
  /** Token, revocation and introspection requests per minute of one authenticated client (default; per client: clients set-rate-limit). */
  tokenPerMinutePerClient: number;
  /** Refreshes per minute of one client for one user: an app refreshing one user's tokens in a loop is stopped, its other users not. */
  refreshPerMinutePerUser: number;
  /** Requests that fail client authentication, per (claimed client id, address), before they are held back. */
  authFailures: number;
  /** The same from one address across client ids. */
  authFailuresPerIp: number;
  /** How long those failures are counted. */
  authWindowSeconds: number;
  /** The longest Retry-After of a held-back failure (the delay doubles up to it). */
  authMaxDelaySeconds: number;
  /**
   * Failed sign-ins of one account in a day, from any source, before each further attempt from a
   * browser not known for it (src/web/known-devices.ts) must solve a proof-of-work challenge.
   */
  signInFreeFailures: number;
  /** Failed sign-ins from one IP address in an hour before attempts from it must solve the challenge. */
  signInFailuresPerHourPerIp: number;
  /** The first challenge's work (counter values of 1000 PBKDF2-SHA-256 iterations); it doubles per further failure. */
  signInChallengeWork: number;
  /** The most work a challenge asks: the ceiling that keeps it a delay, never a block. */
  signInChallengeMaxWork: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

// Development-only keys: anyone can read them here, so production refuses them.
const DEV_COOKIE_KEYS = ['dev-cookie-key-not-for-production-1', 'dev-cookie-key-not-for-production-2'];
export const DEV_DATA_KEYS = ['dev-data-encryption-key-not-for-production'];

type Env = Record<string, string | undefined>;
type RowOf<T extends EnvSetting['type']> = Extract<EnvSetting, { type: T }>;

function rowOf<T extends EnvSetting['type']>(name: string, type: T): RowOf<T> {
  const row = envSetting(name);
  if (row.type !== type) throw new Error(`${name} is a ${row.type} in the settings table, read as a ${type}`);
  return row as RowOf<T>;
}

/** What an int row accepts, in the words of its error message. */
function intBounds(row: RowOf<'int'>, nodeEnv: NodeEnv): string {
  const min = forEnv(row.min, nodeEnv);
  if (row.max === undefined) return min === 1 ? 'a positive integer' : `a whole number from ${min} up`;
  const zero = min === 0 && row.zeroMeans ? ` (${row.zeroMeans})` : '';
  return `a whole number${row.unit ? ` of ${row.unit}` : ''} from ${min}${zero} to ${row.max}`;
}

/** The words a bool row accepts, as its error message lists them. */
function boolWords(row: RowOf<'bool'>): string {
  return row.offFirst ? `${row.off[0]} or ${row.on[0]}` : `${row.on[0]} or ${row.off[0]}`;
}

/** Reads the environment by the table's rows, one parser per type, with the table's bounds. */
class SettingsReader {
  constructor(
    private readonly env: Env,
    readonly nodeEnv: NodeEnv,
  ) {}

  /** The variable's value, undefined when unset or empty. */
  private raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value === '' ? undefined : value;
  }

  int(name: string): number {
    const row = rowOf(name, 'int');
    const value = this.raw(name);
    if (value === undefined) {
      if (row.default === undefined) throw new Error(`${name} has no default in the settings table`);
      return row.default;
    }
    const n = Number(value);
    if (!/^[0-9]+$/.test(value) || n < forEnv(row.min, this.nodeEnv) || (row.max !== undefined && n > row.max)) {
      throw new ConfigError(`${name} must be ${intBounds(row, this.nodeEnv)}, got "${value}"`);
    }
    return n;
  }

  port(name: string): number | undefined {
    const row = rowOf(name, 'port');
    const value = this.raw(name);
    if (value === undefined) return row.default;
    const port = Number(value);
    if (!/^[0-9]+$/.test(value) || port > 65535) throw new ConfigError(`${name} must be an integer from 0 to 65535, got "${value}"`);
    return port;
  }

  bool(name: string): boolean {
    const row = rowOf(name, 'bool');
    const value = this.raw(name);
    const v = (value ?? '').trim().toLowerCase();
    let on: boolean;
    if (v === '') on = forEnv(row.default, this.nodeEnv);
    else if (row.on.includes(v)) on = true;
    else if (row.off.includes(v)) on = false;
    else throw new ConfigError(`${name} must be ${boolWords(row)}, got "${value}"`);
    // A request to this machine is a way into it: for development and tests only.
    if (on && row.devOnly && this.nodeEnv === 'production') throw new ConfigError(`${name}=${row.on[0]} is for development only; NODE_ENV=production refuses it`);
    return on;
  }

  enum<T extends string>(name: string): T {
    const row = rowOf(name, 'enum');
    const value = this.raw(name);
    if (value === undefined || (row.unknownIsDefault && !row.values.includes(value))) return forEnv(row.default, this.nodeEnv) as T;
    if (!row.values.includes(value)) throw new ConfigError(`${name} must be one of ${row.values.join(', ')}, got "${value}"`);
    return value as T;
  }

  string(name: string): string | undefined {
    const row = rowOf(name, 'string');
    const value = this.raw(name);
    const fallback = row.default === undefined ? undefined : forEnv(row.default, this.nodeEnv);
    if (row.maxLength === undefined) return value ?? fallback;
    // A name people read: a short, plain one that cannot reorder the text around it.
    const text = (value ?? '').trim();
    if (!text) return fallback;
    if (text.length > row.maxLength || hasUnsafeText(text)) throw new ConfigError(`${name} must be 1 to ${row.maxLength} characters without control or text-direction characters, got "${value}"`);
    return text;
  }

  url(name: string): string | undefined {
    const row = rowOf(name, 'url');
    const value = this.raw(name);
    if (value === undefined) return undefined;
    return row.public ? readPublicUrl(name, value) : readUrl(name, value, row.protocols);
  }

  /** A comma-separated list; its entries' length is checked once production's rules are applied. */
  list(name: string): string[] {
    rowOf(name, 'list');
    return (this.raw(name) ?? '').split(',').map((k) => k.trim()).filter(Boolean);
  }

  hostPorts(name: string): Array<{ host: string; port: number }> | undefined {
    rowOf(name, 'host-ports');
    const value = this.raw(name);
    if (value === undefined) return undefined;
    return value.split(',').map((entry) => {
      const match = /^\s*(?:redis:\/\/)?([^:\s]+):(\d+)\/?\s*$/.exec(entry);
      if (!match) throw new ConfigError(`${name} must be a comma-separated list of host:port, got "${entry}"`);
      return { host: match[1]!, port: Number(match[2]) };
    });
  }

  path(name: string): string {
    const row = rowOf(name, 'path');
    return path.resolve(this.raw(name) ?? row.default);
  }

  /**
   * How many proxies stand in front of the server. `false` (or unset, or 0): none, the socket
   * address is the client; `true`: one; N: N. The client address is the X-Forwarded-For entry
   * that the nearest trusted proxy added, never one a client could write.
   */
  proxyHops(name: string): number {
    const row = rowOf(name, 'proxy-hops');
    const value = this.raw(name);
    const v = (value ?? '').trim().toLowerCase();
    if (v === '' || v === 'false') return 0;
    if (v === 'true') return 1;
    const n = Number(v);
    if (!/^[0-9]+$/.test(v) || n > row.max) throw new ConfigError(`${name} must be false, true or the number of proxies in front of the server (0 to ${row.max}), got "${value}"`);
    return n;
  }

  /** Settings that are gone are refused with what replaced them, never silently ignored. */
  refuseRemoved(): void {
    for (const row of ENV_SETTINGS) {
      if (row.type === 'removed' && this.env[row.name] !== undefined) throw new ConfigError(`${row.name} is no longer supported: ${row.why}`);
    }
  }

  /** NODE_ENV=production: every variable whose development default is unsafe must be set. */
  refuseDevelopmentDefaults(): void {
    if (this.nodeEnv !== 'production') return;
    const missing = ENV_SETTINGS.filter((row) => row.requiredInProduction && this.isUnset(row)).map((row) => `${row.name} (${row.requiredInProduction})`);
    if (missing.length) throw new ConfigError(`NODE_ENV=production refuses development defaults; set ${missing.join(' and ')}`);
    for (const row of ENV_SETTINGS) {
      if (row.type !== 'list' || row.minLengthInProduction === undefined) continue;
      if (this.list(row.name).some((k) => k.length < row.minLengthInProduction!)) {
        throw new ConfigError(`each ${row.name} entry must be at least ${row.minLengthInProduction} characters long in production`);
      }
    }
  }

  private isUnset(row: EnvSetting): boolean {
    return row.type === 'list' ? this.list(row.name).length === 0 : this.raw(row.name) === undefined;
  }
}

function readCimd(read: SettingsReader, rateLimitsOn: boolean): CimdConfig {
  return {
    enabled: read.bool('CIMD_ENABLED'),
    allowLoopback: read.bool('CIMD_ALLOW_LOOPBACK'),
    maxUsers: read.int('CIMD_MAX_USERS'),
    fetchLimits: rateLimitsOn
      ? {
          perAddressPerMinute: read.int('CIMD_FETCHES_PER_ADDRESS_PER_MINUTE'),
          perAddressPerHour: read.int('CIMD_FETCHES_PER_ADDRESS_PER_HOUR'),
          perSitePerMinute: read.int('CIMD_FETCHES_PER_SITE_PER_MINUTE'),
        }
      : undefined,
  };
}

function readRateLimits(read: SettingsReader): RateLimitConfig {
  return {
    enabled: read.bool('RATE_LIMITS'),
    tokenPerMinutePerClient: read.int('RATE_LIMIT_TOKEN_PER_MINUTE_PER_CLIENT'),
    refreshPerMinutePerUser: read.int('RATE_LIMIT_REFRESH_PER_MINUTE_PER_USER'),
    authFailures: read.int('RATE_LIMIT_AUTH_FAILURES'),
    authFailuresPerIp: read.int('RATE_LIMIT_AUTH_FAILURES_PER_IP'),
    authWindowSeconds: read.int('RATE_LIMIT_AUTH_WINDOW_SECONDS'),
    authMaxDelaySeconds: read.int('RATE_LIMIT_AUTH_MAX_DELAY_SECONDS'),
    signInFreeFailures: read.int('RATE_LIMIT_SIGNIN_FREE_FAILURES'),
    signInFailuresPerHourPerIp: read.int('RATE_LIMIT_SIGNIN_FAILURES_PER_HOUR_PER_IP'),
    signInChallengeWork: read.int('RATE_LIMIT_SIGNIN_CHALLENGE_WORK'),
    signInChallengeMaxWork: read.int('RATE_LIMIT_SIGNIN_CHALLENGE_MAX_WORK'),
  };
}

/** A private JSON Web Key: what UPSTREAM_PRIVATE_KEY holds. */
export type PrivateJwk = { kty: string; d: string; kid?: string; alg?: string; [member: string]: unknown };

function readPrivateJwk(name: string, value: string): PrivateJwk {
  let jwk: unknown;
  try {
    jwk = JSON.parse(value);
  } catch {
    // Never the value itself in the message: it is a private key.
    throw new ConfigError(`${name} must be a private JWK in JSON (one line)`);
  }
  const key = jwk as Partial<PrivateJwk> | null;
  if (!key || typeof key !== 'object' || !['RSA', 'EC', 'OKP'].includes(String(key.kty)) || typeof key.d !== 'string') {
    throw new ConfigError(`${name} must be a private JWK of kty RSA, EC or OKP, with its private part (d)`);
  }
  return key as PrivateJwk;
}

function readUpstream(read: SettingsReader): UpstreamConfig | undefined {
  const issuer = read.url('UPSTREAM_ISSUER');
  const allowLoopback = read.bool('UPSTREAM_ALLOW_LOOPBACK');
  const method = read.enum<'client_secret_basic' | 'private_key_jwt'>('UPSTREAM_CLIENT_AUTH');
  const clientSecret = read.string('UPSTREAM_CLIENT_SECRET');
  const privateKey = read.string('UPSTREAM_PRIVATE_KEY');
  if (!issuer) return undefined;
  const clientId = read.string('UPSTREAM_CLIENT_ID');
  if (!clientId) throw new ConfigError('UPSTREAM_ISSUER needs UPSTREAM_CLIENT_ID (this server\'s client at the upstream provider)');
  if (method === 'client_secret_basic' && !clientSecret) throw new ConfigError('UPSTREAM_ISSUER needs UPSTREAM_CLIENT_SECRET (or UPSTREAM_CLIENT_AUTH=private_key_jwt with UPSTREAM_PRIVATE_KEY)');
  if (method === 'private_key_jwt' && !privateKey) throw new ConfigError('UPSTREAM_CLIENT_AUTH=private_key_jwt needs UPSTREAM_PRIVATE_KEY (a private JWK)');
  const clientAuth: UpstreamConfig['clientAuth'] = method === 'private_key_jwt' ? { method, jwk: readPrivateJwk('UPSTREAM_PRIVATE_KEY', privateKey!) } : { method, secret: clientSecret! };
  const scopes = read.string('UPSTREAM_SCOPES')!.split(/\s+/).filter(Boolean);
  return {
    issuer,
    name: read.string('UPSTREAM_NAME') ?? new URL(issuer).host,
    clientId,
    clientAuth,
    scopes: ['openid', ...scopes.filter((s) => s !== 'openid')].join(' '),
    emailClaim: read.string('UPSTREAM_EMAIL_CLAIM')!,
    nameClaim: read.string('UPSTREAM_NAME_CLAIM')!,
    linking: read.enum<'existing' | 'create'>('UPSTREAM_LINKING'),
    allowLoopback,
  };
}

function readRedis(read: SettingsReader): RedisConfig | undefined {
  const url = read.url('REDIS_URL');
  const nodes = read.hostPorts('REDIS_CLUSTER_NODES');
  const sentinels = read.hostPorts('REDIS_SENTINELS');
  const set = [url && 'REDIS_URL', nodes && 'REDIS_CLUSTER_NODES', sentinels && 'REDIS_SENTINELS'].filter(Boolean);
  if (set.length > 1) throw new ConfigError(`set only one of REDIS_URL, REDIS_CLUSTER_NODES and REDIS_SENTINELS (got ${set.join(', ')})`);
  const password = read.string('REDIS_PASSWORD');
  if (nodes) return { mode: 'cluster', nodes, password };
  if (sentinels) {
    const name = read.string('REDIS_SENTINEL_NAME');
    if (!name) throw new ConfigError('REDIS_SENTINELS needs REDIS_SENTINEL_NAME (the monitored master group)');
    return { mode: 'sentinel', sentinels, name, password };
  }
  if (url) return { mode: 'single', url };
  return undefined;
}

function readUrl(name: string, value: string, protocols: readonly string[]): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`${name} must be an absolute URL, got "${value}"`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.join(' or ')}, got "${value}"`);
  }
  return value;
}

function readPublicUrl(name: string, value: string): string {
  const url = new URL(readUrl(name, value, ['http:', 'https:']));
  if (url.search || url.hash) throw new ConfigError(`${name} must not have a query or fragment`);
  return value.replace(/\/+$/, '');
}

export function loadConfig(env: Env = process.env): Config {
  // NODE_ENV first (its row's default is the same in every environment): the other rows may depend on it.
  const read = new SettingsReader(env, new SettingsReader(env, 'development').enum<NodeEnv>('NODE_ENV'));
  const nodeEnv = read.nodeEnv;
  read.refuseRemoved();
  const port = read.port('PORT')!;
  const host = read.string('HOST')!;
  const metricsPort = read.port('METRICS_PORT');
  const metricsHost = read.string('METRICS_HOST') ?? host;
  // Both on one address would fail at listen with EADDRINUSE: say why up front.
  if (metricsPort && metricsPort === port && metricsHost === host) {
    throw new ConfigError(`METRICS_PORT must differ from PORT (both ${port}): metrics are never served on the public port`);
  }
  // With PORT=0 the real port is known only after listen; main.ts fills these in then.
  const appUrl = read.url('APP_URL') ?? `http://localhost:${port}`;
  const baseUrl = read.url('BASE_URL') ?? appUrl;
  const databaseUrl = read.url('DATABASE_URL');
  const redis = readRedis(read);
  const cookieKeys = read.list('COOKIE_KEYS');
  const dataKeys = read.list('DATA_ENCRYPTION_KEYS');
  read.refuseDevelopmentDefaults();
  const rateLimits = readRateLimits(read);
  const upstream = readUpstream(read);
  const localPasswords = read.bool('LOCAL_PASSWORDS');
  // Nobody could sign in at all.
  if (!localPasswords && !upstream) throw new ConfigError('LOCAL_PASSWORDS=off needs UPSTREAM_ISSUER: without an upstream provider, passwords are the only way to sign in');

  return {
    env: nodeEnv,
    port,
    host,
    metricsPort,
    metricsHost,
    appUrl,
    baseUrl,
    issuer: `${baseUrl}/v2/auth/oauth2`,
    databaseUrl,
    redis,
    databasePoolMax: read.int('DATABASE_POOL_MAX'),
    dataDir: read.path('DATA_DIR'),
    cookieKeys: cookieKeys.length ? cookieKeys : DEV_COOKIE_KEYS,
    usingDevCookieKeys: cookieKeys.length === 0,
    dataEncryptionKeys: dataKeys.length ? dataKeys : DEV_DATA_KEYS,
    usingDevDataKeys: dataKeys.length === 0,
    proxyHops: read.proxyHops('TRUST_PROXY'),
    passwordHashLogN: read.int('PASSWORD_HASH_LOG_N'),
    logLevel: read.string('LOG_LEVEL')!,
    logFormat: read.enum<LogFormat>('LOG_FORMAT'),
    requestLogLevel: nodeEnv === 'development' ? 'debug' : 'info',
    rateLimits,
    refreshGraceSeconds: read.int('REFRESH_GRACE_SECONDS'),
    platformName: read.string('PLATFORM_NAME')!,
    webhookRetryBaseSeconds: read.int('WEBHOOK_RETRY_BASE_SECONDS'),
    webhookAllowLoopback: read.bool('WEBHOOK_ALLOW_LOOPBACK'),
    resourceUriAllowLoopback: read.bool('RESOURCE_URI_ALLOW_LOOPBACK'),
    secretExpiryNoticeSeconds: read.int('SECRET_EXPIRY_NOTICE_DAYS') * 86_400,
    fastPaths: read.bool('FAST_PATHS'),
    cimd: readCimd(read, rateLimits.enabled),
    dynamicRegistration: read.bool('DYNAMIC_REGISTRATION'),
    upstream,
    localPasswords,
  };
}

/** The same configuration with the address fixed up after listening on PORT=0. */
export function withListeningPort(config: Config, port: number, env: Env = process.env): Config {
  if (config.port !== 0) return config;
  return loadConfig({ ...env, PORT: String(port) });
}
