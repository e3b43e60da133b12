// The one rule of refused-early credentials (format.ts refusedAs) where the token stores are read:
// every lookup of an access token, refresh token or code — the gateway check, /v2/me,
// introspection, revocation, the token endpoint, the fast paths — goes through an adapter's find()
// or the fast refresh's one-step read (src/storage/artifacts.ts). A value that carries our prefix
// but is not a whole credential of the model's kind is "not found" there, before any store is asked.
import type { Adapter } from 'oidc-provider';
import { kindOfModel, refusedAs } from './format.ts';

/** The adapter of `model`, whose find() answers a refused value without reading (other models unchanged). */
export function refusingMalformed<A extends Adapter>(model: string, adapter: A): A {
  const kind = kindOfModel(model);
  if (!kind) return adapter;
  const find = adapter.find.bind(adapter);
  adapter.find = async (id: string) => (refusedAs(kind, id) ? undefined : find(id));
  return adapter;
}
