// First start of the embedded default: a demo user and an approved demo client, printed with a
// ready-to-open authorization URL, so a newcomer can try the whole flow in a minute.
import { randomBytes } from 'node:crypto';
import type { Config } from './config.ts';
import { createUser } from './accounts/store.ts';
import { createClient, setClientStatus, type ClientDeps } from './clients/service.ts';
import { APP_AUTHORIZE_PATH } from './http/paths.ts';

const DEMO = { actor: 'system:demo-seed', reason: 'first start of the embedded default' };

export async function seedDemo({ db, artifacts }: ClientDeps, config: Config): Promise<string> {
  const password = randomBytes(9).toString('base64url');
  const user = await createUser(db, { email: 'demo@example.com', password, name: 'Demo User', username: 'demo' });
  const redirectUri = 'http://localhost:8080/callback';
  const { client, secret } = await createClient(db, {
    name: 'Demo app',
    kind: 'confidential',
    legacy: false,
    scopes: ['PROFILE_READ', 'PROFILE_WRITE', 'BOOKING_READ'],
    redirectUris: [redirectUri],
  }, DEMO);
  await setClientStatus({ db, artifacts }, client.clientId, 'approved', DEMO);
  const state = randomBytes(8).toString('hex');
  const authorize = new URL(`${config.appUrl}${APP_AUTHORIZE_PATH}`);
  authorize.search = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'PROFILE_READ BOOKING_READ',
    state,
  }).toString();
  return [
    'First start: created a demo user and an approved demo client (shown only this once).',
    `  user:          ${user.email} / password ${password}`,
    `  client_id:     ${client.clientId}`,
    `  client_secret: ${secret!.value}`,
    `  redirect_uri:  ${redirectUri} (nothing listens there: copy the code from the address bar)`,
    `  1. open        ${authorize}`,
    '  2. sign in, click Allow, copy `code` from the address the browser lands on, then:',
    `     curl -s ${config.baseUrl}/v2/auth/oauth2/token -d grant_type=authorization_code -d code=CODE \\`,
    `       -d redirect_uri=${redirectUri} -d client_id=${client.clientId} -d client_secret=${secret!.value}`,
    `  3. curl -s ${config.baseUrl}/v2/me -H "Authorization: Bearer ACCESS_TOKEN"`,
  ].join('\n');
}
