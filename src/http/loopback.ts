// Development loopback: whether something on this machine's loopback is let in, decided here for
// every concern, each with its own setting named for what it allows (src/config.ts; README, settings):
//   webhooks            WEBHOOK_ALLOW_LOOPBACK        (src/webhooks/address-policy.ts)
//   metadata documents  CIMD_ALLOW_LOOPBACK           (src/cimd/: document URLs, every client's jwks_uri
//                                                      (src/clients/keys.ts): the provider's one fetch)
//   resource URIs       RESOURCE_URI_ALLOW_LOOPBACK   (src/clients/validate.ts)
//   redirect URIs       always: native apps receive their code on the loopback (RFC 8252 7.3), as
//                       do the consent page's links in development — REDIRECT_URI_LOOPBACK
// A request to this machine is a way into it: the settings are refused in production (config.ts).
import net from 'node:net';

/** Loopback hosts as a URL names them. */
const LOOPBACK_URL_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);
/** A metadata document URL names the address itself (docs/agents.md: http://127.0.0.1:…). */
export const LOOPBACK_ADDRESS_ONLY: ReadonlySet<string> = new Set(['127.0.0.1']);
/** Redirect URIs (and the consent page's links) may always be http on the loopback: RFC 8252. */
export const REDIRECT_URI_LOOPBACK = true;

const LOOPBACK_V4 = new net.BlockList();
LOOPBACK_V4.addSubnet('127.0.0.0', 8, 'ipv4');
/** 127.0.0.0/8 and ::1 only (not ::ffff:127.0.0.1, which the public rule refuses as a smuggled IPv4). */
export const isLoopbackAddress = (address: string) => (net.isIP(address) === 4 ? LOOPBACK_V4.check(address, 'ipv4') : address === '::1');
/** localhost and the names under it (RFC 6761 6.3). */
export const isLoopbackName = (host: string) => /(^|\.)localhost\.?$/i.test(host);

/**
 * Whether `target` is on this machine's loopback and the concern's own setting `allowed` lets it in.
 * A URL: http on one of `hosts` (localhost, 127.0.0.1, [::1] unless the concern names fewer). A
 * string: an address a connection would go to (127.0.0.0/8, ::1), or a name (localhost…).
 */
export function allowsLoopback(target: URL | string, allowed: boolean, hosts: ReadonlySet<string> = LOOPBACK_URL_HOSTS): boolean {
  if (!allowed) return false;
  if (target instanceof URL) return target.protocol === 'http:' && hosts.has(target.hostname);
  return net.isIP(target) ? isLoopbackAddress(target) : isLoopbackName(target);
}

/** A redirect only a native app can receive: loopback http or a private-use scheme (RFC 8252). */
export function isNativeRedirect(uri: string): boolean {
  const url = new URL(uri);
  return url.protocol === 'http:' ? allowsLoopback(url, REDIRECT_URI_LOOPBACK) : url.protocol !== 'https:';
}
