// First start of the embedded default: a demo user, a demo organization with two teams (the user
// is its owner), and an approved demo client, printed with a ready-to-open authorization URL, so a newcomer can try the whole flow in a minute. The client
// returns to this server's own callback page (src/web/demo-callback.ts), which shows the code and
// the command that exchanges it.
import { randomBytes } from 'node:crypto';
import type { Config } from './config.ts';
import { createUser, type PasswordDeps } from './accounts/store.ts';
import { createClient, setClientStatus, type ClientDeps } from './clients/service.ts';
import { APP_AUTHORIZE_PATH, DEMO_CALLBACK_PATH, ME_PATH, TOKEN_PATH } from './http/paths.ts';
import { AUTHORIZATION_CODE_TTL } from './oauth/provider.ts';
import { validateRedirectUri } from './clients/validate.ts';
import { addOrgMember, addTeamMember, createOrg, createTeam } from './orgs/store.ts';

/** Who the audit log says created the demo client: how the callback page finds it. */
export const DEMO_ACTOR = 'system:demo-seed';
const DEMO = { actor: DEMO_ACTOR, reason: 'first start of the embedded default' };

/** The callback page on APP_URL; on loopback when APP_URL is plain http elsewhere (not registrable: docs/operations.md, redirect URIs). */
function demoRedirectUri(config: Config): string {
  const onAppUrl = `${config.appUrl}${DEMO_CALLBACK_PATH}`;
  try {
    return validateRedirectUri(onAppUrl, 'confidential');
  } catch {
    return `http://localhost:${config.port}${DEMO_CALLBACK_PATH}`;
  }
}

export async function seedDemo(deps: ClientDeps & PasswordDeps, config: Config): Promise<string> {
  const password = randomBytes(9).toString('base64url');
  const user = await createUser(deps, { email: 'demo@example.com', password, name: 'Demo User', username: 'demo' });
  const org = await createOrg(deps.db, { name: 'Demo Organization' });
  const teams = [await createTeam(deps.db, { name: 'Sales', orgId: org.id }), await createTeam(deps.db, { name: 'Support', orgId: org.id })];
  await addOrgMember(deps.db, org.id, user.id, 'owner');
  for (const team of teams) await addTeamMember(deps.db, team.id, user.id, 'admin');
  const redirectUri = demoRedirectUri(config);
  const { client, secret } = await createClient(deps, {
    name: 'Demo app',
    kind: 'confidential',
    legacy: false,
    scopes: ['PROFILE_READ', 'PROFILE_WRITE', 'BOOKING_READ'],
    redirectUris: [redirectUri],
  }, DEMO);
  await setClientStatus(deps, client.clientId, 'approved', DEMO);
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
    'First start: created a demo user, organization and approved client (shown only this once).',
    `  user:          ${user.email} / password ${password}`,
    `  organization:  ${org.name} (id ${org.id}), teams ${teams.map((t) => `${t.name} (id ${t.id})`).join(' and ')}; the demo user owns it`,
    `  client_id:     ${client.clientId}`,
    `  client_secret: ${secret!.value}`,
    `  redirect_uri:  ${redirectUri} (this server's demo callback page)`,
    `  1. open        ${authorize}`,
    '  2. sign in and click Allow: the callback page shows the code and the curl that exchanges it',
    `     (POST ${config.baseUrl}${TOKEN_PATH}, within ${AUTHORIZATION_CODE_TTL} seconds); it reads the secret from $CLIENT_SECRET:`,
    `     export CLIENT_SECRET=${secret!.value}`,
    `  3. curl -s ${config.baseUrl}${ME_PATH} -H "Authorization: Bearer ACCESS_TOKEN"`,
  ].join('\n');
}
