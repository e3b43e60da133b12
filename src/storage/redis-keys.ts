// Key names of the Redis artifact storage, shared by the adapter and the client sweep.
export const DEFAULT_REDIS_PREFIX = 'oauth:';

/** The set of every artifact key issued to a client. */
export function clientIndexKey(prefix: string, clientId: string): string {
  return `${prefix}client:${clientId}`;
}
