// The key a client's address counts under in every per-address limit (sign-in, token endpoints,
// credential revocation …). One IPv6 subscriber is usually handed a whole /64 (2^64 addresses):
// counted address by address, it would have a fresh counter for every request. So an IPv6
// address counts as its /64; an IPv4-mapped IPv6 address (::ffff:192.0.2.1, as a dual-stack
// socket reports IPv4 peers) counts as the IPv4 address it is.
import ipaddr from 'ipaddr.js';

/** The group `address` is counted under in per-address limits: IPv4 as it is, IPv6 as its /64. */
export function addressGroup(address: string): string {
  // IPv4 (or no address at all) has no colon: itself, without a parse (this runs on every token request).
  if (!address.includes(':')) return address;
  if (!ipaddr.isValid(address)) return address; // not an address (a test's made-up name, ''): itself
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const prefix = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${prefix.join(':')}::/64`;
}
