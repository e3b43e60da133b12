// The server's settings, read from the environment once, here. Everything else receives a typed
// Config (src/views.ts also looks at NODE_ENV for its template cache; the operator scripts' entry
// passes the environment to loadConfig).
import path from 'node:path';
import { hasUnsafeText } from './text.ts';
import { DEFAULT_LOG_N } from './accounts/password.ts';
import { LOG_FORMATS, type LogFormat } from './log.ts';

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
  /** LOG_FORMAT: json in production, pretty lines elsewhere (src/log.ts). */
  logFormat: LogFormat;
  /** The level of the one line per request: debug in development (a quiet console), info otherwise. */
  requestLogLevel: 'info' | 'debug';
  /** log2 of scrypt's N for new password hashes: 17 (OWASP); lower only with NODE_ENV=test (fast tests). */
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
}

export interface CimdConfig {
  /** CIMD_ENABLED (default on, except with NODE_ENV=production). */
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

function readPort(name: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`${name} must be an integer from 0 to 65535, got "${value}"`);
  }
  return port;
}

function readCount(env: Env, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(`${name} must be a positive integer, got "${value}"`);
  return n;
}

/**
 * TRUST_PROXY: how many proxies stand in front of the server. `false` (or unset, or 0): none, the
 * socket address is the client; `true`: one; N: N. The client address is the X-Forwarded-For entry
 * that the nearest trusted proxy added, never one a client could write.
 */
function readProxyHops(value: string | undefined): number {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'false') return 0;
  if (v === 'true') return 1;
  const n = Number(v);
  if (!/^[0-9]+$/.test(v) || n > 10) throw new ConfigError(`TRUST_PROXY must be false, true or the number of proxies in front of the server (0 to 10), got "${value}"`);
  return n;
}

// Settings of the old lockout design, which refused even the right secret: say so, do not ignore them.
const REMOVED_SETTINGS: Record<string, string> = {
  RATE_LIMIT_TOKEN_PER_MINUTE_PER_IP: 'valid requests are no longer limited per address; see RATE_LIMIT_AUTH_FAILURES_PER_IP',
  RATE_LIMIT_AUTH_LOCKOUT_SECONDS: 'there is no lockout any more; use RATE_LIMIT_AUTH_WINDOW_SECONDS',
  RATE_LIMIT_SIGNIN_MAX_DELAY_SECONDS: 'sign-ins past the limits solve a proof-of-work challenge instead of waiting; see RATE_LIMIT_SIGNIN_CHALLENGE_MAX_WORK',
};

function readPasswordHashLogN(value: string | undefined, nodeEnv: string): number {
  if (value === undefined || value === '') return DEFAULT_LOG_N;
  const n = Number(value);
  // Never below OWASP's guidance outside tests; 20 (1 GiB per hash) is more than any server wants.
  const min = nodeEnv === 'test' ? 10 : DEFAULT_LOG_N;
  if (!/^[0-9]+$/.test(value) || n < min || n > 20) throw new ConfigError(`PASSWORD_HASH_LOG_N must be a whole number from ${min} to 20, got "${value}"`);
  return n;
}

function readGraceSeconds(value: string | undefined): number {
  if (value === undefined || value === '') return 10;
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n > 60) throw new ConfigError(`REFRESH_GRACE_SECONDS must be a whole number of seconds from 0 (off) to 60, got "${value}"`);
  return n;
}

function readAllowLoopback(value: string | undefined, nodeEnv: Config['env'], name = 'WEBHOOK_ALLOW_LOOPBACK'): boolean {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'false') return false;
  if (v !== 'true') throw new ConfigError(`${name} must be true or false, got "${value}"`);
  // A request to this machine is a way into it: for development and tests only.
  if (nodeEnv === 'production') throw new ConfigError(`${name}=true is for development only; NODE_ENV=production refuses it`);
  return true;
}

