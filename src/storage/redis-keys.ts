// Key names of the Redis artifact storage, shared by the adapter and the client sweep.
import { artifactKey } from './artifact-key.ts';

export const DEFAULT_REDIS_PREFIX = 'oauth:';

/** An artifact's key: its model and the hash of its id (src/storage/artifact-key.ts). */
export const artifactKeyOf = (prefix: string, model: string, id: string) => `${prefix}${model}:${artifactKey(id)}`;
/** The set of a model's artifacts issued from one grant. */
export const grantIndexKey = (prefix: string, model: string, grantId: string) => `${prefix}${model}:grant:${grantId}`;

/** The set of every artifact key issued to a client. */
export function clientIndexKey(prefix: string, clientId: string): string {
  return `${prefix}client:${clientId}`;
}

/** Set when a client secret is revoked, so that every instance refuses it at once (src/oauth/client-secrets.ts). */
export function revokedSecretKey(prefix: string, secretId: number): string {
  return `${prefix}secret-revoked:${secretId}`;
}
