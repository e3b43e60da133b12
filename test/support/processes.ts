// The real commands, as an operator runs them: `npm start` (src/main.ts) and the admin CLI.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runAdmin } from '../../src/admin/program.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');

/** A clean environment: only what the command should see (no test-runner variables). */
function envWith(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', ...extra };
}

/** `tsx args`, under `umask` when given (set by a shell, as in an operator's session). */
function tsx(args: string[], umask?: string): [string, string[]] {
  return umask === undefined ? [TSX, args] : ['sh', ['-c', `umask ${umask} && exec "$@"`, 'sh', TSX, ...args]];
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The operator scripts as a separate process, exactly as `npm run --silent admin --` runs them. */
export function spawnAdmin(args: string[], env: Record<string, string>, stdin = '', umask?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(...tsx(['src/admin/cli.ts', ...args], umask), { cwd: ROOT, env: envWith(env) });
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
  stop(): Promise<number | null>;
}

/** Starts the server as `npm start` does (under `umask` when given) and waits for the address it prints. */
export function startServerProcess(env: Record<string, string>, timeoutMs = 30_000, umask?: string): Promise<RunningServer> {
  const child = spawn(...tsx(['src/main.ts'], umask), { cwd: ROOT, env: envWith({ PORT: '0', ...env }) });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
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
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done(child.exitCode);
              child.once('exit', (code) => done(code));
              child.kill('SIGTERM');
            }),
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d) => (output += d));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
}

/** `npm start` that is expected to stop by itself (a start-up refusal): its exit code and output. */
export function runServerToExit(env: Record<string, string>, timeoutMs = 30_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(TSX, ['src/main.ts'], { cwd: ROOT, env: envWith({ PORT: '0', ...env }) });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
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
