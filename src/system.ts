// Wires storage, the provider and the app together for a configuration. Used by main.ts and tests.
import type { RequestListener } from 'node:http';
import type Provider from 'oidc-provider';
import type { RedisClient } from './storage/redis.ts';
import { connectRedis } from './storage/redis.ts';
import type { Config } from './config.ts';
import { connectDb, migrateLatest, type Db } from './storage/db.ts';
import { startRecordCache, type RecordCache } from './storage/record-cache.ts';
import { purgeExpiredArtifacts } from './storage/sql-adapter.ts';
import { artifactStorage, type ArtifactStorage } from './storage/artifacts.ts';
import { startTokenCache, type TokenCache } from './storage/token-cache.ts';
import { HEARTBEAT, type HeartbeatTiming } from './storage/heartbeat.ts';
import { grantUseRecorder, type GrantUses } from './oauth/grant-use.ts';
import { secretUseRecorder, type SecretUses } from './clients/secret-use.ts';
import { DEFAULT_REDIS_PREFIX } from './storage/redis-keys.ts';
import { createProvider } from './oauth/provider.ts';
import { clientSecrets, type ClientSecrets } from './oauth/client-secrets.ts';
import { loadSigningKeys } from './oauth/signing-keys.ts';
import { createListener } from './app.ts';
import { createRateLimits } from './oauth/rate-limits.ts';
import { limiterFactory } from './limits/limiter.ts';
import { passwordHashing, type PasswordHashing } from './accounts/password.ts';
import { createSignInLimits, type SignInLimits } from './web/sign-in-limits.ts';
import { createMetrics, type Metrics } from './http/metrics.ts';
import { watchProviderEvents } from './oauth/events.ts';
import { createLogger, type Logger } from './log.ts';
import { startWebhookQueue } from './webhooks/queue.ts';
import { webhookOutbox, type WebhookOutbox } from './webhooks/outbox.ts';
import { createDataCipher, type DataCipher } from './storage/data-encryption.ts';
import { startWebhookWorker } from './webhooks/delivery.ts';
import { keepArtifactStoreRecorded } from './storage/store-record.ts';
import { fastPathOn } from './fast/assumptions.ts';
import { grantBindings, type GrantBindings } from './orgs/bindings.ts';
import { sweepSecretExpiry } from './clients/secret-expiry.ts';
import { leakReportLimiter } from './leak-reports/revoke-endpoint.ts';
import { cimdClients, type CimdClients } from './cimd/clients.ts';
import { fetchBudget } from './cimd/fetch-limits.ts';
import type { Resolver } from './webhooks/address-policy.ts';
import { sweepRegistrations, tokenIssuedRecorder } from './registration/registration.ts';
import { reviewOf } from './directory/facts.ts';
import { isUrlClientId } from './cimd/client-id.ts';
import { systemClock, type Clock } from './clock.ts';
import { POLICY } from './settings.ts';

export interface System {
  /** The public listener: the API's hot paths, then the Koa app. */
  listener: RequestListener;
  provider: Provider;
  db: Db;
  redis: RedisClient | undefined;
  artifacts: ArtifactStorage;
  /** Where client changes write their webhook events (src/webhooks/outbox.ts). */
  outbox: WebhookOutbox;
  /** Client and user records, in memory while the change feed runs (src/storage/record-cache.ts). */
  records: RecordCache;
  /** "Last used" of client secrets and grants, written in batches (src/storage/last-use.ts). */
  secretUses: SecretUses;
  grantUses: GrantUses;
  /** Password hashing at PASSWORD_HASH_LOG_N, with its own bounded queue (src/accounts/password.ts). */
  passwords: PasswordHashing;
  /** The sign-in forms' limits and proof-of-work challenges (src/web/sign-in-limits.ts). */
  signInLimits: SignInLimits;
  /** The client secret check of the provider and the hot paths (src/oauth/client-secrets.ts). */
  secrets: ClientSecrets;
  /** Access tokens in memory (Redis single node or Sentinel); undefined otherwise. */
  tokenCache: TokenCache | undefined;
  /** Grants bound to an organization and teams, kept in memory once read (src/orgs/bindings.ts). */
  bindings: GrantBindings;
  log: Logger;
  metrics: Metrics;
  /** Encrypts and decrypts the secrets stored in the database (DATA_ENCRYPTION_KEYS). */
  cipher: DataCipher;
  /** Migrations applied by this start (all of them on a fresh database). */
  migrationsApplied: string[];
  /** Client ID metadata document clients (src/cimd/clients.ts). */
  cimd: CimdClients;
  /** Removes open registrations with no token after an hour (DYNAMIC_REGISTRATION=open; run every 10 minutes; tests call it). */
  sweepRegistrations(): Promise<number>;
  /** Sends the due secret.expiring and secret.expired notices (run every minute; tests call it). */
  sweepSecretExpiry(): Promise<{ expiring: number; expired: number }>;
  close(): Promise<void>;
}