/** LOG_FORMAT, else JSON in production (and tests) and readable lines in development. */
function readLogFormat(value: string | undefined, nodeEnv: string): LogFormat {
  if (value === undefined || value === '') return nodeEnv === 'development' ? 'pretty' : 'json';
  if (!LOG_FORMATS.includes(value as LogFormat)) throw new ConfigError(`LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}, got "${value}"`);
  return value as LogFormat;
}

function readSwitch(name: string, value: string | undefined, fallback: boolean): boolean {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '') return fallback;
  if (v === 'true' || v === 'on') return true;
  if (v === 'false' || v === 'off') return false;
  throw new ConfigError(`${name} must be true or false, got "${value}"`);
}

function readCimd(env: Env, nodeEnv: Config['env']): CimdConfig {
  return {
    // Off in production unless an operator turns it on: unreviewed agents are a choice.
    enabled: readSwitch('CIMD_ENABLED', env.CIMD_ENABLED, nodeEnv !== 'production'),
    allowLoopback: readAllowLoopback(env.CIMD_ALLOW_LOOPBACK, nodeEnv, 'CIMD_ALLOW_LOOPBACK'),
    maxUsers: readCount(env, 'CIMD_MAX_USERS', 100),
    // A person trying a few new agents fetches a handful; a site serving many agents' documents,
    // a few dozen new ones a minute at most. Documents seen before are not counted.
    fetchLimits: readRateLimits(env).enabled
      ? {
          perAddressPerMinute: readCount(env, 'CIMD_FETCHES_PER_ADDRESS_PER_MINUTE', 10),
          perAddressPerHour: readCount(env, 'CIMD_FETCHES_PER_ADDRESS_PER_HOUR', 60),
          perSitePerMinute: readCount(env, 'CIMD_FETCHES_PER_SITE_PER_MINUTE', 30),
        }
      : undefined,
  };
}

function readDynamicRegistration(value: string | undefined): boolean {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'off') return false;
  if (v === 'open') return true;
  throw new ConfigError(`DYNAMIC_REGISTRATION must be off or open, got "${value}"`);
}

function readFastPaths(value: string | undefined): boolean {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'on') return true;
  if (v === 'off') return false;
  throw new ConfigError(`FAST_PATHS must be on or off, got "${value}"`);
}

function readRetryBaseSeconds(value: string | undefined): number {
  if (value === undefined || value === '') return 30;
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1 || n > 3600) throw new ConfigError(`WEBHOOK_RETRY_BASE_SECONDS must be a whole number of seconds from 1 to 3600, got "${value}"`);
  return n;
}

function readNoticeDays(value: string | undefined): number {
  if (value === undefined || value === '') return 14 * 86_400;
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1 || n > 90) throw new ConfigError(`SECRET_EXPIRY_NOTICE_DAYS must be a whole number of days from 1 to 90, got "${value}"`);
  return n * 86_400;
}

const DEFAULT_PLATFORM_NAME = 'Scheduling Platform';

function readPlatformName(value: string | undefined): string {
  const name = (value ?? '').trim();
  if (!name) return DEFAULT_PLATFORM_NAME;
  // Shown on every consent page: a short, plain name that cannot reorder the text around it.
  if (name.length > 60 || hasUnsafeText(name)) throw new ConfigError(`PLATFORM_NAME must be 1 to 60 characters without control or text-direction characters, got "${value}"`);
  return name;
}

