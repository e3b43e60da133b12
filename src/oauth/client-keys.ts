// private_key_jwt (RFC 7523; docs/private-key-jwt.md) for every kind of client that has keys: a
// registry client's (clients set-keys, the developer page), a metadata document's, a registered
// one's. The library verifies each assertion — signature by one of the client's keys, an
// asymmetric algorithm (CLIENT_AUTH_ALGS), iss and sub the client, aud this server, exp not past
// (clockTolerance), jti once across instances (ReplayDetection: src/oauth/dpop.ts singleUse) —
// and this adds what it leaves open: how long an assertion may live, and keys kept current at a
// jwks_uri (a rotation works at once, a removed key stops working).
import Provider, { errors } from 'oidc-provider';
import { keepClientKeysCurrent } from '../seams/oidc-provider.ts';
import { POLICY } from '../settings.ts';
import type { Clock } from '../clock.ts';

export { CLIENT_AUTH_ALGS } from '../clients/keys.ts';

export const CLIENT_ASSERTION_MAX_SECONDS = POLICY.CLIENT_ASSERTION_MAX_SECONDS.value;
export const JWKS_REFETCH_SECONDS = POLICY.JWKS_REFETCH_SECONDS.value;

// The library's own refusal of a client assertion (401 invalid_client); not in its published types.
const InvalidClientAuth = (errors as unknown as { InvalidClientAuth: new (detail: string) => Error }).InvalidClientAuth;

/**
 * A short-lived assertion (RFC 7523 3): its exp at most CLIENT_ASSERTION_MAX_SECONDS ahead. Its jti
 * is kept until exp, so one valid for a year would be kept, and replayable by its thief, a year.
 */
export function checkAssertionLifetime(payload: { exp?: unknown }, now = Math.floor(Date.now() / 1000)): void {
  if (typeof payload.exp === 'number' && payload.exp - now > CLIENT_ASSERTION_MAX_SECONDS) {
    throw new InvalidClientAuth(`the client_assertion must expire within ${CLIENT_ASSERTION_MAX_SECONDS} seconds`);
  }
}

/** Every built client with a jwks_uri keeps its keys current (src/seams/oidc-provider.ts keepClientKeysCurrent). */
export function keepJwksCurrent(provider: Provider, clock: Clock, refetchSeconds = JWKS_REFETCH_SECONDS): void {
  const model = provider.Client;
  const find = model.find.bind(model);
  model.find = async (id: string) => {
    const client = await find(id);
    if (client?.clientAuthMethod === 'private_key_jwt' && client.jwksUri) keepClientKeysCurrent(client, refetchSeconds, () => clock.now());
    return client;
  };
}
