// A document that changes between requests (docs/agents.md): a metadata-document client's code
// is exchanged only while its document, as read now, still lists the redirect_uri the code was
// issued for. The provider compares the code with the request; this compares it with the
// document. It runs before the provider (src/oauth/endpoints.ts), on the body read once.
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import { oauthErrorAnswer, reply } from '../http/envelope.ts';
import { TOKEN_PATH } from '../http/paths.ts';
import { isUrlClientId } from './client-id.ts';

export function documentStillListsRedirect(provider: Provider) {
  return async function documentStillListsRedirect(ctx: Context, next: Next) {
    const params = ctx.state.oauthParams as Record<string, string> | undefined;
    if (ctx.path !== TOKEN_PATH || params?.grant_type !== 'authorization_code' || !isUrlClientId(params.client_id) || !params.code) return next();
    const code = await provider.AuthorizationCode.find(params.code);
    // Anything else (no such code, another client's, a mismatched redirect_uri) is the provider's to refuse.
    if (!code?.redirectUri || code.clientId !== params.client_id || code.redirectUri !== params.redirect_uri) return next();
    const client = await provider.Client.find(params.client_id).catch(() => undefined);
    if (client && !client.redirectUriAllowed(code.redirectUri)) {
      return reply(ctx, oauthErrorAnswer(400, 'invalid_grant', 'the redirect_uri of this code is no longer listed in the client_id metadata document'));
    }
    return next();
  };
}
