// A redis-server of a test's own, without persistence, on a free loopback port: the test can
// restart it (its data lost, as a replaced cache node's) without touching the shared Redis.
import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from './processes.ts';
import { eventually } from './eventually.ts';


export interface OwnRedis {
  url: string;
  /** Stops it (SIGKILL) and starts it again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function answersPing(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  client.on('error', () => {}); // refused while it starts: the answer is the ping's
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'], { stdio: 'ignore' });
    await eventually(async () => {
      if (!(await answersPing(url))) throw new Error(`redis-server on ${port} did not start`);
    }, { timeout: 10_000, interval: 50 });
  };
  const stop = async () => {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    await new Promise((done) => {
      running.once('exit', done);
      running.kill('SIGKILL');
    });
  };
  await start();
  return {
    url,
    async restart() {
      await stop();
      await start();
    },
    stop,
  };
}
