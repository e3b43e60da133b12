// oidc-provider turns a client record into a Client by validating every property against its
// schema, the costliest step of a token request after the stores. It keeps what it built in an
// LRU keyed by a hash of the record, which costs two things here:
// - it keeps the last 100: with more clients in use, token requests kept rebuilding them (many
//   registered clients ran the token endpoint slower than a few: docs/benchmark.md). The library has no
//   setting for the size: a larger LRU of the library's own kind is swapped in.
// - every Client.find serializes and hashes the whole record to look it up, and under many
//   clients the LRU churns (docs/benchmark.md, scale). Our records are made once per cached
//   record (clientView), so the built Client is kept by that object: an unchanged record finds its
//   Client without either. A changed record is a new object, built anew by the library, as before;
//   a record read past the cache (its change feed down) is a new object each time and takes the
//   library's own way.
import type Provider from 'oidc-provider';
import { enlargeBuiltClientCache } from '../seams/oidc-provider.ts';
import { POLICY } from '../settings.ts';

/** How many built clients the library keeps (a few KiB each). */
export const BUILT_CLIENTS_KEPT = POLICY.BUILT_CLIENTS_KEPT.value;

type Client = NonNullable<Awaited<ReturnType<Provider['Client']['find']>>>;

/** `recordOf`: the record the provider's adapter would read, the same object while it is unchanged. */
export function keepBuiltClients(provider: Provider, recordOf: (clientId: string) => Promise<object | undefined>): void {
  enlargeBuiltClientCache(provider, BUILT_CLIENTS_KEPT);

  const model = provider.Client;
  const find = model.find.bind(model);
  const builtFor = new WeakMap<object, Client>();
  model.find = async (id: string) => {
    const record = typeof id === 'string' ? await recordOf(id) : undefined;
    if (!record) return find(id);
    let client = builtFor.get(record);
    if (!client) {
      // The library reads the record again (from the same cache) and builds or finds its Client.
      client = await find(id);
      if (client) builtFor.set(record, client);
    }
    return client;
  };
}
