// The seam to ioredis's insides: a command that fails at once while the connection is down
// instead of queueing (the offline queue switched off once connected), and the commands of one
// request written to the socket together (src/storage/redis.ts).
import { Redis, type Cluster } from 'ioredis';
import type { UpstreamFile } from './upstream.ts';

export const UPSTREAM: readonly UpstreamFile[] = [
  { file: 'ioredis/built/Redis.js', sha256: '8621ee856520c5ab6e849f45faa103d540f81e0f28df0fd93f6bff5550bf4e92', what: 'sendCommand reads options.enableOfflineQueue on every command sent while not writable; a ready connection writes each command to this.stream at once' },
  { file: 'ioredis/built/cluster/index.js', sha256: '0fc47dc6ff405492df765aab69d7a5dc1c873060088d17ed2ddc927866673c21', what: 'a Cluster reads options.enableOfflineQueue the same way ("Cluster isn\'t ready")' },
];

/** From the first `ready` on, a command sent while the connection is not ready fails at once. */
export function failFastOnceConnected(client: Redis | Cluster): void {
  client.once('ready', () => {
    client.options.enableOfflineQueue = false;
  });
}

/**
 * Runs `issue`, which sends the commands one request needs side by side, with them written to
 * Redis together: one write and, as Redis answers a read's commands together, one read for their
 * replies, instead of one of each per command (enableAutoPipelining is off: src/storage/redis.ts).
 * Only commands sent before `issue` returns are included; on a Cluster, or before the connection
 * is ready (ioredis queues commands then), it just runs `issue`.
 */
export function inOneWrite<T>(client: Redis | Cluster, issue: () => T): T {
  if (!(client instanceof Redis) || client.status !== 'ready') return issue();
  client.stream.cork();
  try {
    return issue();
  } finally {
    client.stream.uncork();
  }
}