export interface SystemOverrides {
  /** What our rules of time decide by (src/clock.ts); tests hand one they move. */
  clock?: Clock;
  db?: Db;
  redis?: RedisClient;
  redisPrefix?: string;
  log?: Logger;
  /** The change channels' heartbeat (src/storage/heartbeat.ts); tests make it fast. */
  heartbeat?: HeartbeatTiming;
  /** Name resolution of the metadata-document fetches (tests map names to addresses). */
  cimdResolve?: Resolver;
  /** How long after a failed document fetch began it is answered (default: the fetch timeout); tests shorten it. */
  cimdFailedAnswerMs?: number;
  /** PBKDF2 iterations per counter value of a sign-in challenge (default 1000); tests make solving cheap, the work asked unchanged. */
  challengeIterations?: number;
  /** How often an idle webhook worker polls its queue (default 1 s); tests shorten it to pg-boss's floor, 0.5 s. */
  webhookPollingSeconds?: number;
}

const PURGE_INTERVAL_MS = POLICY.PURGE_INTERVAL_MS.value;
// Notices within a minute of being due: an expired secret is refused at its second, this only tells.
const SECRET_EXPIRY_SWEEP_MS = 60_000;
const STORE_RECORD_INTERVAL_MS = 10 * 60_000;
const REGISTRATION_SWEEP_MS = 10 * 60_000;

