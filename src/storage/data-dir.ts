// The embedded database's directory (DATA_DIR) holds password hashes, encrypted signing keys and
// the admin socket: it is the owner's only (directories 0700, files 0600), whatever the umask the
// server or a script was started with (docs/security.md).
import fs from 'node:fs';
import path from 'node:path';

const GROUP_AND_OTHER = 0o077;

/**
 * Files this process creates from now on get no group or other bits: PGlite's (WAL segments and
 * relation files come later, through Node's fs), the lock file, the admin socket. The process
 * creates no other files; the umask is only ever tightened, never loosened.
 */
function ownerOnlyFromNowOn(): void {
  try {
    const previous = process.umask(GROUP_AND_OTHER);
    process.umask(previous | GROUP_AND_OTHER);
  } catch {
    // A worker thread cannot set the umask: the walk below still tightens what exists.
  }
}

/** Takes group and other bits off every entry under `dir` (and `dir`), symbolic links inside left alone. */
function tighten(dir: string, onWarning: (message: string) => void): void {
  const visit = (entry: string) => {
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(entry);
    } catch {
      return; // gone meanwhile
    }
    if (stat.isSymbolicLink()) return;
    if (stat.mode & GROUP_AND_OTHER) {
      try {
        fs.chmodSync(entry, stat.mode & 0o7777 & ~GROUP_AND_OTHER);
      } catch (err) {
        onWarning(`${entry} could not be made owner-only: ${(err as Error).message}`);
      }
    }
    if (!stat.isDirectory()) return;
    let names: string[];
    try {
      names = fs.readdirSync(entry);
    } catch {
      return; // gone meanwhile
    }
    for (const name of names) visit(path.join(entry, name));
  };
  // DATA_DIR itself may be a symbolic link to the directory: that directory is the one to tighten.
  let root: string;
  try {
    root = fs.realpathSync(dir);
  } catch {
    return; // removed (after a close, say)
  }
  visit(root);
}

/**
 * Creates DATA_DIR owner-only, or makes an existing one so (a directory written before this rule,
 * or under a loose umask), and keeps what this process creates there so.
 */
export function ownerOnlyDataDir(dataDir: string, onWarning: (message: string) => void = () => {}): void {
  ownerOnlyFromNowOn();
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  tighten(dataDir, onWarning);
}

/**
 * Makes what is in DATA_DIR owner-only again. PGlite's file layer (Emscripten) sets the mode of a
 * file it creates explicitly, past the umask: its initial files (0666) and those PostgreSQL writes
 * with fopen, such as pg_internal.init at each start and the statistics at shutdown (0644). Run
 * once the database is open and again once it is closed; in between, the directory (0700) keeps
 * anything written later out of others' reach.
 */
export function tightenDataDir(dataDir: string, onWarning: (message: string) => void = () => {}): void {
  tighten(dataDir, onWarning);
}
