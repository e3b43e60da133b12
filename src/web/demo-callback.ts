// The demo client's redirect URI (src/demo.ts): a page of this server that shows what came back —
// the code with the ready-made curl that exchanges it, or the refusal — so the demo ends somewhere.
// Only where the demo was set up (its client exists); a 404 everywhere else. The page never holds
// the client secret: the curl reads it from $CLIENT_SECRET, which the demo's output exports.
import { randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import type { Db } from '../storage/db.ts';
import { findClient } from '../clients/service.ts';
import { DEMO_ACTOR } from '../demo.ts';
import { AUTHORIZATION_CODE_TTL } from '../oauth/provider.ts';
import { APP_AUTHORIZE_PATH, DEMO_CALLBACK_PATH, ME_PATH } from '../http/paths.ts';
import { publicEndpoints, type PublicUrls } from '../http/public-endpoints.ts';
import { newRouter } from '../http/router.ts';
import { NotFoundError } from '../errors.ts';
import { page } from './forms.ts';

export interface DemoClient {
  clientId: string;
  redirectUri: string;
}

/** The client the demo seed created, while it still returns here (also: the start page offers the demo). */
export async function findDemoClient(db: Db): Promise<DemoClient | undefined> {
  const created = await db('audit_events').where({ actor: DEMO_ACTOR, action: 'client.created' }).first<{ client_id: string | null } | undefined>('client_id');
  const client = created?.client_id ? await findClient(db, created.client_id) : undefined;
  const redirectUri = client?.redirectUris.find((uri) => new URL(uri).pathname === DEMO_CALLBACK_PATH);
  return client && redirectUri ? { clientId: client.clientId, redirectUri } : undefined;
}

/** A word the shell takes literally, whatever the (attacker-chosen) query put in it. */
const shellQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

/** One query parameter as sent once; repeated or absent: none. */
function queryValue(ctx: Context, name: string): string | undefined {
  const value = ctx.query[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function exchangeCommand(tokenEndpoint: string, demo: DemoClient, code: string): string {
  return [
    `curl -s ${shellQuote(tokenEndpoint)}`,
    '--data-urlencode grant_type=authorization_code',
    `--data-urlencode ${shellQuote(`code=${code}`)}`,
    `--data-urlencode ${shellQuote(`redirect_uri=${demo.redirectUri}`)}`,
    `--data-urlencode ${shellQuote(`client_id=${demo.clientId}`)}`,
    '--data-urlencode "client_secret=$CLIENT_SECRET"',
  ].join(' \\\n  ');
}

/** The demo's authorization request on this site (a fresh state each time): where the demo starts. */
export function demoAuthorizePath(demo: DemoClient): string {
  const query = new URLSearchParams({ client_id: demo.clientId, redirect_uri: demo.redirectUri, response_type: 'code', scope: 'PROFILE_READ BOOKING_READ', state: randomBytes(8).toString('hex') });
  return `${APP_AUTHORIZE_PATH}?${query}`;
}

export function demoCallbackRoutes({ db, publicUrls }: { db: Db; publicUrls: PublicUrls }) {
  const router = newRouter();
  router.get(DEMO_CALLBACK_PATH, async (ctx) => {
    const demo = await findDemoClient(db);
    if (!demo) throw new NotFoundError(`no GET ${DEMO_CALLBACK_PATH} here`);
    const endpoints = publicEndpoints(publicUrls);
    const code = queryValue(ctx, 'code');
    const error = queryValue(ctx, 'error');
    await page(ctx, 'demo-callback', {
      title: error ? 'The demo app was not authorized' : code ? 'The demo app got a code' : 'The demo app’s callback',
      code: error ? undefined : code,
      state: queryValue(ctx, 'state'),
      error,
      errorDescription: queryValue(ctx, 'error_description'),
      codeSeconds: AUTHORIZATION_CODE_TTL,
      exchange: code && !error ? exchangeCommand(endpoints.token, demo, code) : undefined,
      useToken: `curl -s ${shellQuote(`${publicUrls.baseUrl}${ME_PATH}`)} -H "Authorization: Bearer ACCESS_TOKEN"`,
      startAgain: demoAuthorizePath(demo),
    });
  });
  return router;
}
