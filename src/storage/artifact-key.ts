// Provider artifacts (codes, tokens, sessions…) are stored under a hash of their id, and
// without the id in the payload: a dump of Redis or the database yields no usable token.
import { hash } from 'node:crypto';
import type { AdapterPayload } from 'oidc-provider';

export function artifactKey(id: string): string {
  return hash('sha256', id, 'base64url');
}

// Models found by a secondary key (Session by uid, DeviceCode by user code) must keep their
// id in the payload. A session id is only usable in a cookie signed with the cookie keys;
// the device flow is not enabled.
const KEEPS_ID = new Set(['Session', 'DeviceCode']);

export function toStored(model: string, payload: AdapterPayload): AdapterPayload {
  if (KEEPS_ID.has(model)) return payload;
  const { jti: _jti, ...rest } = payload;
  return rest;
}

export function fromStored(model: string, id: string, stored: AdapterPayload): AdapterPayload {
  return KEEPS_ID.has(model) ? stored : { ...stored, jti: id };
}

/**
 * Models whose artifacts can be spent exactly once (oidc-provider's "consumable" models, and the
 * pushed authorization request, whose request_uri works once: RFC 9126 4).
 */
export const CONSUMABLE = new Set(['AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest', 'PushedAuthorizationRequest']);
