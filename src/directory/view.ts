// The provider's view of a client of any kind, built here once: the registry's
// (src/oauth/client-adapter.ts), a metadata document's (src/cimd/clients.ts) and a registered
// one's (src/registration/registration.ts) differ only in what they pass in. What every kind shares — the
// code flow's response types and modes, its grants, the native-app rule, the secret placeholder —
// is said here; each kind's facts (src/directory/facts.ts) are its own.
import { createHmac, randomBytes } from 'node:crypto';
import type { AdapterPayload } from 'oidc-provider';
import { isNativeRedirect } from '../http/loopback.ts';
import type { ClientFacts } from './facts.ts';

// The schema requires a client_secret for secret-based auth methods, but we keep only hashes.
// This placeholder is unguessable and never accepted: compareClientSecret checks the hashes.
const placeholderKey = randomBytes(32);
const placeholderSecret = (clientId: string) => createHmac('sha256', placeholderKey).update(clientId).digest('base64url');

export type AuthMethod = 'client_secret_basic' | 'none' | 'private_key_jwt';

export interface ViewSource {
  clientId: string;
  /** Its name as the consent page shows it; a registration's is in `registered`. */
  name?: string | undefined;
  /** The redirect URIs it may use now (an approval may hold some back: src/cimd/approval.ts). */
  redirectUris: readonly string[];
  authMethod: AuthMethod;
  /** `code`: it obtains tokens by the code flow; `none`: a resource server, which only introspects. */
  flow: 'code' | 'none';
  /**
   * The standard metadata a registration (RFC 7591) stated, as the provider validated it: its
   * grant and response types and application type stand as registered.
   */
  registered?: Record<string, unknown> | undefined;
  /**
   * Held to the high-trust profile (FAPI 2.0 Security Profile; docs/security.md#the-high-trust-profile):
   * an operator's or owner's mark on a registry client, an administrator's on another kind.
   */
  highTrust?: boolean | undefined;
}

/** Why a client held to the high-trust profile cannot be used as it stands (its document or registration fell short). */
export class HighTrustUnmet extends Error {}

/** What a kind adds: its facts, its scope, and standard fields of its own (a jwks_uri, approved links). */
export type ViewExtras = ClientFacts & { scope?: string } & AdapterPayload;

/** The provider's view of a client: the shared part from `source`, then the kind's `extras`. */
export function providerView(source: ViewSource, extras: ViewExtras): AdapterPayload {
  const { clientId, authMethod } = source;
  return {
    ...standardMetadata(source),
    client_id: clientId,
    redirect_uris: [...source.redirectUris],
    // Only the query response mode (RFC 6749): no fragment, no auto-submitting form_post page.
    ...(source.flow === 'code' ? { response_modes: ['query'] } : {}),
    token_endpoint_auth_method: authMethod,
    ...(authMethod === 'client_secret_basic' ? { client_secret: placeholderSecret(clientId) } : {}),
    ...extras,
    ...(source.highTrust ? highTrustProfile(source) : {}),
  };
}

/**
 * What the high-trust profile asks of a client, over whatever its own settings say: every
 * authorization request pushed (RFC 9126), every token request with a DPoP proof (RFC 9449 5.2),
 * and keys (private_key_jwt). PKCE, the assertion's audience and the refusals' words hang on
 * `high_trust` (src/oauth/high-trust.ts); codes live 60 s for every client.
 */
function highTrustProfile({ authMethod, flow }: ViewSource): AdapterPayload {
  if (flow !== 'code') throw new HighTrustUnmet('a resource server obtains no tokens: the high-trust profile is not for it');
  if (authMethod !== 'private_key_jwt') throw new HighTrustUnmet(`this client is held to the high-trust profile (FAPI 2.0), which needs private_key_jwt client authentication, and it uses ${authMethod}`);
  return { high_trust: true, require_pushed_authorization_requests: true, dpop_bound_access_tokens: true };
}

function standardMetadata({ name, redirectUris, authMethod, flow, registered }: ViewSource): AdapterPayload {
  if (registered) return registered;
  if (flow === 'none') return { client_name: name, response_types: [], grant_types: [] };
  return {
    client_name: name,
    response_types: ['code'],
    grant_types: ['authorization_code', 'refresh_token'],
    // A public client with a loopback or private-use redirect is a native app (RFC 8252): the
    // provider then accepts its loopback redirect on any port (7.3). Everything else matches exactly.
    application_type: authMethod === 'none' && redirectUris.some(isNativeRedirect) ? 'native' : 'web',
  };
}
