// The upstream OpenID Connect provider people sign in with (UPSTREAM_…, docs/accounts.md), through
// openid-client: the authorization code flow with PKCE, state and nonce; the authorization
// response's `iss` (RFC 9207) and the ID token's issuer, audience, nonce, algorithm and signature
// (against the upstream's key set: non-repudiation checks) are verified by the library. What this
// module hands back is an upstream account's verified claims, or why not; who that is here is
// src/accounts/upstream-links.ts's question.
import * as oidc from 'openid-client';
import { importJWK } from 'jose';
import type { UpstreamConfig } from '../config.ts';
import { ConfigError } from '../config.ts';
import { allowsLoopback } from '../http/loopback.ts';

/** The upstream cannot be reached, or answered nothing usable (its discovery, its token endpoint). */
export class UpstreamUnavailable extends Error {
  override name = 'UpstreamUnavailable';
}

/** The upstream's answer was refused: the words say which check failed (never a token or secret). */
export class UpstreamAnswerRefused extends Error {
  override name = 'UpstreamAnswerRefused';
}

/** What one sign-in must find again on its return: kept server-side (src/web/upstream-sign-in.ts). */
export interface UpstreamChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The upstream account, as its provider vouches for it. */
export interface UpstreamAccount {
  issuer: string;
  subject: string;
  email: string | undefined;
  emailVerified: boolean;
  name: string | undefined;
  /** The ID token as received: the hint of the upstream's logout (RP-initiated logout). */
  idToken: string;
}

export interface UpstreamClient {
  readonly name: string;
  readonly issuer: string;
  readonly linking: UpstreamConfig['linking'];
  /** Fresh checks and the authorization URL that carries them. */
  authorizationUrl(redirectUri: string): Promise<{ url: string; checks: UpstreamChecks }>;
  /** The account of this return to `redirectUri` (the URL the browser came back with). */
  finish(returned: URL, redirectUri: string, checks: UpstreamChecks): Promise<UpstreamAccount>;
  /** The upstream's logout for a session this ID token started, back to `postLogoutRedirectUri`; undefined when it has none (or cannot be read). */
  endSessionUrl(idToken: string, postLogoutRedirectUri: string): Promise<string | undefined>;
}

const TIMEOUT_SECONDS = 5;

/** A network failure (refused, reset, timed out) rather than an answer. */
function unreachable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return true;
  return err instanceof TypeError && /fetch failed/i.test(err.message);
}

