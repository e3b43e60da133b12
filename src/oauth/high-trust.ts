// The high-trust profile (FAPI 2.0 Security Profile, docs/security.md#the-high-trust-profile), per
// client: what the provider view cannot say by itself. The view (src/directory/view.ts) already
// requires pushed requests, DPoP proofs and private_key_jwt of a client marked `high_trust`; this
// adds PKCE for it, an assertion's audience the issuer alone, and refusals that name what the
// profile asks for. Codes live 60 s and responses carry `iss` (RFC 9207) for every client.
import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import { factsOf } from '../directory/facts.ts';
import { refusalCause } from '../seams/oidc-provider.ts';

/** Whether the client the provider found is held to the high-trust profile. */
export const isHighTrust = (client: object | undefined): boolean => factsOf(client).high_trust === true;

/** The library's features.fapi.profile: FAPI 2.0 for a high-trust client, none for the others. */
export const fapiProfile = (_ctx: unknown, client: object | undefined): '2.0' | undefined => (isHighTrust(client) ? '2.0' : undefined);

const PROFILE = 'this client is held to the high-trust profile (FAPI 2.0 Security Profile)';

// The library's own refusal of a client assertion (401 invalid_client); not in its published types.
const InvalidClientAuth = (errors as unknown as { InvalidClientAuth: new (detail: string) => Error }).InvalidClientAuth;

/**
 * FAPI 2.0 5.3.2.1: a high-trust client's assertion names the issuer as its audience, as a
 * string, and nothing else (the library also takes the token endpoint's URL, or a list).
 */
export function checkAssertionAudience(claims: { aud?: unknown }, client: object | undefined, issuer: string): void {
  if (isHighTrust(client) && claims.aud !== issuer) throw new InvalidClientAuth(`${PROFILE}: the client_assertion's aud must be the issuer identifier ${issuer}, as a string`);
}

/**
 * The library's refusals of what the profile asks for, and what the client is told instead: each
 * names the missing part. Only for a high-trust client: another one meets the same refusals only
 * through its own settings, whose words (error-descriptions.ts) stay.
 */
const PROFILE_REFUSALS: Record<string, string> = {
  'Pushed Authorization Request must be used': `${PROFILE}: its authorization requests must be pushed first (PAR, RFC 9126): POST the request to the pushed_authorization_request_endpoint, then send only client_id and the request_uri it answers`,
  'Authorization Server policy requires PKCE to be used for this request': `${PROFILE}: its authorization requests need PKCE: a code_challenge with code_challenge_method=S256`,
  'DPoP proof JWT not provided': `${PROFILE}: its token requests need a DPoP proof (RFC 9449): a DPoP header signed by the key its tokens are bound to`,
  'the provided authentication mechanism does not match the registered client authentication method': `${PROFILE}: it authenticates with private_key_jwt only: a client_assertion signed by one of its registered keys`,
};

/** A refusal's description as a high-trust client is told it; any other unchanged. */
export function profileRefusal(description: string, client: object | undefined): string {
  return (isHighTrust(client) && PROFILE_REFUSALS[description]) || description;
}

/** PKCE (S256, the library's only method) for public clients, as before, and for high-trust ones. */
export const pkceRequired = (_ctx: unknown, client: { clientAuthMethod?: string }): boolean => client.clientAuthMethod === 'none' || isHighTrust(client);

/** The provider's error events of the endpoints a client authenticates at (its JSON refusals). */
export const CLIENT_ENDPOINT_ERRORS = ['grant.error', 'pushed_authorization_request.error', 'introspection.error', 'revocation.error'] as const;

/**
 * Listener of CLIENT_ENDPOINT_ERRORS: a refusal to a high-trust client says what the profile asks
 * for, in the answer's error_description (the library sends a failed authentication's or grant's
 * cause to nobody: refusalCause reads it); its error code stays the library's. The
 * authorization endpoint's refusals go through error-descriptions.ts.
 */
export function nameProfileRefusal(ctx: KoaContextWithOIDC, err: Error): void {
  const client = ctx.oidc?.client;
  if (!isHighTrust(client)) return;
  const body = ctx.body as { error?: unknown; error_description?: unknown } | undefined;
  if (!body || typeof body !== 'object' || typeof body.error !== 'string') return;
  const cause = refusalCause(err);
  // Our own refusals (checkAssertionAudience) already say it; the library's are looked up.
  const named = cause.startsWith(PROFILE) ? cause : PROFILE_REFUSALS[cause];
  if (named) body.error_description = named;
}
