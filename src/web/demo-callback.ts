// The demo client's redirect URI (src/demo.ts): a page of this server that shows what came back —
// the code with the ready-made curl that exchanges it, or the refusal — so the demo ends somewhere.
// Only where the demo was set up (its client exists); a 404 everywhere else. The page never holds
// the client secret: the curl reads it from $CLIENT_SECRET, which the demo's output exports.
import { randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { findClient } from '../clients/service.ts';
import { DEMO_ACTOR, SECRET_UNSET } from '../demo.ts';
import { AUTHORIZATION_CODE_TTL } from '../oauth/provider.ts';
import { APP_AUTHORIZE_PATH, DEMO_CALLBACK_PATH, ME_PATH } from '../http/paths.ts';
import { publicEndpoints, type PublicUrls } from '../http/public-endpoints.ts';
import { newRouter } from '../http/router.ts';
import { NotFoundError } from '../errors.ts';
import { page } from './forms.ts';

export interface DemoClient {
  clientId: string;
  redirectUri: string;
  /** Whether it may ask for a team scope (seeded since the demo's organization step): the step is offered. */
  organizationStep: boolean;
}

/** The team scope the demo's second step asks for: the consent page then asks which organization and teams, and installs. */
const DEMO_TEAM_SCOPE = 'TEAM_BOOKING_READ';

/** The client the demo seed created, while it still returns here (also: the start page offers the demo). */
export async function findDemoClient(db: Db): Promise<DemoClient | undefined> {
  const created = await db('audit_events').where({ actor: DEMO_ACTOR, action: 'client.created' }).first<{ client_id: string | null } | undefined>('client_id');
  const client = created?.client_id ? await findClient(db, created.client_id) : undefined;
  const redirectUri = client?.redirectUris.find((uri) => new URL(uri).pathname === DEMO_CALLBACK_PATH);
  return client && redirectUri ? { clientId: client.clientId, redirectUri, organizationStep: client.scopes.includes(DEMO_TEAM_SCOPE) } : undefined;
}

/** A word the shell takes literally, whatever the (attacker-chosen) query put in it. */
const shellQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

/** One query parameter as sent once; repeated or absent: none. */
function queryValue(ctx: Context, name: string): string | undefined {
  const value = ctx.query[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The secret from the environment; unset, the shell stops with a plain sentence instead of sending none. */
const SECRET_WORD = `"client_secret=\${CLIENT_SECRET:?${SECRET_UNSET}}"`;

export function exchangeCommand(tokenEndpoint: string, demo: DemoClient, code: string): string {
  return [
    `curl -s ${shellQuote(tokenEndpoint)}`,
    '--data-urlencode grant_type=authorization_code',
    `--data-urlencode ${shellQuote(`code=${code}`)}`,
    `--data-urlencode ${shellQuote(`redirect_uri=${demo.redirectUri}`)}`,
    `--data-urlencode ${shellQuote(`client_id=${demo.clientId}`)}`,
    `--data-urlencode ${SECRET_WORD}`,
  ].join(' \\\n  ');
}

/** The demo's authorization request on this site (a fresh state each time): where the demo starts. */
export function demoAuthorizePath(demo: DemoClient, scope = 'PROFILE_READ BOOKING_READ'): string {
  const query = new URLSearchParams({ client_id: demo.clientId, redirect_uri: demo.redirectUri, response_type: 'code', scope, state: randomBytes(8).toString('hex') });
  return `${APP_AUTHORIZE_PATH}?${query}`;
}

/** The demo's second step: the same app asking for the teams' bookings, which the demo user's organization installs. */
export const demoOrganizationPath = (demo: DemoClient): string | undefined => (demo.organizationStep ? demoAuthorizePath(demo, `PROFILE_READ ${DEMO_TEAM_SCOPE}`) : undefined);

/**
 * One command for sh, bash and zsh: the exchange (its answer printed), then /v2/me with the
 * access_token taken from that answer (sed: no jq needed); a refused exchange stops it there.
 */
export function exchangeAndCallCommand(tokenEndpoint: string, meUrl: string, demo: DemoClient, code: string): string {
  return [
    `ANSWER=$(${exchangeCommand(tokenEndpoint, demo, code).replaceAll(' \\\n  ', ' ')})`,
    'echo "$ANSWER"',
    `ACCESS_TOKEN=$(echo "$ANSWER" | sed -n 's/.*"access_token":"\\([^"]*\\)".*/\\1/p')`,
    `curl -s ${shellQuote(meUrl)} -H "Authorization: Bearer \${ACCESS_TOKEN:?the exchange above gave no access_token}"`,
  ].join(' && \\\n');
}

/**
 * What became of the demo's code, when this server can still tell (it is the demo client's), and
 * while it is valid how many seconds it has left (the page counts them down, then shows only the
 * way to start again).
 */
async function codeState(provider: Provider, demo: DemoClient, code: string): Promise<{ state: 'valid' | 'expired' | 'used' | 'gone'; secondsLeft?: number }> {
  const found = await provider.AuthorizationCode.find(code, { ignoreExpiration: true }).catch(() => undefined);
  if (!found || found.clientId !== demo.clientId) return { state: 'gone' };
  if ((found as { consumed?: unknown }).consumed) return { state: 'used' };
  if (found.isExpired) return { state: 'expired' };
  return { state: 'valid', secondsLeft: Math.max(1, (found.exp ?? 0) - Math.floor(Date.now() / 1000)) };
}

/** The refusals an authorization can end with, in plain words (the codes and the library's text stay below them). */
const ERROR_WORDS: Record<string, string> = {
  access_denied: 'You clicked Deny, so nothing was shared with the demo app.',
  invalid_scope: 'The request asked for a scope this app may not use, or one this server does not know.',
  invalid_request: 'The authorization request was not valid (the detail below says which parameter).',
  unsupported_response_type: 'The request asked for a response type this server does not offer: it supports response_type=code.',
  unauthorized_client: 'This app may not make this kind of request.',
  login_required: 'The request asked not to show a sign-in page (prompt=none), and nobody was signed in.',
  consent_required: 'The request asked not to show the consent page (prompt=none), and the app had no consent yet.',
  interaction_required: 'The request asked not to show any page (prompt=none), and one was needed.',
  server_error: 'Something went wrong on the server. Please start the demo again.',
  temporarily_unavailable: 'The server is briefly unavailable. Please start the demo again in a few seconds.',
};
export const errorWords = (error: string, description: string | undefined): string =>
  error === 'access_denied' && description && description !== 'The user denied the request.' ? description : (ERROR_WORDS[error] ?? 'The authorization ended without a code.');

export function demoCallbackRoutes({ db, publicUrls, provider }: { db: Db; publicUrls: PublicUrls; provider: Provider }) {
  const router = newRouter();
  router.get(DEMO_CALLBACK_PATH, async (ctx) => {
    const demo = await findDemoClient(db);
    if (!demo) throw new NotFoundError(`no GET ${DEMO_CALLBACK_PATH} here`);
    const endpoints = publicEndpoints(publicUrls);
    const code = queryValue(ctx, 'code');
    const error = queryValue(ctx, 'error');
    const errorDescription = queryValue(ctx, 'error_description');
    const found = code && !error ? await codeState(provider, demo, code) : undefined;
    const meUrl = `${publicUrls.baseUrl}${ME_PATH}`;
    await page(ctx, 'demo-callback', {
      title: error ? 'The demo app was not authorized' : code ? 'The demo app got a code' : 'The demo app’s callback',
      code: error ? undefined : code,
      // valid, expired, used, or gone (this server no longer knows it: expired and removed, or used)
      codeState: found?.state,
      secondsLeft: found?.secondsLeft,
      state: queryValue(ctx, 'state'),
      error,
      errorWords: error ? errorWords(error, errorDescription) : undefined,
      errorDescription,
      codeSeconds: AUTHORIZATION_CODE_TTL,
      exchange: code && !error ? exchangeCommand(endpoints.token, demo, code) : undefined,
      exchangeAndCall: code && !error ? exchangeAndCallCommand(endpoints.token, meUrl, demo, code) : undefined,
      useToken: `curl -s ${shellQuote(meUrl)} -H "Authorization: Bearer ACCESS_TOKEN"`,
      startAgain: demoAuthorizePath(demo),
      organizationStep: demoOrganizationPath(demo),
    });
  });
  return router;
}
