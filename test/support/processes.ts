// The real commands, as an operator runs them: the server (src/main.ts) and the operator CLI
// (src/admin/cli.ts), as separate processes. Tests run them bundled, with plain node
// (test/support/process-bundle.ts): the same code without tsx's compile at every start. The
// commands people type, `npm start` and `npm run admin`, are run as typed by one test each
// (test/config.test.ts, test/admin.test.ts).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runAdmin } from '../../src/admin/program.ts';
import { BUNDLED_ADMIN, BUNDLED_SERVER } from './process-bundle.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A program and its arguments; `group`: it starts processes of its own, which signals must reach too. */
export interface Command {
  file: string;
  args: string[];
  group: boolean;
}

/** The server: bundled, with the node running the tests (what tests use), or `npm start` as people type it. */
export const SERVER = {
  bundled: { file: process.execPath, args: [BUNDLED_SERVER], group: false },
  npm: { file: 'npm', args: ['start'], group: true },
} satisfies Record<string, Command>;

/** The operator CLI: bundled, or `npm run --silent admin --` as people type it. */
export const ADMIN = {
  bundled: { file: process.execPath, args: [BUNDLED_ADMIN], group: false },
  npm: { file: 'npm', args: ['run', '--silent', 'admin', '--'], group: true },
} satisfies Record<string, Command>;

/** A clean environment: only what the command should see (no test-runner variables). */
function envWith(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', ...extra };
}

interface Started {
  child: ChildProcessWithoutNullStreams;
  /** Sends `name` to the command, and to every process it started. */
  signal(name: NodeJS.Signals): void;
}

/**
 * Starts `command` with `args` in the repository, under `umask` when given (set by a shell that then
 * becomes the program, as in an operator's session). A command with processes of its own (npm, and
 * under it sh, tsx and node) gets a process group, so that a signal reaches all of them.
 */
function start(command: Command, args: string[], env: NodeJS.ProcessEnv, umask?: string): Started {
  const argv = [...command.args, ...args];
  const [file, fileArgs] = umask === undefined ? [command.file, argv] : ['sh', ['-c', `umask ${umask} && exec "$@"`, 'sh', command.file, ...argv]];
  const child = spawn(file, fileArgs, { cwd: ROOT, env, detached: command.group });
  const signal = (name: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      if (command.group) process.kill(-child.pid!, name);
      else child.kill(name);
    } catch {
      // gone meanwhile
    }
  };
  return { child, signal };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The operator scripts as a separate process, as `npm run --silent admin --` runs them (bundled unless `command` says otherwise). */
export function spawnAdmin(args: string[], env: Record<string, string>, stdin = '', umask?: string, command: Command = ADMIN.bundled): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const { child } = start(command, args, envWith(env), umask);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** The operator scripts in this process: the same code as the CLI, without a process start per call. */
export async function admin(args: string[], env: Record<string, string>): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await runAdmin(args, { env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

export interface RunningServer {
  child: ChildProcessWithoutNullStreams;
  url: string;
  output(): string;
  /** SIGTERM, then the exit code once every process of the command has gone. */
  stop(): Promise<number | null>;
}

/**
 * Starts the server (bundled unless `command` says otherwise; under `umask` when given) and waits
 * for the address it prints. If it does not print one in time, the whole command is killed.
 */
export function startServerProcess(env: Record<string, string>, timeoutMs = 30_000, umask?: string, command: Command = SERVER.bundled): Promise<RunningServer> {
  const { child, signal } = start(command, [], envWith({ PORT: '0', ...env }), umask);
  let output = '';
  const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal('SIGKILL');
      reject(new Error(`server did not start in time:\n${output}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      output += d;
      const match = /Listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({
          child,
          url: match[1]!,
          output: () => output,
          stop: () => {
            signal('SIGTERM');
            return closed;
          },
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
}

/** The server expected to stop by itself (a start-up refusal): its exit code and output. */
export function runServerToExit(env: Record<string, string>, timeoutMs = 30_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const { child, signal } = start(SERVER.bundled, [], envWith({ PORT: '0', ...env }));
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      signal('SIGKILL');
      reject(new Error(`server did not exit in time:\n${stdout}${stderr}`));
    }, timeoutMs);
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

/** A port free right now (for a process that needs a known one: it prints its address only when ready). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
