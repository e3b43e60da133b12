// Key names of the Redis artifact storage, shared by the adapter and the client sweep.
export const DEFAULT_REDIS_PREFIX = 'oauth:';

/** The set of every artifact key issued to a client. */
export function clientIndexKey(prefix: string, clientId: string): string {
  return `${prefix}client:${clientId}`;
}

/** Set when a client secret is revoked, so that every instance refuses it at once (src/oauth/client-secrets.ts). */
export function revokedSecretKey(prefix: string, secretId: number): string {
  return `${prefix}secret-revoked:${secretId}`;
}
