// Which call a gateway asks the check about. Gateways name it in one of three ways:
//   - headers X-Forwarded-Method / X-Forwarded-Uri (Traefik ForwardAuth),
//   - headers X-Original-Method / X-Original-URI (our nginx recipe, most nginx guides, ingress-nginx),
//   - the request itself (Envoy ext_authz): its own method, the original path and query appended
//     to the check path, `/v2/auth/check/v2/bookings/1?x=y`.
// Whatever the spelling, the URI is the call's path as sent and is judged by the same route
// policy. Spellings that disagree are refused: a gateway sets one of them, and a client that
// adds another must not get a second opinion (ingress-nginx, for one, passes the client's
// headers on to the check).
import { headerOf, type ApiRequest } from './access.ts';
import { CHECK_PATH } from '../http/paths.ts';

export interface NamedCall {
  method: string;
  uri: string;
}

const METHOD_HEADERS = ['X-Forwarded-Method', 'X-Original-Method'];
const URI_HEADERS = ['X-Forwarded-Uri', 'X-Original-URI'];
const IN_PATH = `the path after ${CHECK_PATH}`;

/**
 * The one value the path (when it names the call) and these headers agree on, undefined when none
 * gives one, or a refusal naming the first two that disagree.
 */
function agreed(request: ApiRequest, inPath: string | undefined, headers: string[]): string | undefined | { conflict: string } {
  let [source, value] = inPath ? [IN_PATH, inPath] : [undefined, undefined];
  for (const header of headers) {
    const given = headerOf(request, header.toLowerCase());
    if (!given) continue;
    if (value === undefined) [source, value] = [header, given];
    else if (given !== value) return { conflict: `${source} and ${header} name different calls` };
  }
  return value;
}

/** The call this check request names, or why it names none or two. */
export function namedCall(request: ApiRequest): NamedCall | string {
  // The Envoy form: everything after the check path, raw (as sent), with the query.
  const inPath = request.path.startsWith(`${CHECK_PATH}/`);
  const method = agreed(request, inPath ? request.method : undefined, METHOD_HEADERS);
  const uri = agreed(request, inPath ? request.path.slice(CHECK_PATH.length) + request.search : undefined, URI_HEADERS);
  if (typeof method === 'object') return method.conflict;
  if (typeof uri === 'object') return uri.conflict;
  if (!method || !uri) {
    return `X-Forwarded-Method and X-Forwarded-Uri (or X-Original-Method and X-Original-URI, or the path after ${CHECK_PATH}/) name the call to judge`;
  }
  return { method, uri };
}
