// Plain words for the library's refusals that people meet while trying the flow, in the one
// error_description each answer carries (RFC 6749 5.2 and 4.1.2.1: a human-readable text beside the
// unchanged error code). Only what the client already knows is said: its own code expired or was
// used; a code it was never given reads like an unknown one.
import type { KoaContextWithOIDC } from 'oidc-provider';
import { codeRefusalOf, PUSHED_REQUEST_TTL, type CodeRefusal } from '../seams/oidc-provider.ts';
import { ArtifactAlreadyConsumed } from '../storage/artifact-errors.ts';
import { POLICY } from '../settings.ts';
import { heldForReview, scopesOf } from '../directory/facts.ts';
import { profileRefusal } from './high-trust.ts';

const AGAIN = 'start the authorization again for a new code';

// The code lifetime is read from the settings table, as provider.ts reads it (it imports this module).
const AUTHORIZATION_CODE_TTL = POLICY.AUTHORIZATION_CODE_TTL.value;

export const codeRefusalText = (refusal: CodeRefusal): string => ({
  expired: `the authorization code expired (codes are valid for ${AUTHORIZATION_CODE_TTL} seconds): ${AGAIN}`,
  used: `the authorization code was already used (a code works once; the tokens issued for it are revoked): ${AGAIN}`,
  unknown: `the authorization code is not valid (unknown, expired, or already used; codes are valid for ${AUTHORIZATION_CODE_TTL} seconds, once): ${AGAIN}`,
  redirect_uri: 'redirect_uri must be the same as in the authorization request that produced this code',
  pkce: 'the code_verifier does not match the code_challenge of the authorization request',
})[refusal];

/** grant.error listener: the token endpoint's invalid_grant for a code, in words. */
export function describeCodeRefusal(ctx: KoaContextWithOIDC, err: Error & { error?: string }): void {
  if (err.error !== 'invalid_grant' || ctx.oidc?.params?.grant_type !== 'authorization_code') return;
  const body = ctx.body as Record<string, unknown> | undefined;
  if (!body || typeof body !== 'object' || body.error !== 'invalid_grant') return;
  const refusal = err instanceof ArtifactAlreadyConsumed ? 'used' : codeRefusalOf(err);
  if (refusal) body.error_description = codeRefusalText(refusal);
}

/** What the library says when response_type is absent: it checks response_mode first. */
const MISLEADING_RESPONSE_MODE = 'requested response_mode is not allowed for this client or request';
export const MISSING_RESPONSE_TYPE = 'the response_type parameter is missing: this server supports response_type=code';

/** What the library says of a scope outside the client's (it checks before our extraParams.scope). */
const SCOPE_NOT_ALLOWED = 'requested scope is not allowed';
/** An approved agent's scopes that its document asks for but no administrator approved (src/cimd/approval.ts). */
const HELD_FOR_REVIEW = 'an administrator has not yet reviewed these scopes for this app: it may ask only for what was approved';

/** The scopes asked for beyond the client's, when each is one an approval has not covered yet; else none. */
function heldScopesAsked(params: { scope?: unknown } | undefined, client: object | undefined): string[] {
  const asked = typeof params?.scope === 'string' ? params.scope.split(' ').filter(Boolean) : [];
  const own = new Set(scopesOf(client));
  const beyond = asked.filter((s) => !own.has(s));
  const held = heldForReview(client, beyond);
  return held.length === beyond.length ? held : [];
}

/** The library's refusal of a front-channel request from a client that must push its requests (RFC 9126 5). */
const PAR_REQUIRED = 'Pushed Authorization Request must be used';
export const PAR_REQUIRED_TEXT = 'this client must use pushed authorization requests (RFC 9126): POST the request to the pushed_authorization_request_endpoint first, then send only client_id and the request_uri it answers';
/** The library's (and our adapters', RequestUriAlreadyUsed) refusal of a request_uri. */
const REQUEST_URI_REFUSED = 'request_uri is invalid, expired, or was already used';
export const REQUEST_URI_TEXT = `the request_uri is unknown, expired (a pushed request may be used for ${PUSHED_REQUEST_TTL} seconds) or already used (each works once): push the request again`;

/** The authorization endpoint's refusal, reworded where the library's words mislead; else as given. */
export function plainAuthorizationError(description: string, params: { response_type?: unknown; scope?: unknown } | undefined, client?: object): string {
  if (description === MISLEADING_RESPONSE_MODE && !params?.response_type) return MISSING_RESPONSE_TYPE;
  // A high-trust client is told what its profile asks for (high-trust.ts).
  const ofProfile = profileRefusal(description, client);
  if (ofProfile !== description) return ofProfile;
  if (description === PAR_REQUIRED) return PAR_REQUIRED_TEXT;
  if (description === REQUEST_URI_REFUSED) return REQUEST_URI_TEXT;
  // Told why, as an unreviewed agent asking beyond its tier is (src/oauth/provider.ts, extraParams.scope).
  const held = description === SCOPE_NOT_ALLOWED ? heldScopesAsked(params, client) : [];
  if (held.length) return `${HELD_FOR_REVIEW} (${held.join(' ')})`;
  return description;
}

/**
 * Provider step: a refusal redirected to the client (RFC 6749 4.1.2.1) carries the plain
 * description in its Location; the error page (renderError) uses plainAuthorizationError itself.
 */
export async function plainAuthorizationRedirects(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
  await next();
  // The resume too: a pushed request is spent when the authorization ends (RFC 9126; storage/artifact-errors.ts).
  if ((ctx.oidc?.route !== 'authorization' && ctx.oidc?.route !== 'resume') || ctx.status < 300 || ctx.status >= 400) return;
  const location = ctx.response.get('Location');
  if (!location) return;
  let url: URL;
  try {
    url = new URL(location);
  } catch {
    return;
  }
  const description = url.searchParams.get('error_description');
  if (!url.searchParams.get('error') || description === null) return;
  const plain = plainAuthorizationError(description, ctx.oidc.params, ctx.oidc.client);
  if (plain === description) return;
  url.searchParams.set('error_description', plain);
  ctx.redirect(url.href);
}