function readRateLimits(env: Env): RateLimitConfig {
  const switchValue = (env.RATE_LIMITS ?? 'on').toLowerCase();
  if (!['on', 'off'].includes(switchValue)) throw new ConfigError(`RATE_LIMITS must be "on" or "off", got "${env.RATE_LIMITS}"`);
  for (const [name, why] of Object.entries(REMOVED_SETTINGS)) {
    if (env[name] !== undefined) throw new ConfigError(`${name} is no longer supported: ${why}`);
  }
  return {
    enabled: switchValue === 'on',
    // An app with 100,000 connected users refreshes about 3,300 times a minute on 30-minute tokens.
    tokenPerMinutePerClient: readCount(env, 'RATE_LIMIT_TOKEN_PER_MINUTE_PER_CLIENT', 6000),
    // A user's tokens are refreshed once per access token lifetime (30 minutes): a few a minute
    // leaves room for retries and several devices, and stops a loop within seconds.
    refreshPerMinutePerUser: readCount(env, 'RATE_LIMIT_REFRESH_PER_MINUTE_PER_USER', 10),
    authFailures: readCount(env, 'RATE_LIMIT_AUTH_FAILURES', 10),
    authFailuresPerIp: readCount(env, 'RATE_LIMIT_AUTH_FAILURES_PER_IP', 100),
    authWindowSeconds: readCount(env, 'RATE_LIMIT_AUTH_WINDOW_SECONDS', 900),
    authMaxDelaySeconds: readCount(env, 'RATE_LIMIT_AUTH_MAX_DELAY_SECONDS', 300),
    signInFreeFailures: readCount(env, 'RATE_LIMIT_SIGNIN_FREE_FAILURES', 5),
    signInFailuresPerHourPerIp: readCount(env, 'RATE_LIMIT_SIGNIN_FAILURES_PER_HOUR_PER_IP', 20),
    signInChallengeWork: readCount(env, 'RATE_LIMIT_SIGNIN_CHALLENGE_WORK', 2000),
    signInChallengeMaxWork: readCount(env, 'RATE_LIMIT_SIGNIN_CHALLENGE_MAX_WORK', 32000),
  };
}

function readHostPorts(name: string, value: string): Array<{ host: string; port: number }> {
  return value.split(',').map((entry) => {
    const match = /^\s*(?:redis:\/\/)?([^:\s]+):(\d+)\/?\s*$/.exec(entry);
    if (!match) throw new ConfigError(`${name} must be a comma-separated list of host:port, got "${entry}"`);
    return { host: match[1]!, port: Number(match[2]) };
  });
}

function readRedis(env: Env): RedisConfig | undefined {
  const set = [env.REDIS_URL && 'REDIS_URL', env.REDIS_CLUSTER_NODES && 'REDIS_CLUSTER_NODES', env.REDIS_SENTINELS && 'REDIS_SENTINELS'].filter(Boolean);
  if (set.length > 1) throw new ConfigError(`set only one of REDIS_URL, REDIS_CLUSTER_NODES and REDIS_SENTINELS (got ${set.join(', ')})`);
  const password = env.REDIS_PASSWORD || undefined;
  if (env.REDIS_CLUSTER_NODES) return { mode: 'cluster', nodes: readHostPorts('REDIS_CLUSTER_NODES', env.REDIS_CLUSTER_NODES), password };
  if (env.REDIS_SENTINELS) {
    if (!env.REDIS_SENTINEL_NAME) throw new ConfigError('REDIS_SENTINELS needs REDIS_SENTINEL_NAME (the monitored master group)');
    return { mode: 'sentinel', sentinels: readHostPorts('REDIS_SENTINELS', env.REDIS_SENTINELS), name: env.REDIS_SENTINEL_NAME, password };
  }
  if (env.REDIS_URL) return { mode: 'single', url: readUrl('REDIS_URL', env.REDIS_URL, ['redis:', 'rediss:']) };
  return undefined;
}