/** The client of UPSTREAM_…; a key or an address that cannot be used is refused now, at start (ConfigError). */
export async function upstreamClient(config: UpstreamConfig): Promise<UpstreamClient> {
  const issuerUrl = new URL(config.issuer);
  // http only on the loopback, and only where the setting allows it (src/http/loopback.ts).
  const insecure = issuerUrl.protocol === 'http:';
  if (insecure && !allowsLoopback(issuerUrl, config.allowLoopback)) {
    throw new ConfigError(`UPSTREAM_ISSUER must be https, got "${config.issuer}" (http only on this machine's loopback with UPSTREAM_ALLOW_LOOPBACK=true)`);
  }

  const authentication = await clientAuthentication(config.clientAuth);

  // Discovery once; after a failure, again at the next sign-in (the upstream may be back).
  let discovered: Promise<oidc.Configuration> | undefined;
  function configuration(): Promise<oidc.Configuration> {
    discovered ??= oidc
      .discovery(issuerUrl, config.clientId, undefined, authentication, {
        timeout: TIMEOUT_SECONDS,
        execute: [oidc.enableNonRepudiationChecks, ...(insecure ? [oidc.allowInsecureRequests] : [])],
      })
      .catch((err: unknown) => {
        discovered = undefined;
        throw new UpstreamUnavailable(`its configuration could not be read (${err instanceof Error ? err.message : String(err)})`);
      });
    return discovered;
  }

  return {
    name: config.name,
    issuer: config.issuer,
    linking: config.linking,

    async authorizationUrl(redirectUri) {
      const settings = await configuration();
      const checks = { state: oidc.randomState(), nonce: oidc.randomNonce(), codeVerifier: oidc.randomPKCECodeVerifier() };
      const url = oidc.buildAuthorizationUrl(settings, {
        redirect_uri: redirectUri,
        scope: config.scopes,
        state: checks.state,
        nonce: checks.nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
        code_challenge_method: 'S256',
      });
      return { url: url.href, checks };
    },

    async finish(returned, redirectUri, checks) {
      const settings = await configuration();
      let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
      try {
        tokens = await oidc.authorizationCodeGrant(settings, returned, { pkceCodeVerifier: checks.codeVerifier, expectedState: checks.state, expectedNonce: checks.nonce, idTokenExpected: true }, { redirect_uri: redirectUri });
      } catch (err) {
        if (unreachable(err)) throw new UpstreamUnavailable('its token endpoint could not be reached');
        throw new UpstreamAnswerRefused(refusalWords(err));
      }
      const idToken = tokens.claims()!;
      let claims: Record<string, unknown> = { ...idToken };
      // Claims the ID token leaves out are asked of the userinfo endpoint (its sub must be the same).
      if ((claims[config.emailClaim] === undefined || claims[config.nameClaim] === undefined) && settings.serverMetadata().userinfo_endpoint) {
        try {
          claims = { ...(await oidc.fetchUserInfo(settings, tokens.access_token, idToken.sub)), ...idToken };
        } catch (err) {
          if (unreachable(err)) throw new UpstreamUnavailable('its userinfo endpoint could not be reached');
          throw new UpstreamAnswerRefused(refusalWords(err));
        }
      }
      const email = claims[config.emailClaim];
      const name = claims[config.nameClaim];
      return {
        issuer: idToken.iss,
        subject: idToken.sub,
        email: typeof email === 'string' ? email : undefined,
        emailVerified: claims.email_verified === true,
        name: typeof name === 'string' ? name : undefined,
        idToken: tokens.id_token!,
      };
    },

    async endSessionUrl(idToken, postLogoutRedirectUri) {
      const settings = await configuration().catch(() => undefined);
      if (!settings?.serverMetadata().end_session_endpoint) return undefined;
      return oidc.buildEndSessionUrl(settings, { id_token_hint: idToken, post_logout_redirect_uri: postLogoutRedirectUri }).href;
    },
  };
}

/** The JWS algorithm a private JWK signs with: its own `alg`, else the usual one of its kind. */
function algorithmOf(jwk: { kty: string; crv?: unknown; alg?: string }): string {
  if (jwk.alg) return jwk.alg;
  if (jwk.kty === 'RSA') return 'RS256';
  if (jwk.kty === 'EC') return jwk.crv === 'P-384' ? 'ES384' : 'ES256';
  return 'EdDSA';
}

/** The token endpoint's client authentication: the secret, or a client assertion signed by the private key. */
async function clientAuthentication(auth: UpstreamConfig['clientAuth']): Promise<oidc.ClientAuth> {
  if (auth.method === 'client_secret_basic') return oidc.ClientSecretBasic(auth.secret);
  let key: CryptoKey;
  try {
    key = (await importJWK(auth.jwk as Parameters<typeof importJWK>[0], algorithmOf(auth.jwk as { kty: string }))) as CryptoKey;
  } catch (err) {
    throw new ConfigError(`UPSTREAM_PRIVATE_KEY cannot be used as a signing key (${(err as Error).message})`);
  }
  return oidc.PrivateKeyJwt(auth.jwk.kid ? { key, kid: auth.jwk.kid } : key);
}

/** Which check failed, in words (the library's messages name the check, never a value). */
function refusalWords(err: unknown): string {
  if (err instanceof oidc.AuthorizationResponseError) return `it answered ${err.error}${err.error_description ? `: ${err.error_description}` : ''}`;
  if (err instanceof oidc.ResponseBodyError) return `its token endpoint answered ${err.error}`;
  if (err instanceof Error) return err.message;
  return 'its answer could not be checked';
}
