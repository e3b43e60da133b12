// The client id a token, revocation or introspection request names, read before the provider
// (which reads its credentials again itself): what the token endpoints' limits count by.
// RFC 6749 2.3.1: HTTP Basic, whose user and password are each form-urlencoded, or else
// client_id in the body; RFC 7523 3: or only a client assertion's subject.

const formDecode = (value: string) => decodeURIComponent(value.replace(/\+/g, ' '));

/**
 * The client id a request names in any form, unverified: HTTP Basic's user, `client_id`, or else a
 * client assertion's subject. Ids of every kind of client count (registry ids, metadata-document
 * URLs, registered clients' ids): the limits key counters by them, digested to a fixed size
 * (rate-limits.ts).
 */
export function namedClientId(authorization: string, params: Record<string, unknown> | undefined): string | undefined {
  const basic = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(authorization);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    try {
      return formDecode(colon < 0 ? decoded : decoded.slice(0, colon)) || undefined;
    } catch {
      return undefined;
    }
  }
  const { client_id: id, client_assertion: assertion } = params ?? {};
  if (typeof id === 'string' && id) return id;
  return typeof assertion === 'string' ? assertionSubject(assertion) : undefined;
}

/** A JWT's `sub`, read without verifying anything (the provider verifies the assertion). */
function assertionSubject(jwt: string): string | undefined {
  try {
    const { sub } = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof sub === 'string' && sub ? sub : undefined;
  } catch {
    return undefined;
  }
}
