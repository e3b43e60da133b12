// Wires storage, the provider and the app together for a configuration. Used by main.ts and tests.
import { upstreamClient } from './accounts/upstream.ts';
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
import { refreshGraceWindows } from './oauth/refresh-grace.ts';
import { clientSecrets, type ClientSecrets } from './oauth/client-secrets.ts';
import { startSigningKeys, type LiveSigningKeys } from './oauth/signing-keys.ts';
import { createListener } from './app.ts';
import { createRateLimits } from './oauth/rate-limits.ts';
import { limiterFactory } from './limits/limiter.ts';
import { passwordHashing, type PasswordHashing } from './accounts/password.ts';
import { createSignInLimits, type SignInLimits } from './web/sign-in-limits.ts';
import { createMetrics, type Metrics } from './http/metrics.ts';
import { watchProviderEvents } from './oauth/events.ts';
import { createLogger, type Logger } from './log.ts';
import { startWebhookQueue, type WebhookQueue } from './webhooks/queue.ts';
import { webhookOutbox, type WebhookOutbox } from './webhooks/outbox.ts';
import { createDataCipher, type DataCipher } from './storage/data-encryption.ts';
import { startWebhookWorker, type WorkerDeps } from './webhooks/delivery.ts';
import { keepArtifactStoreRecorded } from './storage/store-record.ts';
import { fastPathOn } from './fast/assumptions.ts';
import { backChannelPlainCases } from './fast/plain-cases.ts';
import { resourceApi } from './api/resource-api.ts';
import { platformResource } from './oauth/resources.ts';
import { findUserById } from './accounts/store.ts';
import { envelope } from './http/envelope.ts';
import { untrustedProxyWarning } from './http/untrusted-proxy.ts';
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
  /** The token-signing keys this instance signs with and publishes (src/oauth/signing-keys.ts). */
  signingKeys: LiveSigningKeys;
  /** Migrations applied by this start (all of them on a fresh database). */
  migrationsApplied: string[];
  /** Client ID metadata document clients (src/cimd/clients.ts). */
  cimd: CimdClients;
  /** Removes open registrations with no token after an hour (DYNAMIC_REGISTRATION=open; run every 10 minutes; tests call it). */
  sweepRegistrations(): Promise<number>;
  /** Sends the due secret.expiring and secret.expired notices (run every minute; tests call it). */
  sweepSecretExpiry(): Promise<{ expiring: number; expired: number }>;
  /** The background work running now, by name ('webhook delivery', 'secret expiry sweep', …): what `run` started. */
  running(): string[];
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
  /** Which background subsystems run (see Subsystems); omitted, all of them (main.ts). */
  run?: Subsystems;
}

/**
 * The background work of an instance, each started only when named true here. Without the worker
 * the instance still queues events (the outbox starts the queue on first need, without pg-boss's
 * maintenance); another instance, or a later start, delivers them.
 */
export interface Subsystems {
  /** The webhook delivery worker and the queue's maintenance (expiry of stuck attempts, retention). */
  webhookDelivery?: boolean;
  /** The periodic sweeps: secret expiry notices, unused open registrations, the purge of expired artifacts (SQL store). */
  sweeps?: boolean;
}

/** What production runs: everything. */
export const ALL_SUBSYSTEMS: Required<Subsystems> = { webhookDelivery: true, sweeps: true };

const PURGE_INTERVAL_MS = POLICY.PURGE_INTERVAL_MS.value;
// Notices within a minute of being due: an expired secret is refused at its second, this only tells.
const SECRET_EXPIRY_SWEEP_MS = 60_000;
const STORE_RECORD_INTERVAL_MS = 10 * 60_000;
const REGISTRATION_SWEEP_MS = 10 * 60_000;

