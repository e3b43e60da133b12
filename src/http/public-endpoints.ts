// The addresses a developer connects an app to, built from the configured public URLs and the
// paths of paths.ts: the authorization endpoint on APP_URL, the rest on BASE_URL (docs/endpoints.md).
import type { Config } from '../config.ts';
import { APP_AUTHORIZE_PATH, PAR_PATH, RFC8414_PATH, TOKEN_PATH } from './paths.ts';

export type PublicUrls = Pick<Config, 'appUrl' | 'baseUrl'>;

export interface PublicEndpoints {
  authorization: string;
  token: string;
  /** Pushed authorization requests (RFC 9126, docs/par.md). */
  par: string;
  /** RFC 8414 metadata: every other endpoint (revocation, introspection) is listed there. */
  discovery: string;
}

export function publicEndpoints({ appUrl, baseUrl }: PublicUrls): PublicEndpoints {
  return { authorization: `${appUrl}${APP_AUTHORIZE_PATH}`, token: `${baseUrl}${TOKEN_PATH}`, par: `${baseUrl}${PAR_PATH}`, discovery: `${baseUrl}${RFC8414_PATH}` };
}
