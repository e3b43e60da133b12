// Response shapes of the /v2 resource API (docs/errors.md) and the RFC 6750 challenges, as answers
// that either transport writes (src/http/envelope.ts: Koa's reply, or the hot-path listener's send).
import { apiErrorAnswer, reply, type Answer } from '../http/envelope.ts';
import { DPOP_ALGS } from '../oauth/dpop.ts';

export { reply, type Answer };

export const dataAnswer = (data: unknown, headers: Record<string, string> = {}, status = 200): Answer => ({ status, headers, body: { status: 'success', data } });

export const errorAnswer = apiErrorAnswer;

const REALM = 'realm="api"';
const DPOP_ALGS_ATTRIBUTE = `algs="${DPOP_ALGS.join(' ')}"`;

/**
 * 401 with the RFC 6750 challenge; no `error` attribute when no token was sent (RFC 6750 3.1).
 * `resourceMetadata`: where a client finds how to get a token for this API (RFC 9728 5.1), last, so
 * the attributes before it read as they always did.
 */
export function rejectToken(tokenSent: boolean, message: string, resourceMetadata?: string): Answer {
  const discovery = resourceMetadata ? `, resource_metadata="${resourceMetadata}"` : '';
  const challenge = tokenSent ? `Bearer ${REALM}, error="invalid_token", error_description="${message}"${discovery}` : `Bearer ${REALM}${discovery}`;
  return errorAnswer(401, tokenSent ? 'invalid_token' : 'unauthorized', message, { 'WWW-Authenticate': challenge });
}

/** 400 for a malformed request, such as a token sent two ways (RFC 6750 3.1). */
export function rejectRequest(message: string): Answer {
  return errorAnswer(400, 'invalid_request', message, { 'WWW-Authenticate': `Bearer ${REALM}, error="invalid_request", error_description="${message}"` });
}

/** 403 for a token without the scope needed; in the DPoP scheme for a token that came as DPoP. */
export function rejectScope(needed: string, dpop = false): Answer {
  const challenge = dpop ? `DPoP ${DPOP_ALGS_ATTRIBUTE}, error="insufficient_scope", scope="${needed}"` : `Bearer ${REALM}, error="insufficient_scope", scope="${needed}"`;
  return errorAnswer(403, 'insufficient_scope', `this call needs the ${needed} scope`, { 'WWW-Authenticate': challenge });
}

/** 403 for a token bound to another organization or other teams: its scope is right, its reach is not. */
export function rejectBinding(message: string): Answer {
  return errorAnswer(403, 'access_denied', message, { 'WWW-Authenticate': `Bearer ${REALM}, error="access_denied", error_description="${message}"` });
}


/**
 * 401 with the DPoP challenge (RFC 9449 7.1): invalid_dpop_proof for the proof, invalid_token for
 * the token (a bound one sent as Bearer among them), use_dpop_nonce with the nonce to use.
 */
export function rejectProof(refusal: { dpop: string; message: string; nonce?: string }, resourceMetadata?: string): Answer {
  const discovery = resourceMetadata ? `, resource_metadata="${resourceMetadata}"` : '';
  const headers: Record<string, string> = { 'WWW-Authenticate': `DPoP ${DPOP_ALGS_ATTRIBUTE}, error="${refusal.dpop}", error_description="${refusal.message}"${discovery}` };
  if (refusal.nonce) headers['DPoP-Nonce'] = refusal.nonce;
  return errorAnswer(401, refusal.dpop, refusal.message, headers);
}