export async function buildSystem(config: Config, overrides: SystemOverrides = {}): Promise<System> {
  const clock = overrides.clock ?? systemClock;
  const run = overrides.run ?? ALL_SUBSYSTEMS;
  const log = overrides.log ?? createLogger(config.logLevel, undefined, config.logFormat);
  const metrics = createMetrics();
  const background = backgroundWork(log);
  const production = config.env === 'production';
  const prefix = overrides.redisPrefix ?? DEFAULT_REDIS_PREFIX;
  // The upstream provider's client (docs/accounts.md): an unusable key or address refused before anything is opened.
  const upstream = config.upstream && (await upstreamClient(config.upstream));

  // ——— Storage: the database, Redis, the caches kept by their change channels, the artifacts ———
  const { db, redis, migrationsApplied, records, tokenCache, artifacts, storeRecord } = await startStorage(config, overrides, { log, metrics, clock });
  const cipher = createDataCipher(config.dataEncryptionKeys);

  // ——— Accounts: password hashing, the sign-in forms' limits ———
  const passwords = passwordHashing({ logN: config.passwordHashLogN });
  const rateLimits = createRateLimits(config.rateLimits, redis, overrides.redisPrefix);
  const signInLimits = createSignInLimits(config.rateLimits, { redis, prefix: overrides.redisPrefix, secret: config.cookieKeys[0]!, iterations: overrides.challengeIterations });

  // ——— Clients: the secret check, "last used" in batches (src/storage/last-use.ts), metadata-document clients ———
  // One secret check for the provider's client authentication and the hot paths alike.
  const secretUses = secretUseRecorder(db, clock);
  const grantUses = grantUseRecorder(db, clock);
  const secrets = clientSecrets(db, artifacts, secretUses, clock);
  const cimdBudget = config.cimd.fetchLimits && fetchBudget(config.cimd.fetchLimits, limiterFactory(redis, prefix));
  const cimd = cimdClients({ db, records, config: config.cimd, production, resolve: overrides.cimdResolve, budget: cimdBudget, log, failedAnswerMs: overrides.cimdFailedAnswerMs, clock });

  // ——— Organizations: grants bound to an organization and teams ———
  const bindings = grantBindings(db);

  // ——— OAuth: the provider ———
  // A refresh retried within its client's window gets the first answer, on the provider's path and the fast refresh alike.
  const graceWindows = refreshGraceWindows(artifacts.flights, config.refreshGraceSeconds, clock);
  // The token-signing keys: what the rows say at the clock's time, read again on a rotation's notice (no restart).
  const signingKeys = await startSigningKeys({
    db,
    cipher,
    records,
    clock,
    onChange: (served) => log.info({ signing: served.signing, published: served.published }, 'token-signing keys changed'),
    onError: (err) => log.warn({ message: err.message }, 'reading the token-signing keys failed'),
  });
  const provider = createProvider({ config, db, records, artifacts, secrets, bindings, cimd, jwks: signingKeys.jwks, tokenLimits: rateLimits.token, clock, graceWindows });
  signingKeys.serve(provider);

  // ——— Webhooks: the outbox, and when asked this instance's delivery worker ———
  const webhookPolicy = { production, allowLoopback: config.webhookAllowLoopback };
  const webhooks = await startWebhooks(db, config, { delivery: run.webhookDelivery === true, worker: { cipher, policy: webhookPolicy, metrics, log, pollingSeconds: overrides.webhookPollingSeconds }, background });
  const { outbox } = webhooks;
  watchProviderEvents(provider, { db, outbox, grantUses, metrics, log });

  // ——— The resource API: the gateway check and /v2/me over one token verifier ———
  const api = resourceApi({ provider, db, records, artifacts, tokenCache: tokenCache?.cache, baseUrl: config.baseUrl });

  // ——— The fast path: answers outside the provider, only while its assumptions about it hold ———
  const fastPaths = await fastPathOn(provider, config.fastPaths, log);
  metrics.fastPathOn.set(fastPaths ? 1 : 0);
  const backChannelHotPaths = fastPaths
    ? backChannelPlainCases({
        provider,
        secrets,
        limits: rateLimits.token,
        grace: graceWindows,
        artifacts,
        platform: platformResource(config.baseUrl),
        accountExists: async (accountId) => (await findUserById({ db, records }, accountId)) !== undefined,
        log,
      })
    : undefined;

  // ——— Web: the listener (the hot paths, the pages, the API, the provider mounted) ———
  const proxyHops = config.proxyHops;
  // What every request of both transports gets (src/http/envelope.ts), made once so that they do it alike.
  const https = config.appUrl.startsWith('https:');
  const wrap = envelope({ log, metrics, https, proxyHops, proxyWarning: untrustedProxyWarning(log, { production, proxyHops }), requestLogLevel: config.requestLogLevel });
  const listener = createListener({
    provider,
    db,
    redis,
    log,
    proxyHops,
    envelope: wrap,
    api,
    backChannelHotPaths,
    rateLimits,
    signInLimits,
    cookieKeys: config.cookieKeys,
    artifacts,
    secrets,
    outbox,
    passwords,
    bindings,
    metrics,
    https,
    platformName: config.platformName,
    cimdMaxUsers: config.cimd.maxUsers,
    jwksUriAllowLoopback: config.cimd.allowLoopback,
    dynamicRegistration: config.dynamicRegistration,
    publicUrls: { appUrl: config.appUrl, baseUrl: config.baseUrl },
    webhooks: { policy: webhookPolicy, cipher },
    tokenCache: tokenCache?.cache,
    records,
    leakReportLimiter: leakReportLimiter(config.rateLimits.enabled, redis, prefix),
    upstream,
    localPasswords: config.localPasswords,
  });

  // ——— Sweeps, when asked ———
  // Secrets expiring or expired: the app is told, once (src/clients/secret-expiry.ts).
  const sweepExpiry = () => sweepSecretExpiry({ db, outbox, clock }, config.secretExpiryNoticeSeconds);
  if (run.sweeps) background.every('secret expiry sweep', SECRET_EXPIRY_SWEEP_MS, sweepExpiry);

  // Open dynamic registration: a registered client issued a token stays; the others go after an
  // hour (src/registration/registration.ts).
  const sweepUnused = () => sweepRegistrations({ db, records });
  if (config.dynamicRegistration) {
    const tokenIssued = tokenIssuedRecorder(db);
    provider.on('grant.success', (ctx) => {
      const client = ctx.oidc?.client;
      if (client && reviewOf(client) && !isUrlClientId(client.clientId)) void tokenIssued(client.clientId).catch((err) => log.warn({ message: (err as Error).message }, 'recording a registered client\'s first token failed'));
    });
    if (run.sweeps) background.every('registration sweep', REGISTRATION_SWEEP_MS, sweepUnused);
  }

  // Expired rows are invisible to the SQL adapter; this only reclaims the space.
  if (run.sweeps && !redis) background.every('purge of expired artifacts', PURGE_INTERVAL_MS, () => purgeExpiredArtifacts(db));

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
    signingKeys,
    migrationsApplied,
    cimd,
    sweepRegistrations: sweepUnused,
    sweepSecretExpiry: sweepExpiry,
    running: () => background.names(),
    async close() {
      background.stop();
      signingKeys.stop();
      storeRecord.stop();
      await webhooks.stop();
      await records.close();
      await tokenCache?.close();
      await grantUses.flush().catch((err) => log.warn({ err }, 'last grant uses not written'));
      await secretUses.flush().catch((err) => log.warn({ err }, 'last secret uses not written'));
      if (!overrides.redis) redis?.disconnect();
      if (!overrides.db) await db.destroy();
    },
  };
}

