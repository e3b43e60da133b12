// Storage for a benchmark run: a fresh PostgreSQL database (dropped at the end), a dedicated Redis
// logical database (flushed at start and end), or a fresh embedded PGlite directory; and the
// users and the approved client, created through the operator scripts' own code path.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import { Redis } from 'ioredis';
import { connectDb, migrateLatest } from '../../src/storage/db.ts';
import { artifactStorage } from '../../src/storage/artifacts.ts';
import { clientsCreate, clientsSetStatus, usersCreate, type AdminContext } from '../../src/admin/commands.ts';
import { onCleanup } from './procs.ts';
import { REDIRECT_URI } from './flows.ts';
import type { TestUser } from '../../test/support/oauth.ts';

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A fresh database `bench_<pid>_<random>` on the server of `adminUrl`, dropped at cleanup.
 * Databases left by a runner that no longer exists (killed with SIGKILL) are dropped first.
 */
export async function createBenchDatabase(adminUrl: string): Promise<{ url: string; name: string }> {
  const admin = knexFactory({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
  try {
    const rows = (await admin.raw(`select datname from pg_database where datname like 'bench\\_%'`)).rows as { datname: string }[];
    for (const { datname } of rows) {
      const pid = Number(/^bench_(\d+)_[0-9a-f]+$/.exec(datname)?.[1]);
      if (pid && pid !== process.pid && !pidAlive(pid)) {
        console.log(`  dropping ${datname}, left by an earlier run`);
        await admin.raw(`drop database if exists ${datname} with (force)`);
      }
    }
    const name = `bench_${process.pid}_${randomBytes(4).toString('hex')}`;
    await admin.raw(`create database ${name}`);
    onCleanup(`drop database ${name}`, async () => {
      const dropper = knexFactory({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
      try {
        await dropper.raw(`drop database if exists ${name} with (force)`);
      } finally {
        await dropper.destroy();
      }
    });
    return { url: withDatabase(adminUrl, name), name };
  } catch (err) {
    throw new Error(`PostgreSQL at ${adminUrl} (a user that may create databases) is needed: ${(err as Error).message}`);
  } finally {
    await admin.destroy();
  }
}

/** The dedicated Redis logical database: flushed now and at cleanup. */
export async function prepareRedis(url: string): Promise<void> {
  const flush = async () => {
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
    try {
      await redis.connect();
      await redis.flushdb();
    } finally {
      redis.disconnect();
    }
  };
  try {
    await flush();
  } catch (err) {
    throw new Error(`Redis at ${url} is needed: ${(err as Error).message}`);
  }
  onCleanup(`flush ${url}`, flush);
}

/** A fresh embedded database directory, removed at cleanup. */
export function pgliteDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pglite-'));
  onCleanup(`remove ${dir}`, () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface Seed {
  users: TestUser[];
  clientId: string;
  clientSecret: string;
}

export const OUR_SCOPES = ['PROFILE_READ', 'BOOKING_READ'];

/**
 * Users and one approved confidential client, made with the operator scripts' functions on the
 * server's database (before the server starts: the embedded database allows one process at a time).
 */
export async function seed(databaseUrl: string | undefined, dataDir: string, userCount: number): Promise<Seed> {
  const db = connectDb({ databaseUrl, dataDir });
  try {
    await migrateLatest(db);
    const ctx: AdminContext = { db, artifacts: artifactStorage(db), by: { actor: 'bench' } };
    const users = await Promise.all(
      Array.from({ length: userCount }, async (_, i) => {
        const user = { email: `bench-${i}@example.com`, password: randomBytes(12).toString('base64url') };
        await usersCreate(db, { ...user, name: `Bench User ${i}` });
        return user;
      }),
    );
    const created = await clientsCreate(ctx, { name: 'Bench App', redirectUri: [REDIRECT_URI], scope: OUR_SCOPES });
    await clientsSetStatus(ctx, created.client_id, 'approved');
    return { users, clientId: created.client_id, clientSecret: created.client_secret! };
  } finally {
    await db.destroy();
  }
}
