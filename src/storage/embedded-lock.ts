// PGlite allows one process per data directory; a second one would corrupt it. The server
// holds this lock while it runs, and the operator scripts refuse to open a locked directory.
import fs from 'node:fs';
import path from 'node:path';
import { ownerOnlyDataDir } from './data-dir.ts';

const LOCK_FILE = 'server.pid';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid of a live process holding the data directory, if any. */
export function lockHolder(dataDir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, LOCK_FILE), 'utf8'));
    return Number.isInteger(pid) && pid !== process.pid && isAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Another live process holds the data directory: a second server would corrupt it. */
export class DataDirInUse extends Error {
  constructor(readonly dataDir: string, readonly pid: number) {
    super(`the embedded database in ${dataDir} is in use by process ${pid} (another npm start?): stop that process (Ctrl-C in its terminal, or kill ${pid}), or start this one on another DATA_DIR=… or on PostgreSQL (DATABASE_URL)`);
  }
}

export function acquireLock(dataDir: string): () => void {
  const holder = lockHolder(dataDir);
  if (holder) throw new DataDirInUse(dataDir, holder);
  ownerOnlyDataDir(dataDir);
  const file = path.join(dataDir, LOCK_FILE);
  fs.writeFileSync(file, String(process.pid));
  return () => fs.rmSync(file, { force: true });
}
