// In production with no trusted proxy, a request that carries X-Forwarded-Proto came through a
// proxy we ignore: client addresses (rate limits) and the scheme are then the proxy's. Said once,
// naming the setting, whichever listener saw the request first.
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../log.ts';

export type ProxyWarning = (headers: IncomingHttpHeaders) => void;

export function untrustedProxyWarning(log: Logger, { production, proxyHops }: { production: boolean; proxyHops: number }): ProxyWarning {
  let warned = !production || proxyHops > 0;
  return (headers) => {
    if (warned || !headers['x-forwarded-proto']) return;
    warned = true;
    log.warn('a request came with X-Forwarded-Proto but no proxy is trusted: set TRUST_PROXY to the number of proxies in front of this server');
  };
}

/**
 * The client's address as Koa gives it (ctx.ip with `proxy` and `maxIpsCount` set from TRUST_PROXY):
 * the X-Forwarded-For entry `proxyHops` from the right, else the connection's peer.
 */
export function clientAddress(headers: IncomingHttpHeaders, remoteAddress: string | undefined, proxyHops: number): string {
  const value = proxyHops > 0 ? headers['x-forwarded-for'] : undefined;
  const forwarded = Array.isArray(value) ? value.join(',') : value;
  const ips = forwarded ? forwarded.split(',').map((v) => v.trim()).slice(-proxyHops) : [];
  return ips[0] || remoteAddress || '';
}
