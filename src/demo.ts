// First start of the embedded default: a demo user, a demo organization with two teams (the user
// is its owner), and an approved demo client, printed with a ready-to-open authorization URL, so a newcomer can try the whole flow in a minute. The client
// returns to this server's own callback page (src/web/demo-callback.ts), which shows the code and
// the command that exchanges it.
import { randomBytes } from 'node:crypto';
import type { Config } from './config.ts';
import type { Db } from './storage/db.ts';
import { ADMIN_COMMAND } from './admin-command.ts';
import { createUser, type PasswordDeps } from './accounts/store.ts';
import { createClient, setClientStatus, type ClientDeps } from './clients/service.ts';
import { APP_AUTHORIZE_PATH, DEMO_CALLBACK_PATH, LOGIN_PATH, ME_PATH } from './http/paths.ts';
import { AUTHORIZATION_CODE_TTL } from './oauth/provider.ts';
import { validateRedirectUri } from './clients/validate.ts';
import { addOrgMember, addTeamMember, createOrg, createTeam } from './orgs/store.ts';

/** Who the audit log says created the demo client: how the callback page finds it. */
export const DEMO_ACTOR = 'system:demo-seed';
const DEMO = { actor: DEMO_ACTOR, reason: 'first start of the embedded default' };
export const DEMO_EMAIL = 'demo@example.com';
/** What the exchange command says when $CLIENT_SECRET is unset (the shell's ${VAR:?message}). */
export const SECRET_UNSET = 'run the export CLIENT_SECRET=... line that npm start printed first';

/** The client the demo seed created (the audit trail says which), if it still exists. */
export async function demoClientId(db: Db): Promise<string | undefined> {
  const created = await db('audit_events').where({ actor: DEMO_ACTOR, action: 'client.created' }).first<{ client_id: string | null } | undefined>('client_id');
  if (!created?.client_id) return undefined;
  return (await db('oauth_clients').where('id', created.client_id).first('id'))?.id;
}

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
  const user = await createUser(deps, { email: DEMO_EMAIL, password, name: 'Demo User', username: 'demo' });
  const org = await createOrg(deps.db, { name: 'Demo Organization' });
  const teams = [await createTeam(deps.db, { name: 'Sales', orgId: org.id }), await createTeam(deps.db, { name: 'Support', orgId: org.id })];
  await addOrgMember(deps.db, org.id, user.id, 'owner');
  for (const team of teams) await addTeamMember(deps.db, team.id, user.id, 'admin');
  const redirectUri = demoRedirectUri(config);
  const { client, secret } = await createClient(deps, {
    name: 'Demo app',
    kind: 'confidential',
    legacy: false,
    // TEAM_BOOKING_READ: the demo's second step, installing it for the demo organization's teams.
    scopes: ['PROFILE_READ', 'PROFILE_WRITE', 'BOOKING_READ', 'TEAM_BOOKING_READ'],
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
    'Try it:',
    '  1. in a terminal (the exchange command reads the secret from it):',
    `     export CLIENT_SECRET=${secret!.value}`,
    `  2. open        ${authorize}`,
    `  3. sign in as ${user.email} and click Allow: the callback page shows one command that exchanges the code`,
    `     (valid ${AUTHORIZATION_CODE_TTL} seconds, once) and calls ${config.baseUrl}${ME_PATH}; run it in that terminal.`,
  ].join('\n');
}

/**
 * Later starts: where the demo's credentials were shown, and how to reset them (only hashes are
 * stored: they cannot be shown again). Undefined when the demo client is gone.
 */
export async function demoReminder(db: Db, config: Config): Promise<string | undefined> {
  const clientId = await demoClientId(db);
  if (!clientId) return undefined;
  return [
    `Demo: sign in as ${DEMO_EMAIL} at ${config.appUrl}${LOGIN_PATH}; its password and the client secret were printed once, by the first npm start on ${config.dataDir}.`,
    // --password-stdin: a password typed at the prompt stays out of shell history and `ps`.
    `  Lost them? Stop the server (Ctrl-C), then: ${ADMIN_COMMAND} users set-password ${DEMO_EMAIL} --password-stdin (type the new password, then Enter)`,
    `  and for a new client secret (the old one stops at once): ${ADMIN_COMMAND} secrets rotate ${clientId} --overlap 0s`,
  ].join('\n');
}