/** The database (migrated), Redis, the record and token caches with their change channels, the artifacts and their record for the operator scripts. */
async function startStorage(config: Config, overrides: SystemOverrides, { log, metrics, clock }: { log: Logger; metrics: Metrics; clock: Clock }) {
  const db = overrides.db ?? connectDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: config.databasePoolMax, onWarning: (message) => log.warn({ message }, 'database') });
  const redis = overrides.redis ?? (config.redis ? connectRedis(config.redis, (err) => log.warn({ message: err.message }, 'redis')) : undefined);
  const prefix = overrides.redisPrefix ?? DEFAULT_REDIS_PREFIX;
  const migrationsApplied = await migrateLatest(db);
  const channel = (name: string) => ({ clock, heartbeat: overrides.heartbeat, onHeartbeatMissed: () => metrics.heartbeatsMissed.inc({ channel: name }) });
  // Client and user records are cached in memory while this feed tells us of every change.
  const records = await startRecordCache(db, config.databaseUrl, (message) => log.warn({ message }, 'change feed'), channel('record_changes'));
  // Access token lookups are served from memory while this process hears of every revocation.
  const tokenCache = redis ? await startTokenCache(redis, prefix, (message) => log.warn({ message }, 'token cache'), channel('revocations')) : undefined;
  metrics.watchMemoryCache('records', () => records.live);
  // A token's facts kept in memory say its client was usable: they end with the client's record.
  // This is what refuses a token saved after a suspension's sweep (src/clients/service.ts).
  if (tokenCache) {
    records.onChange((kind, id) => kind === 'client' && tokenCache.cache.drop({ client: id }));
    records.onReset(() => tokenCache.cache.dropAll());
    metrics.watchMemoryCache('tokens', () => tokenCache.cache.serving);
  }
  const artifacts = artifactStorage(db, redis, overrides.redisPrefix, tokenCache?.cache);
  // For the operator scripts: where this server's artifacts live (src/storage/store-record.ts).
  const store = redis && { client: redis, mode: redis.isCluster ? ('cluster' as const) : (config.redis?.mode ?? 'single'), prefix };
  // Its mark is put back in Redis on every reconnection and with each heartbeat (5 s), so the
  // scripts work again within seconds of Redis losing its data.
  const storeRecord = await keepArtifactStoreRecorded(db, store, {
    markIntervalMs: overrides.heartbeat?.intervalMs ?? HEARTBEAT.intervalMs,
    recordIntervalMs: STORE_RECORD_INTERVAL_MS,
    onError: (err) => log.warn({ message: err.message }, 'recording the artifact store failed'),
  });
  return { db, redis, migrationsApplied, records, tokenCache, artifacts, storeRecord };
}

