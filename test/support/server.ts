// Our real app on a real port, on a per-file PostgreSQL database and (optionally) Redis.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config.ts';
import { buildSystem, type System } from '../../src/system.ts';
import type { Logger } from '../../src/log.ts';
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from './services.ts';

export type Storage = 'redis' | 'sql';

export interface TestServer {
  url: string;
  system: System;
  pg: TestDatabase;
  redis?: TestRedis;
  close(): Promise<void>;
}

export async function startTestServer(storage: Storage, env: Record<string, string> = {}, options: { log?: Logger } = {}): Promise<TestServer> {
  const [pg, redis] = await Promise.all([createTestDatabase(), storage === 'redis' ? createTestRedis() : undefined]);
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = loadConfig({ NODE_ENV: 'test', APP_URL: url, DATABASE_URL: pg.url, ...(redis ? { REDIS_URL: redis.url } : {}), ...env });
  const system = await buildSystem(config, { db: pg.db, ...(redis ? { redis: redis.redis, redisPrefix: redis.prefix } : {}), ...options });
  server.on('request', system.app.callback());
  return {
    url,
    system,
    pg,
    ...(redis ? { redis } : {}),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await system.close();
      await Promise.all([pg.drop(), redis?.cleanup()]);
    },
  };
}
