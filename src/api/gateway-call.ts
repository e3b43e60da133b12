// Which call a gateway asks the check about. Gateways name it in one of three ways:
//   - headers X-Forwarded-Method / X-Forwarded-Uri (Traefik ForwardAuth),
//   - headers X-Original-Method / X-Original-URI (our nginx recipe, most nginx guides, ingress-nginx),
//   - the request itself (Envoy ext_authz): its own method, the original path and query appended
//     to the check path, `/v2/auth/check/v2/bookings/1?x=y`.
// Whatever the spelling, the URI is the call's path as sent and is judged by the same route
// policy. Spellings that disagree are refused: a gateway sets one of them, and a client that
// adds another must not get a second opinion (ingress-nginx, for one, passes the client's
// headers on to the check).
import type { Context } from 'koa';
import { CHECK_PATH } from '../http/paths.ts';

export interface NamedCall {
  method: string;
  uri: string;
}

const METHOD_HEADERS = ['X-Forwarded-Method', 'X-Original-Method'];
const URI_HEADERS = ['X-Forwarded-Uri', 'X-Original-URI'];

/** The one value these sources agree on, undefined when none is given, or a refusal naming the two that disagree. */
function agreed(sources: Array<[name: string, value: string]>): string | undefined | { conflict: string } {
  const given = sources.filter(([, value]) => value !== '');
  const other = given.find(([, value]) => value !== given[0]![1]);
  if (other) return { conflict: `${given[0]![0]} and ${other[0]} name different calls` };
  return given[0]?.[1];
}

/** The call this check request names, or why it names none or two. */
export function namedCall(ctx: Context): NamedCall | string {
  // The Envoy form: everything after the check path, raw (as Koa leaves ctx.path), with the query.
  const inPath = ctx.path.startsWith(`${CHECK_PATH}/`);
  const pathSource = (value: string): Array<[string, string]> => (inPath ? [[`the path after ${CHECK_PATH}`, value]] : []);
  const method = agreed([...pathSource(ctx.method), ...METHOD_HEADERS.map((h): [string, string] => [h, ctx.get(h)])]);
  const uri = agreed([...pathSource(ctx.path.slice(CHECK_PATH.length) + ctx.search), ...URI_HEADERS.map((h): [string, string] => [h, ctx.get(h)])]);
  if (typeof method === 'object') return method.conflict;
  if (typeof uri === 'object') return uri.conflict;
  if (!method || !uri) {
    return `X-Forwarded-Method and X-Forwarded-Uri (or X-Original-Method and X-Original-URI, or the path after ${CHECK_PATH}/) name the call to judge`;
  }
  return { method, uri };
}
