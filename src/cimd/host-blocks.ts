// What a host block covers (docs/agents.md): a block names a domain and covers it and every name
// under it, on any port — `example.com` covers example.com:8443 and b.a.example.com — but nothing
// beside it: `a.example.com` does not cover example.com or b.example.com. A public suffix of the
// Public Suffix List (tldts, its private section included) is not a domain anyone owns, so it
// cannot be blocked: `github.io` would block every GitHub Pages site, and `user.github.io` covers
// user.github.io alone, never other.github.io. An IP address is blocked exactly, on any port.
import { parse } from 'tldts';
import { InputError } from '../errors.ts';

const PSL = { allowPrivateDomains: true } as const;

/** A URL's host name as blocks match it: lower-case, no port, no trailing dot (example.com. is example.com). */
export function hostnameOf(url: string): string {
  return new URL(url).hostname.toLowerCase().replace(/\.$/, '');
}

const isIpLiteral = (hostname: string) => hostname.startsWith('[') || /^\d+(\.\d+){3}$/.test(hostname);

/**
 * The site a host name belongs to: its registrable domain (eTLD+1 by the Public Suffix List), or
 * the address itself for an IP, or the name itself when it has none (a public suffix). Every block
 * covering a name lies within the name's site, so the blocks of one site are read together.
 */
export function siteOf(hostname: string): string {
  if (isIpLiteral(hostname)) return hostname;
  return parse(hostname, PSL).domain ?? hostname;
}

/** Whether the block `block` (as blockName gives it) covers the host name `hostname` (as hostnameOf gives it). */
export function covers(block: string, hostname: string): boolean {
  if (isIpLiteral(block)) return block === hostname;
  return hostname === block || hostname.endsWith(`.${block}`);
}

/**
 * What an operator's `hosts block VALUE` blocks: a DNS name or IP address, lower-case; a port, if
 * given, is dropped (a block covers every port). A public suffix or a name without one is refused.
 */
export function blockName(value: string): string {
  const text = value.trim().toLowerCase();
  const example = '(give it as in the client_id URL, e.g. agent.example.com; a block covers every port and every name under it)';
  let hostname: string | undefined;
  try {
    hostname = /^[a-z0-9.\-:[\]]+$/.test(text) ? new URL(`https://${text}/`).hostname : undefined;
  } catch {
    hostname = undefined;
  }
  if (!hostname) throw new InputError(`not a host name: "${value}" ${example}`);
  hostname = hostname.replace(/\.$/, '');
  if (isIpLiteral(hostname)) return hostname;
  const parsed = parse(hostname, PSL);
  if (!parsed.domain) throw new InputError(`"${hostname}" is a public suffix or not a full domain name: block a domain someone owns, e.g. agent.${hostname}`);
  return hostname;
}

/** A recorded host (`example.com:8443`, `[::1]:80`, or '' for a private-use scheme) as blocks match it. */
export const hostnameOfHost = (host: string) => (host ? hostnameOf(`https://${host}/`) : '');

/** What a block covers, in words (`hosts list`). */
export const coverage = (block: string) => (isIpLiteral(block) ? `${block} on any port` : `${block} and every name under it (*.${block}), on any port`);
