// The client credentials a token endpoint request presents (RFC 6749 2.3.1): HTTP Basic, whose
// user and password are each form-urlencoded, or else client_id / client_secret in the body.
// Read before (limits) and beside (refresh grace) the provider, which reads them again itself.
// Only a client id of the registry's own form is claimed (isWellFormedClientId): anything else
// names no client, and must not become a key of ours (limiter counters, lookups) of its size.
import { isWellFormedClientId } from '../clients/secrets.ts';

export interface PresentedCredentials {
  clientId?: string;
  secret?: string;
}

const formDecode = (value: string) => decodeURIComponent(value.replace(/\+/g, ' '));

export function presentedCredentials(authorization: string, params: Record<string, unknown> | undefined): PresentedCredentials {
  const basic = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(authorization);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    try {
      const clientId = formDecode(colon < 0 ? decoded : decoded.slice(0, colon));
      return { ...(isWellFormedClientId(clientId) ? { clientId } : {}), ...(colon < 0 ? {} : { secret: formDecode(decoded.slice(colon + 1)) }) };
    } catch {
      return {};
    }
  }
  const { client_id: id, client_secret: secret } = params ?? {};
  return {
    ...(typeof id === 'string' && isWellFormedClientId(id) ? { clientId: id } : {}),
    ...(typeof secret === 'string' ? { secret } : {}),
  };
}

/** The client id a token endpoint request claims. */
export const claimedClientId = (authorization: string, params: Record<string, unknown> | undefined): string | undefined =>
  presentedCredentials(authorization, params).clientId;