/**
 * The webhook queue (pg-boss, in this database) and its outbox. With delivery on, the queue starts
 * now, supervised, and this instance's worker takes jobs; without it, the queue starts on the first
 * event to queue (most instances without a worker, tests, never queue one), as the operator scripts
 * start theirs.
 */
async function startWebhooks(db: Db, config: Config, { delivery, worker, background }: { delivery: boolean; worker: Omit<WorkerDeps, 'db' | 'queue'>; background: ReturnType<typeof backgroundWork> }) {
  const queueOptions = { retryBaseSeconds: config.webhookRetryBaseSeconds, onError: (err: Error) => worker.log.warn({ message: err.message }, 'webhook queue') };
  let queue: Promise<WebhookQueue> | undefined;
  if (delivery) {
    queue = Promise.resolve(await startWebhookQueue(db, { supervise: true, ...queueOptions }));
    await startWebhookWorker({ db, queue: await queue, ...worker });
    background.add('webhook delivery');
  }
  // Where client changes write the events they cause, in their own transaction.
  const outbox = webhookOutbox(db, () => (queue ??= startWebhookQueue(db, { supervise: false, ...queueOptions })));
  return {
    outbox,
    async stop() {
      // Attempts in flight finish (5 s at most); jobs not taken stay queued for the next start.
      outbox.close();
      await (await queue?.catch(() => undefined))?.stop({ graceful: true, timeout: 6000 });
    },
  };
}

/** The instance's background work: named, so a test sees what runs, and stopped together. */
function backgroundWork(log: Logger) {
  const names = new Set<string>();
  const timers: NodeJS.Timeout[] = [];
  return {
    add: (name: string) => void names.add(name),
    /** `task` every `ms`, a failure logged (the next run tries again); the timer keeps no process alive. */
    every(name: string, ms: number, task: () => Promise<unknown>) {
      const timer = setInterval(() => task().catch((err) => log.warn({ message: (err as Error).message }, `${name} failed`)), ms);
      timer.unref();
      timers.push(timer);
      names.add(name);
    },
    names: () => [...names],
    stop() {
      for (const timer of timers) clearInterval(timer);
      timers.length = 0;
      names.clear();
    },
  };
}
