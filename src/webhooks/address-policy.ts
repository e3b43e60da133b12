// Where webhooks may go: public addresses only, in every mode. The server must never become a way
// into its own network (SSRF): a developer could otherwise point a webhook at the database or the
// cloud metadata address and read what answered. The rule is applied when a URL is set (to the
// name's addresses then) and again at every delivery, to the addresses the name resolves to at that
// moment, and the connection goes to the very address that was checked (no DNS rebinding in
// between). Production also requires https. For development, WEBHOOK_ALLOW_LOOPBACK=true lets
// webhooks reach this machine's loopback addresses (never private or link-local ones).
import dns from 'node:dns';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import { InputError } from '../errors.ts';
import { allowsLoopback, isLoopbackName } from '../http/loopback.ts';
import { POLICY } from '../settings.ts';

export const MAX_WEBHOOK_URL_LENGTH = POLICY.MAX_WEBHOOK_URL_LENGTH.value;

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Every address a name resolves to (dns.lookup by default; tests give their own). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

export interface AddressPolicy {
  /** NODE_ENV=production: https only. */
  production: boolean;
  /** The concern's loopback setting (src/http/loopback.ts): WEBHOOK_ALLOW_LOOPBACK for webhooks, CIMD_ALLOW_LOOPBACK for documents. 127.0.0.0/8, ::1 and localhost then. */
  allowLoopback?: boolean;
  resolve?: Resolver;
}

// Not reachable from the internet, or not meant to be: loopback, private, link-local, CGNAT,
// documentation, benchmarking, multicast, reserved, unspecified, and IPv6 forms that carry an
// IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) and could smuggle one of those in.
// Two lists: a BlockList also matches IPv4 addresses against its IPv6 rules (as ::ffff:a.b.c.d).
const NOT_PUBLIC_V4 = new net.BlockList();
const NOT_PUBLIC_V6 = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) NOT_PUBLIC_V4.addSubnet(prefix, bits, 'ipv4');
for (const [prefix, bits] of [
  ['::', 96], ['::ffff:0:0', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32],
  ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) NOT_PUBLIC_V6.addSubnet(prefix, bits, 'ipv6');
const GLOBAL_UNICAST_V6 = new net.BlockList();
GLOBAL_UNICAST_V6.addSubnet('2000::', 3, 'ipv6');

/** Whether an IP address is a public one a webhook may be sent to in production. */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return !NOT_PUBLIC_V4.check(address, 'ipv4');
  if (family === 6) {
    // An IPv4-mapped address (::ffff:10.0.0.1) is judged as the IPv4 address it carries, and refused anyway.
    if (/^::ffff:/i.test(address)) return false;
    return GLOBAL_UNICAST_V6.check(address, 'ipv6') && !NOT_PUBLIC_V6.check(address, 'ipv6');
  }
  return false;
}

/** Whether a webhook may connect to the address under the policy (loopback: src/http/loopback.ts). */
const allowedAddress = (address: string, policy: AddressPolicy) => isPublicAddress(address) || allowsLoopback(address, Boolean(policy.allowLoopback));
/** A local name (localhost…), refused unless the policy allows the loopback. */
const refusedName = (host: string, policy: AddressPolicy) => isLoopbackName(host) && !allowsLoopback(host, Boolean(policy.allowLoopback));

const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

const NOT_PUBLIC = 'the webhook URL must point to a public address, not a local or private one';

/**
 * The URL as stored, or a refusal that says why: at most MAX_WEBHOOK_URL_LENGTH characters, http(s)
 * (https in production), no user name or password, no fragment, no spaces or control characters,
 * not a local name nor a non-public address literal (loopback only with allowLoopback). Names are
 * checked by checkWebhookUrl, which resolves them.
 */
export function parseWebhookUrl(value: string, policy: AddressPolicy): URL {
  const { production } = policy;
  const text = value.trim();
  if (!text) throw new InputError('enter the webhook URL');
  if (text.length > MAX_WEBHOOK_URL_LENGTH) throw new InputError(`the webhook URL must be at most ${MAX_WEBHOOK_URL_LENGTH} characters long`);
  // The URL parser would silently drop tabs and newlines: refuse them rather than store something else.
  if (/[\s\x00-\x1f\x7f]/.test(text)) throw new InputError('the webhook URL must not contain spaces or control characters');
  if (text.includes('#')) throw new InputError('the webhook URL must not have a fragment (#…)');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InputError('the webhook URL must be an absolute URL such as https://app.example.com/webhooks');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InputError('the webhook URL must start with https://');
  if (production && url.protocol !== 'https:') throw new InputError('the webhook URL must use https');
  if (url.username || url.password) throw new InputError('the webhook URL must not contain a user name or password');
  if (!url.hostname) throw new InputError('the webhook URL must name a host');
  const host = hostOf(url);
  if (refusedName(host, policy)) throw new InputError(NOT_PUBLIC);
  if (net.isIP(host) && !allowedAddress(host, policy)) throw new InputError(NOT_PUBLIC);
  return url;
}

/** The addresses a delivery may connect to: every address of the name must be public, or none is used. */
export async function allowedAddresses(hostname: string, policy: AddressPolicy): Promise<ResolvedAddress[]> {
  const { resolve = systemResolver } = policy;
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = net.isIP(host);
  if (refusedName(host, policy)) throw new InputError(`${host} is a local name: webhooks go to public addresses only`);
  let addresses: ResolvedAddress[];
  if (literal) addresses = [{ address: host, family: literal }];
  else {
    try {
      addresses = await resolve(host);
    } catch {
      throw new InputError(`the host name ${host} does not resolve`);
    }
  }
  if (addresses.length === 0) throw new InputError(`the host name ${host} does not resolve`);
  if (addresses.some((a) => !allowedAddress(a.address, policy))) throw new InputError(`${host} resolves to a local or private address: webhooks go to public addresses only`);
  return addresses;
}

/** The full check when a URL is set: its form, then where its name leads now. */
export async function checkWebhookUrl(value: string, policy: AddressPolicy): Promise<URL> {
  const url = parseWebhookUrl(value, policy);
  await allowedAddresses(url.hostname, policy);
  return url;
}

/**
 * A `lookup` for http.request that answers only with checked addresses: the socket connects to
 * the address that passed the rule, whatever the name resolves to a moment later.
 */
export function checkedLookup(policy: AddressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    allowedAddresses(hostname, policy).then(
      (addresses) => {
        const usable = options.family ? addresses.filter((a) => a.family === options.family) : addresses;
        if (usable.length === 0) return callback(Object.assign(new Error(`no usable address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        if (options.all) return (callback as unknown as (err: null, addresses: ResolvedAddress[]) => void)(null, usable);
        callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: Error) => callback(Object.assign(err, { code: 'ENOTFOUND' }), '', 0),
    );
  };
}
