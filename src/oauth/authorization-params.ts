// Bounds on the authorization request's parameters. The provider keeps them with the request (the
// Interaction, an hour) while the user signs in and consents, so anyone who knows a client id and
// one of its redirect URIs could otherwise store whatever fits in a URL or a form. Checked inside
// the provider (extraParams, src/oauth/provider.ts), after it verified the client and the
// redirect_uri: the refusal goes to that redirect URI as RFC 6749 4.1.2.1 wants, and when either
// is not valid, the error page shows it instead (the library's own error handling).
import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import { POLICY } from '../settings.ts';

/** `state`: opaque to us, and some clients carry a little of their own state in it. */
export const MAX_STATE_LENGTH = POLICY.MAX_STATE_LENGTH.value;
/** Every other parameter: a scope list, a login hint, a nonce, a PKCE challenge … */
export const MAX_PARAM_LENGTH = POLICY.MAX_PARAM_LENGTH.value;

/**
 * The parameters the provider reads at the authorization endpoint (its PARAM_LIST) other than
 * client_id and redirect_uri, which must match the registry before this runs, and scope, which
 * its own validator bounds (src/oauth/provider.ts).
 */
const BOUNDED = [
  'acr_values',
  'claims_locales',
  'code_challenge',
  'code_challenge_method',
  'display',
  'id_token_hint',
  'login_hint',
  'max_age',
  'nonce',
  'prompt',
  'registration',
  'request',
  'request_uri',
  'response_mode',
  'response_type',
  'state',
  'ui_locales',
] as const;

/** Refuses a parameter longer than its bound with invalid_request; nothing when it is within. */
export function checkLength(ctx: KoaContextWithOIDC, name: string, value: unknown): void {
  const max = name === 'state' ? MAX_STATE_LENGTH : MAX_PARAM_LENGTH;
  if (typeof value !== 'string' || value.length <= max) return;
  // A refused state is not echoed: it would make the redirect as long as what was refused.
  if (name === 'state') ctx.oidc.params!.state = undefined;
  throw new errors.InvalidRequest(`the ${name} parameter must be at most ${max} characters`);
}

type Validator = (ctx: KoaContextWithOIDC, value: string | undefined) => void;

/** The provider's extraParams validators for the bounded parameters. */
export const boundedParams: Record<string, Validator> = Object.fromEntries(BOUNDED.map((name) => [name, (ctx: KoaContextWithOIDC, value: string | undefined) => checkLength(ctx, name, value)]));
