// Process entry: config → listen → storage → provider → app (+ metrics listener); graceful shutdown on SIGTERM/SIGINT.
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig, withListeningPort } from './config.ts';
import { ALL_SUBSYSTEMS, buildSystem } from './system.ts';
import { metricsListener } from './http/metrics.ts';
import { acquireLock, DataDirInUse } from './storage/embedded-lock.ts';
import { demoReminder, seedDemo } from './demo.ts';
import { startingListener } from './http/starting.ts';
import { createHttpServer } from './http/server.ts';
import { openAdminChannel } from './admin/channel.ts';
import { runAdmin } from './admin/program.ts';

/** A start that cannot go on for a reason the operator fixes: one line saying what to do, no stack trace. */
class StartupError extends Error {}

/** Listens, or says in one line why not and what to do (another process on the port, a privileged port). */
async function listen(server: http.Server, port: number, host: string, name = 'PORT'): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  }).catch((err: NodeJS.ErrnoException) => {
    const next = port === 0 ? 0 : port + 1;
    if (err.code === 'EADDRINUSE') throw new StartupError(`port ${port} on ${host} is already in use (another server still running?): stop that process, or choose another port, e.g. ${name}=${next} npm start`);
    if (err.code === 'EACCES') throw new StartupError(`not allowed to listen on port ${port} on ${host} (ports below 1024 need privileges): choose another, e.g. ${name}=3000 npm start`);
    if (err.code === 'EADDRNOTAVAIL') throw new StartupError(`${host} is not an address of this machine: set HOST to one of its addresses, e.g. HOST=127.0.0.1 npm start`);
    throw err;
  });
}

async function main(): Promise<void> {
  let config = loadConfig();
  const releaseLock = config.databaseUrl ? () => {} : acquireLock(config.dataDir);

  // Listen first, so that with PORT=0 the public URLs can name the real port; until the app is
  // ready every request is answered 503 with Retry-After at once (a health check, an early client).
  const starting = startingListener();
  const server = createHttpServer(starting.listener);
  try {
    await listen(server, config.port, config.host);
  } catch (err) {
    releaseLock();
    throw err;
  }
  config = withListeningPort(config, (server.address() as AddressInfo).port);

  // The server runs every background subsystem: the webhook worker and the sweeps.
  const system = await buildSystem(config, { run: ALL_SUBSYSTEMS });
  starting.ready(system.listener);
  const { log } = system;

  if (config.usingDevCookieKeys) log.warn('COOKIE_KEYS is not set: using development cookie keys (refused in production)');
  if (config.usingDevDataKeys) log.warn('DATA_ENCRYPTION_KEYS is not set: stored secrets are encrypted under a development key (refused in production)');
  if (!config.databaseUrl) log.info({ dataDir: config.dataDir }, 'using the embedded PostgreSQL (PGlite)');
  if (!config.databaseUrl && config.env !== 'production') {
    // The first start creates the demo and prints its credentials once; later starts say where they were and how to reset them.
    const demo = system.migrationsApplied.includes('001_initial') ? await seedDemo(system, config) : await demoReminder(system.db, config);
    if (demo) console.log(demo);
  }
  // Metrics only on their own listener (METRICS_PORT, e.g. reachable by Prometheus alone), never on the public one.
  const metricsServer = config.metricsPort === undefined ? undefined : metricsListener(system.metrics);
  if (metricsServer) {
    await listen(metricsServer, config.metricsPort!, config.metricsHost, 'METRICS_PORT');
    console.log(`Metrics on http://${config.metricsHost}:${(metricsServer.address() as AddressInfo).port}/metrics`);
  }
  // Read-only operator scripts while this server holds the embedded database (src/admin/channel.ts).
  // Without it (a socket path too long for the system, say) the server still serves; scripts then refuse as before.
  const closeChannel = config.databaseUrl
    ? () => {}
    : await openAdminChannel(config.dataDir, async (argv) => {
        let stdout = '';
        let stderr = '';
        const code = await runAdmin(argv, { env: process.env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) }, { serverDb: system.db });
        return { code, stdout, stderr };
      }).catch((err: Error) => {
        log.warn({ err: { message: err.message } }, 'operator scripts cannot reach this server (read-only commands need it stopped)');
        return () => {};
      });
  const { port } = server.address() as AddressInfo;
  console.log(`Listening on http://${config.host}:${port} (APP_URL ${config.appUrl}, BASE_URL ${config.baseUrl})`);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    metricsServer?.close();
    metricsServer?.closeIdleConnections();
    closeChannel();
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
  if (err instanceof ConfigError) console.error(`Configuration error: ${err.message}`);
  else if (err instanceof StartupError || err instanceof DataDirInUse) console.error(`error: ${err.message}`);
  else console.error(err);
  process.exit(1);
});
