// Process entry: config → listen → storage → provider → app (+ metrics listener); graceful shutdown on SIGTERM/SIGINT.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig, withListeningPort } from './config.ts';
import { buildSystem } from './system.ts';
import { metricsListener } from './http/metrics.ts';
import { acquireLock } from './storage/embedded-lock.ts';
import { seedDemo } from './demo.ts';
import { startingListener } from './http/starting.ts';

async function main(): Promise<void> {
  let config = loadConfig();
  const releaseLock = config.databaseUrl ? () => {} : acquireLock(config.dataDir);

  // Listen first, so that with PORT=0 the public URLs can name the real port; until the app is
  // ready every request is answered 503 with Retry-After at once (a health check, an early client).
  const starting = startingListener();
  const server = http.createServer(starting.listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  config = withListeningPort(config, (server.address() as AddressInfo).port);

  const system = await buildSystem(config);
  starting.ready(system.listener);
  const { log } = system;

  if (config.usingDevCookieKeys) log.warn('COOKIE_KEYS is not set: using development cookie keys (refused in production)');
  if (config.usingDevDataKeys) log.warn('DATA_ENCRYPTION_KEYS is not set: stored secrets are encrypted under a development key (refused in production)');
  if (!config.databaseUrl) log.info({ dataDir: config.dataDir }, 'using the embedded PostgreSQL (PGlite)');
  if (!config.databaseUrl && config.env !== 'production' && system.migrationsApplied.includes('001_initial')) {
    console.log(await seedDemo(system, config));
  }
  // Metrics only on their own listener (METRICS_PORT, e.g. reachable by Prometheus alone), never on the public one.
  const metricsServer = config.metricsPort === undefined ? undefined : metricsListener(system.metrics);
  if (metricsServer) {
    await new Promise<void>((resolve, reject) => {
      metricsServer.once('error', reject);
      metricsServer.listen(config.metricsPort, config.metricsHost, resolve);
    });
    console.log(`Metrics on http://${config.metricsHost}:${(metricsServer.address() as AddressInfo).port}/metrics`);
  }
  const { port } = server.address() as AddressInfo;
  console.log(`Listening on http://${config.host}:${port} (APP_URL ${config.appUrl}, BASE_URL ${config.baseUrl})`);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    metricsServer?.close();
    metricsServer?.closeIdleConnections();
    server.close(async () => {
      await system.close();
      releaseLock();
      process.exit(0);
    });
    server.closeIdleConnections();
    setTimeout(() => process.exit(1), 10_000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? `Configuration error: ${err.message}` : err);
  process.exit(1);
});