function readUrl(name: string, value: string, protocols: string[]): string {
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
  const nodeEnv = env.NODE_ENV === 'production' ? 'production' : env.NODE_ENV === 'test' ? 'test' : 'development';
  const port = readPort('PORT', env.PORT) ?? 3000;
  const host = env.HOST || '127.0.0.1';
  const metricsPort = readPort('METRICS_PORT', env.METRICS_PORT);
  const metricsHost = env.METRICS_HOST || host;
  // Both on one address would fail at listen with EADDRINUSE: say why up front.
  if (metricsPort && metricsPort === port && metricsHost === host) {
    throw new ConfigError(`METRICS_PORT must differ from PORT (both ${port}): metrics are never served on the public port`);
  }
  // With PORT=0 the real port is known only after listen; main.ts fills these in then.
  const appUrl = readPublicUrl('APP_URL', env.APP_URL || `http://localhost:${port}`);
  const baseUrl = env.BASE_URL ? readPublicUrl('BASE_URL', env.BASE_URL) : appUrl;
  const databaseUrl = env.DATABASE_URL ? readUrl('DATABASE_URL', env.DATABASE_URL, ['postgres:', 'postgresql:']) : undefined;
  const redis = readRedis(env);
  const cookieKeys = (env.COOKIE_KEYS ?? '').split(',').map((k) => k.trim()).filter(Boolean);
  const dataKeys = (env.DATA_ENCRYPTION_KEYS ?? '').split(',').map((k) => k.trim()).filter(Boolean);

  if (nodeEnv === 'production') {
    const missing: string[] = [];
    if (!databaseUrl) missing.push('DATABASE_URL (the embedded database is for development only)');
    if (cookieKeys.length === 0) missing.push('COOKIE_KEYS (comma-separated secrets for signed cookies)');
    if (dataKeys.length === 0) missing.push('DATA_ENCRYPTION_KEYS (comma-separated keys that encrypt stored signing keys and webhook secrets)');
    if (missing.length) {
      throw new ConfigError(`NODE_ENV=production refuses development defaults; set ${missing.join(' and ')}`);
    }
  }
  if (cookieKeys.some((k) => k.length < 32) && nodeEnv === 'production') {
    throw new ConfigError('each COOKIE_KEYS entry must be at least 32 characters long in production');
  }
  if (dataKeys.some((k) => k.length < 32) && nodeEnv === 'production') {
    throw new ConfigError('each DATA_ENCRYPTION_KEYS entry must be at least 32 characters long in production');
  }

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
    databasePoolMax: readCount(env, 'DATABASE_POOL_MAX', 10),
    dataDir: path.resolve(env.DATA_DIR || './.data'),
    cookieKeys: cookieKeys.length ? cookieKeys : DEV_COOKIE_KEYS,
    usingDevCookieKeys: cookieKeys.length === 0,
    dataEncryptionKeys: dataKeys.length ? dataKeys : DEV_DATA_KEYS,
    usingDevDataKeys: dataKeys.length === 0,
    proxyHops: readProxyHops(env.TRUST_PROXY),
    passwordHashLogN: readPasswordHashLogN(env.PASSWORD_HASH_LOG_N, nodeEnv),
    logLevel: env.LOG_LEVEL || (nodeEnv === 'test' ? 'silent' : 'info'),
    logFormat: readLogFormat(env.LOG_FORMAT, nodeEnv),
    requestLogLevel: nodeEnv === 'development' ? 'debug' : 'info',
    rateLimits: readRateLimits(env),
    refreshGraceSeconds: readGraceSeconds(env.REFRESH_GRACE_SECONDS),
    platformName: readPlatformName(env.PLATFORM_NAME),
    webhookRetryBaseSeconds: readRetryBaseSeconds(env.WEBHOOK_RETRY_BASE_SECONDS),
    webhookAllowLoopback: readAllowLoopback(env.WEBHOOK_ALLOW_LOOPBACK, nodeEnv),
    resourceUriAllowLoopback: readAllowLoopback(env.RESOURCE_URI_ALLOW_LOOPBACK, nodeEnv, 'RESOURCE_URI_ALLOW_LOOPBACK'),
    secretExpiryNoticeSeconds: readNoticeDays(env.SECRET_EXPIRY_NOTICE_DAYS),
    fastPaths: readFastPaths(env.FAST_PATHS),
    cimd: readCimd(env, nodeEnv),
    dynamicRegistration: readDynamicRegistration(env.DYNAMIC_REGISTRATION),
  };
}

/** The same configuration with the address fixed up after listening on PORT=0. */
export function withListeningPort(config: Config, port: number, env: Env = process.env): Config {
  if (config.port !== 0) return config;
  return loadConfig({ ...env, PORT: String(port) });
}
