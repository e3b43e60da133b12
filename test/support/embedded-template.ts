// A migrated embedded database (PGlite's DATA_DIR) to copy, for tests whose subject is not the first
// start: PGlite's initdb and the migrations cost about 6 s of CPU, a copy a fraction of a second.
// The first start from an empty DATA_DIR stays real where it is the subject (test/embedded.test.ts).
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { ROOT, spawnAdmin } from './processes.ts';
import { TEST_PG_URL } from './services.ts';

const TEMPLATE_LOCK_KEY = 727_210_100;

/** Named after what shapes it (the migrations, the storage code, the installed PGlite), so a change makes a new one. */
function templateDir(): string {
  const sources = [...fs.readdirSync(path.join(ROOT, 'migrations')).sort().map((f) => `migrations/${f}`), 'src/storage/db.ts', 'src/storage/data-dir.ts', 'package-lock.json'];
  const hash = createHash('sha256');
  for (const file of sources) hash.update(file).update(fs.readFileSync(path.join(ROOT, file)));
  return path.join(ROOT, 'test/artifacts', `pglite-migrated-${hash.digest('hex').slice(0, 12)}`);
}

/**
 * Builds the template once, by whichever process needs it first (`npm run admin -- migrate` on an
 * empty directory, a process of its own: the umask it sets stays there), under an advisory lock of
 * the test PostgreSQL, and publishes it by a rename, so no process copies a half-built one.
 */
async function ensureTemplate(): Promise<string> {
  const dir = templateDir();
  if (fs.existsSync(dir)) return dir;
  const lock = new pg.Client({ connectionString: TEST_PG_URL });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [TEMPLATE_LOCK_KEY]);
    if (fs.existsSync(dir)) return dir;
    const building = `${dir}.building-${randomBytes(3).toString('hex')}`;
    const migrated = await spawnAdmin(['migrate'], { DATA_DIR: building });
    if (migrated.code !== 0) throw new Error(`could not build the embedded database template: ${migrated.stderr}`);
    fs.renameSync(building, dir);
    // Templates of other versions of the code, left by earlier runs.
    const artifacts = path.dirname(dir);
    for (const name of fs.readdirSync(artifacts)) if (name.startsWith('pglite-migrated-') && path.join(artifacts, name) !== dir) fs.rmSync(path.join(artifacts, name), { recursive: true, force: true });
    return dir;
  } finally {
    await lock.end(); // the lock goes with its connection
  }
}

/** Fills `target` (absent or empty) with a copy of a migrated embedded database: no demo, no server lock. */
export async function copyMigratedDataDir(target: string): Promise<void> {
  fs.cpSync(await ensureTemplate(), target, { recursive: true });
}
