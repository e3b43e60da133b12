// Debian's nginx as the gateway, run as the current user on a free loopback port, everything it
// writes (pid, logs, temp files) in a temporary directory. It loads the shipped template
// deploy/nginx/templates/gateway.conf.template, filled as envsubst fills it.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort, ROOT } from './processes.ts';
import { eventually } from './eventually.ts';

export { freePort };

export const NGINX = process.env.NGINX_PATH ?? '/usr/sbin/nginx';
export const GATEWAY_TEMPLATE = path.join(ROOT, 'deploy/nginx/templates/gateway.conf.template');

/** Outside CI a machine without nginx skips the file (and says so); in CI it must run. */
export function nginxTestsEnabled(what: string): boolean {
  const available = fs.existsSync(NGINX);
  if (!available && process.env.CI !== 'true') console.warn(`${what} skipped: no nginx at ${NGINX} (apt-get install nginx)`);
  return available || process.env.CI === 'true';
}

/** envsubst on `${NAME}` placeholders; a placeholder without a value is an error, not an empty string. */
export function renderTemplate(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for \${${name}} in the nginx template`);
    return value;
  });
}


export interface RunningNginx {
  url: string;
  dir: string;
  /** What nginx logged so far (for failure messages). */
  errorLog(): string;
  stop(): Promise<void>;
}

/** The main configuration: only process matters (pid, logs, temp paths); the gateway is the template. */
function mainConf(dir: string, gateway: string): string {
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((kind) => `    ${kind}_temp_path ${path.join(dir, kind)};`).join('\n');
  return [
    // As root, workers would switch to "nobody", who cannot write the temporary directory.
    process.getuid?.() === 0 ? 'user root;' : '',
    'daemon off;',
    'master_process on;',
    'worker_processes 1;',
    `pid ${path.join(dir, 'nginx.pid')};`,
    `error_log ${path.join(dir, 'error.log')} info;`,
    'events { worker_connections 256; }',
    'http {',
    `    access_log ${path.join(dir, 'access.log')};`,
    temp,
    `    include ${gateway};`,
    '}',
    '',
  ].join('\n');
}

async function waitForPort(port: number, child: ChildProcess, output: () => string, timeoutMs = 10_000): Promise<void> {
  const listening = () =>
    new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
  let exited: Error | undefined;
  await eventually(async () => {
    if (child.exitCode !== null) exited ??= new Error(`nginx exited with ${child.exitCode}:\n${output()}`);
    if (!exited && !(await listening())) throw new Error(`nginx did not listen on ${port} in time:\n${output()}`);
  }, { timeout: timeoutMs, interval: 50 });
  if (exited) throw exited;
}

/** A certificate and its key, as files. */
export interface TlsFiles {
  certificate: string;
  key: string;
}

/**
 * The template with its TLS lines (between `# tls:begin` and `# tls:end`) in place of its plain
 * listen line, exactly as docs/production.md tells a deployer to edit it: uncommented, the port
 * and the certificate's paths set.
 */
export function withTls(template: string, port: number, tls: TlsFiles): string {
  const block = /^ *listen \$\{GATEWAY_LISTEN\};\n((?:.*\n)*?) *# tls:begin\n((?:.*\n)*?) *# tls:end\n/m.exec(template);
  if (!block) throw new Error('the gateway template has no "# tls:begin … # tls:end" block after its listen line');
  const lines = block[2]!.split('\n').filter(Boolean).map((line) => {
    const directive = line.replace(/^( *)# /, '$1');
    if (directive === line) throw new Error(`a line of the template's TLS block is not a commented directive: ${line}`);
    return directive
      .replace(/listen 443 ssl;/, `listen 127.0.0.1:${port} ssl;`)
      .replace(/(ssl_certificate +)\S+;/, `$1${tls.certificate};`)
      .replace(/(ssl_certificate_key +)\S+;/, `$1${tls.key};`);
  });
  if (!lines.some((l) => l.includes(`listen 127.0.0.1:${port} ssl;`))) throw new Error('the TLS block has no "listen 443 ssl;"');
  return template.replace(block[0], `${lines.join('\n')}\n`);
}

/** A self-signed certificate for localhost and 127.0.0.1 (Debian's openssl), in `dir`. */
export function selfSignedCertificate(dir: string): TlsFiles {
  const files = { certificate: path.join(dir, 'cert.pem'), key: path.join(dir, 'key.pem') };
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', files.key, '-out', files.certificate], { stdio: 'pipe' });
  return files;
}

/**
 * nginx with the shipped gateway template in front of `oauthServer` and `schedulingApi`
 * (host:port); with `tls`, its TLS lines on `port` (a free one otherwise).
 */
export async function startNginx(upstreams: { oauthServer: string; schedulingApi: string }, { tls, port: wanted }: { tls?: TlsFiles; port?: number } = {}): Promise<RunningNginx> {
  if (!fs.existsSync(NGINX)) throw new Error(`no nginx at ${NGINX}: apt-get install nginx (the CI runs this test, see .ci/run)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-nginx-'));
  const port = wanted ?? (await freePort());
  const gateway = path.join(dir, 'gateway.conf');
  const template = fs.readFileSync(GATEWAY_TEMPLATE, 'utf8');
  fs.writeFileSync(
    gateway,
    renderTemplate(tls ? withTls(template, port, tls) : template, { GATEWAY_LISTEN: `127.0.0.1:${port}`, OAUTH_SERVER: upstreams.oauthServer, SCHEDULING_API: upstreams.schedulingApi }),
  );
  const conf = path.join(dir, 'nginx.conf');
  fs.writeFileSync(conf, mainConf(dir, gateway));
  const errorLog = () => (fs.existsSync(path.join(dir, 'error.log')) ? fs.readFileSync(path.join(dir, 'error.log'), 'utf8') : '');

  // -e: the log for messages before the configuration is read (the compiled-in one is under /var/log).
  const child = spawn(NGINX, ['-p', dir, '-c', conf, '-e', path.join(dir, 'error.log')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  child.on('error', (error) => (output += `${error.message}\n`));
  try {
    await waitForPort(port, child, () => `${output}\n${errorLog()}`);
  } catch (error) {
    child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    dir,
    errorLog,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGQUIT'); // graceful: workers finish their requests
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
