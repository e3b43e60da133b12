// A real 3-master Redis Cluster on loopback for the scale-out tests: redis-server in cluster mode
// on free ports, joined with `redis-cli --cluster create`. Nodes keep an append-only file, synced
// on every write, so a master killed right after a write comes back with it (with the default
// once a second, a code written just before the kill was sometimes lost: a flaky outage test).
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { eventually } from '../support/eventually.ts';

const run = promisify(execFile);

async function isFree(port: number): Promise<boolean> {
  const server = net.createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A port whose cluster bus port (port + 10000) is free too. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 30000);
    if ((await isFree(port)) && (await isFree(port + 10000))) return port;
  }
}

export interface RedisClusterNode {
  port: number;
  dir: string;
  process?: ChildProcess;
}

export interface TestRedisCluster {
  nodes: RedisClusterNode[];
  /** For REDIS_CLUSTER_NODES. */
  env: string;
  kill(node: RedisClusterNode): Promise<void>;
  restart(node: RedisClusterNode): Promise<void>;
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  /** The master serving a key. */
  nodeFor(key: string): Promise<RedisClusterNode>;
  stop(): Promise<void>;
}

function startNode(node: RedisClusterNode): void {
  node.process = spawn(
    'redis-server',
    ['--port', String(node.port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000', '--dir', node.dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--protected-mode', 'no'],
    { stdio: 'ignore' },
  );
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args]);
  return stdout;
}

async function waitForPing(port: number): Promise<void> {
  await eventually(async () => {
    if ((await cli(port, 'ping').catch(() => '')).trim() !== 'PONG') throw new Error(`redis-server on ${port} did not start`);
  }, { timeout: 10_000, interval: 100 });
}

export async function startRedisCluster(): Promise<TestRedisCluster> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-redis-cluster-'));
  const nodes: RedisClusterNode[] = [];
  for (let i = 0; i < 3; i++) {
    const dir = path.join(base, `node${i}`);
    fs.mkdirSync(dir);
    nodes.push({ port: await freePort(), dir });
  }
  nodes.forEach(startNode);
  await Promise.all(nodes.map((n) => waitForPing(n.port)));
  await run('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes']);

  const cluster: TestRedisCluster = {
    nodes,
    env: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    async kill(node) {
      const exited = new Promise((r) => node.process?.once('exit', r));
      node.process?.kill('SIGKILL');
      await exited;
    },
    async restart(node) {
      startNode(node);
      await waitForPing(node.port);
    },
    async waitUntilHealthy(timeoutMs = 20_000) {
      await eventually(async () => {
        const infos = await Promise.all(nodes.map((n) => cli(n.port, 'cluster', 'info').catch(() => '')));
        if (!infos.every((info) => info.includes('cluster_state:ok'))) throw new Error('the Redis cluster did not become healthy');
      }, { timeout: timeoutMs, interval: 200 });
    },
    async nodeFor(key) {
      const slot = Number((await cli(nodes[0]!.port, 'cluster', 'keyslot', key)).trim());
      const shards = (await cli(nodes[0]!.port, 'cluster', 'nodes')).trim().split('\n');
      for (const line of shards) {
        const [, address, , , , , , , ...ranges] = line.split(' ');
        const port = Number(address!.split('@')[0]!.split(':')[1]);
        for (const range of ranges) {
          const [from, to = from] = range.split('-').map(Number);
          if (slot >= from! && slot <= to!) return nodes.find((n) => n.port === port)!;
        }
      }
      throw new Error(`no node serves slot ${slot}`);
    },
    async stop() {
      await Promise.all(nodes.map((n) => (n.process?.exitCode === null ? cluster.kill(n) : undefined)));
      fs.rmSync(base, { recursive: true, force: true });
    },
  };
  await cluster.waitUntilHealthy();
  return cluster;
}
