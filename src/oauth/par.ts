// Pushed authorization requests (RFC 9126, docs/par.md): what this server adds to the library's
// feature. The library stores a pushed request as an unsigned JWT of its parameters, issued by the
// pushing client, and at the authorization endpoint refuses one pushed by another client as an
// invalid request object ("request client_id must equal the one in request parameters"): words
// about a request object the client never sent. Here a request_uri is found only by the client
// that pushed it: another client naming it gets what an unknown one gets, invalid_request_uri,
// and nothing is spent.
import Provider from 'oidc-provider';
import { pushedRequestClientId } from '../seams/oidc-provider.ts';

/** The authorization endpoint finds a pushed request only for the client that pushed it. */
export function requestUrisOfTheirClients(provider: Provider): void {
  const model = provider.PushedAuthorizationRequest;
  const find = model.find;
  if (typeof find !== 'function') throw new Error("oidc-provider's PushedAuthorizationRequest no longer has find: review src/oauth/par.ts");
  model.find = async function findOfThisClient(this: typeof model, id: string, options?: object) {
    const found = (await find.call(this, id, options)) as InstanceType<typeof model> | undefined;
    // The request's own context (Provider.ctx): the authorization endpoint has found the client by now.
    const oidc = Provider.ctx?.oidc;
    if (!found || oidc?.route !== 'authorization' || !oidc.client) return found;
    return pushedRequestClientId(found.request) === oidc.client.clientId ? found : undefined;
  } as typeof model.find;
}
