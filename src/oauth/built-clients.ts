/// <reference path="./oidc-provider-internals.d.ts" />
// oidc-provider turns a client record into a Client by validating every property against its
// schema, the costliest step of a token request after the stores, and keeps the last 100 it built
// (an LRU keyed by a hash of the record). With more clients than that in use, token requests kept
// rebuilding them: 10,000 registered clients ran the token endpoint at 0.85× the rate of 10
// (bench/BASELINE.md, scale). The library has no setting for the size: this swaps in a larger LRU
// of the library's own kind. A changed record hashes differently, so it is rebuilt, never stale.
import type Provider from 'oidc-provider';
import instance from 'oidc-provider/lib/helpers/weak_cache.js';
import LRU from 'oidc-provider/lib/helpers/lru.js';

/** How many built clients are kept (a few KiB each). */
export const BUILT_CLIENTS_KEPT = 10_000;

export function keepMoreBuiltClients(provider: Provider): void {
  const internals = instance(provider);
  if (!internals || !('dynamicClients' in internals)) {
    throw new Error('oidc-provider no longer keeps its built clients in dynamicClients: review src/oauth/built-clients.ts');
  }
  internals.dynamicClients = new LRU({ maxSize: BUILT_CLIENTS_KEPT });
}