export async function buildSystem(config: Config, overrides: SystemOverrides = {}): Promise<System> {
  const clock = overrides.clock ?? systemClock;
  const log = overrides.log ?? createLogger(config.logLevel, undefined, config.logFormat);
  const db = overrides.db ?? connectDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: config.databasePoolMax, onWarning: (message) => log.warn({ message }, 'database') });
  const redis = overrides.redis ?? (config.redis ? connectRedis(config.redis, (err) => log.warn({ message: err.message }, 'redis')) : undefined);
  const passwords = passwordHashing({ logN: config.passwordHashLogN });
  const migrationsApplied = await migrateLatest(db);
  const cipher = createDataCipher(config.dataEncryptionKeys);
  const metrics = createMetrics();
  const channel = (name: string) => ({ clock, heartbeat: overrides.heartbeat, onHeartbeatMissed: () => metrics.heartbeatsMissed.inc({ channel: name }) });
  // Client and user records are cached in memory while this feed tells us of every change.
  const records = await startRecordCache(db, config.databaseUrl, (message) => log.warn({ message }, 'change feed'), channel('record_changes'));
  // Access token lookups are served from memory while this process hears of every revocation.
  const tokenCache = redis
    ? await startTokenCache(redis, overrides.redisPrefix ?? DEFAULT_REDIS_PREFIX, (message) => log.warn({ message }, 'token cache'), channel('revocations'))
    : undefined;
  metrics.watchMemoryCache('records', () => records.live);
  // A token's facts kept in memory say its client was usable: they end with the client's record.
  // This is what refuses a token saved after a suspension's sweep (src/clients/service.ts).
  if (tokenCache) {
    records.onChange((kind, id) => kind === 'client' && tokenCache.cache.drop({ client: id }));
    records.onReset(() => tokenCache.cache.dropAll());
  }
  if (tokenCache) metrics.watchMemoryCache('tokens', () => tokenCache.cache.serving);
  const artifacts = artifactStorage(db, redis, overrides.redisPrefix, tokenCache?.cache);
  // For the operator scripts: where this server's artifacts live (src/storage/store-record.ts).
  const store = redis && { client: redis, mode: redis.isCluster ? ('cluster' as const) : (config.redis?.mode ?? 'single'), prefix: overrides.redisPrefix ?? DEFAULT_REDIS_PREFIX };
  // Its mark is put back in Redis on every reconnection and with each heartbeat (5 s), so the
  // scripts work again within seconds of Redis losing its data.
  const storeRecord = await keepArtifactStoreRecorded(db, store, {
    markIntervalMs: overrides.heartbeat?.intervalMs ?? HEARTBEAT.intervalMs,
    recordIntervalMs: STORE_RECORD_INTERVAL_MS,
    onError: (err) => log.warn({ message: err.message }, 'recording the artifact store failed'),
  });
  const rateLimits = createRateLimits(config.rateLimits, redis, overrides.redisPrefix);
  const signInLimits = createSignInLimits(config.rateLimits, { redis, prefix: overrides.redisPrefix, secret: config.cookieKeys[0]!, iterations: overrides.challengeIterations });
  // One secret check for the provider's client authentication and the hot paths alike.
  // "Last used" of secrets and grants, written in batches (src/storage/last-use.ts).
  const secretUses = secretUseRecorder(db, clock);
  const grantUses = grantUseRecorder(db, clock);
  const secrets = clientSecrets(db, artifacts, secretUses, clock);
  const bindings = grantBindings(db);
  const cimdBudget = config.cimd.fetchLimits && fetchBudget(config.cimd.fetchLimits, limiterFactory(redis, overrides.redisPrefix ?? DEFAULT_REDIS_PREFIX));
  const cimd = cimdClients({ db, records, config: config.cimd, production: config.env === 'production', resolve: overrides.cimdResolve, budget: cimdBudget, log, failedAnswerMs: overrides.cimdFailedAnswerMs, clock });
  const provider = createProvider({ config, db, records, artifacts, secrets, bindings, cimd, jwks: await loadSigningKeys(db, cipher), tokenLimits: rateLimits.token, clock });
  // Webhooks: the queue (pg-boss, in this database) and this instance's delivery worker.
  const production = config.env === 'production';
  const webhookPolicy = { production, allowLoopback: config.webhookAllowLoopback };
  const webhookQueue = await startWebhookQueue(db, { supervise: true, retryBaseSeconds: config.webhookRetryBaseSeconds, onError: (err) => log.warn({ message: err.message }, 'webhook queue') });
  // Where client changes write the events they cause, in their own transaction.
  const outbox = webhookOutbox(db, async () => webhookQueue);
  await startWebhookWorker({ db, queue: webhookQueue, cipher, policy: webhookPolicy, metrics, log, pollingSeconds: overrides.webhookPollingSeconds });
  watchProviderEvents(provider, { db, outbox, grantUses, metrics, log });
  // The fast path (src/fast/) answers only while its assumptions about the provider hold.
  const fastPaths = await fastPathOn(provider, config.fastPaths, log);
  metrics.fastPathOn.set(fastPaths ? 1 : 0);
  const listener = createListener({
    provider,
    db,
    redis,
    log,
    proxyHops: config.proxyHops,
    requestLogLevel: config.requestLogLevel,
    production,
    rateLimits,
    signInLimits,
    cookieKeys: config.cookieKeys,
    artifacts,
    secrets,
    outbox,
    passwords,
    bindings,
    metrics,
    https: config.appUrl.startsWith('https:'),
    platformName: config.platformName,
    cimdMaxUsers: config.cimd.maxUsers,
    dynamicRegistration: config.dynamicRegistration,
    publicUrls: { appUrl: config.appUrl, baseUrl: config.baseUrl },
    webhooks: { policy: webhookPolicy, cipher },
    tokenCache: tokenCache?.cache,
    records,
    refreshGraceSeconds: config.refreshGraceSeconds,
    clock,
    fastPaths,
    leakReportLimiter: leakReportLimiter(config.rateLimits.enabled, redis, overrides.redisPrefix ?? DEFAULT_REDIS_PREFIX),
  });

  // Secrets expiring or expired: the app is told, once (src/clients/secret-expiry.ts).
  const sweepExpiry = () => sweepSecretExpiry({ db, outbox, clock }, config.secretExpiryNoticeSeconds);
  const expirySweep = setInterval(() => sweepExpiry().catch((err) => log.warn({ message: (err as Error).message }, 'secret expiry sweep failed')), SECRET_EXPIRY_SWEEP_MS);
  expirySweep.unref();

  // Open dynamic registration: a registered client issued a token stays; the others go after an
  // hour (src/registration/registration.ts).
  const sweepUnused = () => sweepRegistrations({ db, records });
  let registrationSweep: NodeJS.Timeout | undefined;
  if (config.dynamicRegistration) {
    const tokenIssued = tokenIssuedRecorder(db);
    provider.on('grant.success', (ctx) => {
      const client = ctx.oidc?.client;
      if (client && reviewOf(client) && !isUrlClientId(client.clientId)) void tokenIssued(client.clientId).catch((err) => log.warn({ message: (err as Error).message }, 'recording a registered client\'s first token failed'));
    });
    registrationSweep = setInterval(() => sweepUnused().catch((err) => log.warn({ message: (err as Error).message }, 'registration sweep failed')), REGISTRATION_SWEEP_MS);
    registrationSweep.unref();
  }

  // Expired rows are invisible to the SQL adapter; this only reclaims the space.
  const purge = redis
    ? undefined
    : setInterval(() => purgeExpiredArtifacts(db).catch((err) => log.warn({ err }, 'purge of expired artifacts failed')), PURGE_INTERVAL_MS);
  purge?.unref();

  return {
    listener,
    provider,
    db,
    redis,
    artifacts,
    outbox,
    records,
    passwords,
    signInLimits,
    secrets,
    secretUses,
    grantUses,
    tokenCache: tokenCache?.cache,
    bindings,
    log,
    metrics,
    cipher,
    migrationsApplied,
    cimd,
    sweepRegistrations: sweepUnused,
    sweepSecretExpiry: sweepExpiry,
    async close() {
      clearInterval(expirySweep);
      if (registrationSweep) clearInterval(registrationSweep);
      if (purge) clearInterval(purge);
      storeRecord.stop();
      // Attempts in flight finish (5 s at most); jobs not taken stay queued for the next start.
      outbox.close();
      await webhookQueue.stop({ graceful: true, timeout: 6000 });
      await records.close();
      await tokenCache?.close();
      await grantUses.flush().catch((err) => log.warn({ err }, 'last grant uses not written'));
      await secretUses.flush().catch((err) => log.warn({ err }, 'last secret uses not written'));
      if (!overrides.redis) redis?.disconnect();
      if (!overrides.db) await db.destroy();
    },
  };
}
