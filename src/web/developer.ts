// Developer settings: register clients, see, edit, rename and delete them, rotate their secrets.
// The same service layer as the operator scripts (src/clients/), with the signed-in user as owner
// and actor; the pages word their refusals themselves and show each next to its field.
import type { DataCipher } from '../storage/data-encryption.ts';
import type { AddressPolicy } from '../webhooks/address-policy.ts';
import type { Context, Next } from 'koa';
import type { Db } from '../storage/db.ts';
import type { ClientArtifacts } from '../storage/client-artifacts.ts';
import { AppError, InputError, LimitError, NotFoundError } from '../errors.ts';
import { createClient, deleteClient, findClient, generateSecret, listActiveSecrets, listClients, RecentlyUsedSecretError, RECENT_USE_SECONDS, revokeSecret, rotateSecret, setClientDpopRequired, setClientHighTrust, setClientKeys, setClientParRequired, setOptionalScopes, type NewSecret } from '../clients/service.ts';
import { judgedClientKeys } from '../cimd/fetch.ts';
import { DAY_SECONDS } from '../durations.ts';
import { hasSecrets, mayUseKeys, usesKeys, MAX_ACTIVE_SECRETS, MAX_REDIRECT_URIS, type Actor, type ClientRecord } from '../clients/model.ts';
import { editClient, pendingChangeOf, renameOwnClient } from '../clients/changes.ts';
import { migrationStatus } from '../clients/legacy.ts';
import { scopeGrid } from '../scopes.ts';
import { publicEndpoints, type PublicUrls } from '../http/public-endpoints.ts';
import { checkClientForm, checkField, isPageKind, sentence, type FieldErrors } from './client-form.ts';
import { validateClientLink } from '../clients/validate.ts';
import { field, fields, formBody, page, redirectWithFlash, requireCsrf } from './forms.ts';
import { pageGuards } from './account.ts';
import { newRouter } from '../http/router.ts';
import { parseIntegerId } from '../ids.ts';
import { DEVELOPER_CLIENTS_PATH } from '../http/paths.ts';
import { recentDeliveries, regenerateWebhookSecret, sendTestEvent, setWebhookUrl, TEST_EVENTS_PER_HOUR, webhookUrlOf } from '../clients/webhook-settings.ts';
import { hasWebhookSecret, overlapEndOf, WEBHOOK_SECRET_OVERLAP_SECONDS } from '../webhooks/secrets.ts';
import { MAX_WEBHOOK_URL_LENGTH } from '../webhooks/address-policy.ts';
import type { WebhookOutbox } from '../webhooks/outbox.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import type { TokenEndpointLimits } from '../oauth/rate-limits.ts';
import { singleUse } from './single-use.ts';

/** What the webhook settings of the developer pages need. */
export interface WebhookPageDeps {
  /** Where webhooks may go (src/webhooks/address-policy.ts). */
  policy: AddressPolicy;
  /** Encrypts the signing secrets the page makes (DATA_ENCRYPTION_KEYS). */
  cipher: DataCipher;
}

const BASE = DEVELOPER_CLIENTS_PATH;
const GRID = scopeGrid();

type Step = (ctx: Context, next: Next) => Promise<void>;
/** Which errors a form's page shows the developer (who can mend them) rather than the error page. */
type Refusal = (err: unknown) => err is AppError;
const badInput: Refusal = (err): err is AppError => err instanceof InputError;
const badInputOrLimit: Refusal = (err): err is AppError => err instanceof InputError || err instanceof LimitError;
const anyRefusal: Refusal = (err): err is AppError => err instanceof AppError && err.status < 500;
declare module 'koa' {
  interface DefaultState {
    /** The signed-in developer's own client the path names (the ownClient step). */
    ownClient?: ClientRecord;
  }
}

const actor = (ctx: Context): Actor => ({ actor: `user:${ctx.state.user!.id}` });
const uriLines = (text: string) => text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
const hasErrors = (errors: FieldErrors) => Object.keys(errors).length > 0;

/** A field an older form may lack: undefined then, which leaves the stored value as it is. */
const sentField = (ctx: Context, name: string) => ((ctx.request.body as Record<string, unknown> | undefined)?.[name] === undefined ? undefined : field(ctx, name));

/** The optional privacy-policy and terms links (shown on the consent page), each refusal beside its field. */
function checkLinks(errors: FieldErrors, form: { policyUri?: string | undefined; tosUri?: string | undefined }): void {
  checkField(errors, 'policy_uri', () => validateClientLink(form.policyUri, 'privacy policy'));
  checkField(errors, 'tos_uri', () => validateClientLink(form.tosUri, 'terms of service'));
}
const clientPath = (client: ClientRecord) => `${BASE}/${encodeURIComponent(client.clientId)}`;

/** An authorization request for this client, to copy and adapt (placeholders in capitals). */
function exampleAuthorizationUrl(authorizationEndpoint: string, client: ClientRecord): string {
  // PKCE for every kind of client (RFC 9700 2.1.1): public clients must send it, confidential ones should.
  const query = new URLSearchParams({ response_type: 'code', client_id: client.clientId, redirect_uri: client.redirectUris[0] ?? '', ...(client.scopes.length ? { scope: client.scopes.join(' ') } : {}), state: 'STATE', code_challenge: 'CODE_CHALLENGE', code_challenge_method: 'S256' });
  return `${authorizationEndpoint}?${query.toString().replaceAll('+', '%20')}`;
}

// The lifetimes and overlaps the page offers (the scripts take any duration within the bounds).
type Choice = readonly [value: string, seconds: number | undefined, text: string];
const SECRET_LIFETIMES: Choice[] = [
  ['', undefined, 'Until revoked'],
  ['30d', 30 * DAY_SECONDS, '30 days'],
  ['90d', 90 * DAY_SECONDS, '90 days'],
  ['180d', 180 * DAY_SECONDS, '180 days'],
  ['365d', 365 * DAY_SECONDS, '1 year'],
];
const ROTATION_OVERLAPS: Choice[] = [
  ['1h', 3600, '1 hour'],
  ['1d', DAY_SECONDS, '1 day'],
  ['7d', 7 * DAY_SECONDS, '7 days'],
];

/** The seconds of the chosen option; anything not offered is refused. */
function choice(choices: Choice[], value: string, what: string): number | undefined {
  const chosen = choices.find(([v]) => v === value);
  if (!chosen) throw new InputError(`choose one of the offered values for the ${what}`);
  return chosen[1];
}

/** "3 minutes ago" when the secret was used within RECENT_USE_SECONDS; undefined otherwise. */
function recentUse(lastUsedAt: Date | null): string | undefined {
  if (!lastUsedAt) return undefined;
  const ago = Date.now() - lastUsedAt.getTime();
  if (ago >= RECENT_USE_SECONDS * 1000) return undefined;
  const minutes = Math.floor(ago / 60_000);
  return minutes < 1 ? 'less than a minute ago' : `${minutes} minute${minutes === 1 ? '' : 's'} ago`;
}

export function developerRoutes({
  db,
  artifacts,
  outbox,
  records,
  publicUrls,
  webhooks,
  tokenLimits,
  jwksUriAllowLoopback,
}: {
  db: Db;
  artifacts: ClientArtifacts;
  outbox: WebhookOutbox;
  records: RecordCache;
  publicUrls: PublicUrls;
  webhooks: WebhookPageDeps;
  tokenLimits: Pick<TokenEndpointLimits, 'budgetUse'>;
  jwksUriAllowLoopback: boolean;
}) {
  const clients = { db, artifacts, outbox, records };
  const router = newRouter();
  const { signedIn } = pageGuards(clients);
  const endpoints = publicEndpoints(publicUrls);

  // Forms whose repeat would make or send something again (src/web/single-use.ts): a repeat
  // changes nothing, and lands on the client's page saying so.
  const clientPage = (ctx: Context) => `${BASE}/${encodeURIComponent(ctx.params.id ?? '')}`;
  const once = (already: string, fallback: (ctx: Context) => string = clientPage) => singleUse(db, { already: `This form was already sent: ${already}`, fallback });
  const SECRET_AGAIN = 'the secret was made once, and shown only then. If you did not copy it, make a new one here.';

  // The steps of the routes below. Each calls next() or answers; a refusal of the steps after
  // refusedOn/refusedAsFlash (a 4xx the developer can mend) is shown there, anything else thrown on.

  /** The steps every form of these pages starts with: signed in, its body read, from this site. */
  const form = [...signedIn, formBody, requireCsrf];

  /** The signed-in user's own client, as ctx.state.ownClient; anyone else's is "not found" (no hint that it exists). */
  const ownClient: Step = async (ctx, next) => {
    const client = await findClient(db, ctx.params.id!);
    if (!client || client.ownerUserId !== ctx.state.user!.id) throw new NotFoundError('no such client');
    ctx.state.ownClient = client;
    await next();
  };
  const clientOf = (ctx: Context) => ctx.state.ownClient!;

  /** A refusal of the later steps (`isRefusal`: bad input, by default): `show`'s page again, with the refusal's status and words. */
  const refusedOn = (show: (ctx: Context, refusal: string) => Promise<void>, isRefusal: Refusal = badInput): Step => async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      if (!isRefusal(err)) throw err;
      ctx.status = err.status;
      await show(ctx, sentence(err.message));
    }
  };

  /** A refusal of the later steps (`isRefusal`: bad input, by default): back to the client's page, the refusal as its message. */
  const refusedAsFlash = (isRefusal: Refusal = badInput): Step => async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      if (!isRefusal(err)) throw err;
      redirectWithFlash(ctx, clientPath(clientOf(ctx)), { type: 'error', text: sentence(err.message) });
    }
  };

  /** The secret id in the path: a number, or this is a 404 (never a database error). */
  function secretIdOf(ctx: Context): number {
    const id = parseIntegerId(ctx.params.secretId);
    if (id === undefined) throw new NotFoundError('no such secret');
    return id;
  }

  async function showClient(ctx: Context, client: ClientRecord, extra: Record<string, unknown> = {}) {
    return page(ctx, 'developer-client', {
      title: client.name,
      client,
      grid: GRID,
      secrets: hasSecrets(client.kind) && !usesKeys(client) ? await listActiveSecrets(db, client.clientId) : [],
      // Keys instead of a secret (private_key_jwt): the form shows what is registered.
      mayUseKeys: mayUseKeys(client.kind),
      keysForm: { source: client.keys && 'jwks' in client.keys ? 'jwks' : 'jwks_uri', jwksUri: client.keys && 'jwksUri' in client.keys ? client.keys.jwksUri : '', jwks: client.keys && 'jwks' in client.keys ? JSON.stringify(client.keys.jwks, null, 2) : '' },
      keysError: '',
      maxSecrets: MAX_ACTIVE_SECRETS,
      // Its use of the token-endpoint budget this minute (a public client's is per address: none shown).
      budget: hasSecrets(client.kind) ? await tokenLimits.budgetUse(client).catch(() => undefined) : undefined,
      secretLifetimes: SECRET_LIFETIMES.map(([value, , text]) => [value, text]),
      rotationOverlaps: ROTATION_OVERLAPS.map(([value, , text]) => [value, text]),
      pending: await pendingChangeOf(db, client.clientId),
      migration: await migrationStatus(db, client),
      maxRedirectUris: MAX_REDIRECT_URIS,
      endpoints,
      exampleUrl: exampleAuthorizationUrl(endpoints.authorization, client),
      error: '',
      errors: {},
      optionalError: '',
      form: { scopes: client.scopes, redirectUris: client.redirectUris.join('\n'), policyUri: client.policyUri ?? '', tosUri: client.tosUri ?? '' },
      renameForm: { name: client.name },
      webhook: {
        url: await webhookUrlOf(db, client.clientId),
        deliveries: await recentDeliveries(db, client.clientId),
        hasSecret: await hasWebhookSecret(db, client.clientId),
        overlapEnd: await overlapEndOf(db, client.clientId),
        production: webhooks.policy.production,
        maxLength: MAX_WEBHOOK_URL_LENGTH,
        testsPerHour: TEST_EVENTS_PER_HOUR,
      },
      webhookForm: { url: (await webhookUrlOf(db, client.clientId)) ?? '' },
      ...extra,
    });
  }

  /** A form refused before any change: the page again, its fields as sent and each refusal beside its field. */
  function refused(ctx: Context, show: () => Promise<void>) {
    ctx.status = 400;
    return show();
  }

  // A secret is shown once, on the answer that made it; a repeat of that form goes to the client's page.
  const showSecret = async (ctx: Context, client: ClientRecord, secret: Pick<NewSecret, 'id' | 'value'> & { expiresAt?: Date | null; previous?: { id: number; expiresAt: Date } }) => {
    ctx.state.formDoneAt = clientPath(client);
    // The pages call a secret by its number among the client's (its id is the operator scripts').
    const numbers = new Map((await listActiveSecrets(db, client.clientId)).map((s) => [s.id, s.number]));
    return page(ctx, 'developer-secret', { title: 'Your client secret', client, secret, number: numbers.get(secret.id), previousNumber: secret.previous && numbers.get(secret.previous.id) });
  };

  const showWebhookSecret = (ctx: Context, client: ClientRecord, secret: string, replaced: boolean) => {
    ctx.state.formDoneAt = clientPath(client);
    return page(ctx, 'developer-webhook-secret', { title: 'Your webhook signing secret', client, secret, overlapHours: replaced ? WEBHOOK_SECRET_OVERLAP_SECONDS / 3600 : 0 });
  };

  const listOwnClients: Step = async (ctx) => {
    const clients = await listClients(db, { ownerUserId: ctx.state.user!.id });
    return page(ctx, 'developer-clients', { title: 'Developer settings', clients });
  };

  const sentNewClient = (ctx: Context) => ({ name: field(ctx, 'name'), kind: field(ctx, 'kind'), redirectUris: field(ctx, 'redirect_uris'), scopes: fields(ctx, 'scope'), policyUri: field(ctx, 'policy_uri'), tosUri: field(ctx, 'tos_uri') });
  const showNew = (ctx: Context, errors: FieldErrors = {}, form: Record<string, unknown> = {}, error = '') =>
    page(ctx, 'developer-new', { title: 'Register an OAuth client', grid: GRID, maxRedirectUris: MAX_REDIRECT_URIS, error, errors, form: { name: '', kind: 'confidential', redirectUris: '', scopes: [], policyUri: '', tosUri: '', ...form } });

  // The client service refuses bad input and the per-owner cap (its words, shown above the form).
  const registerClient: Step = async (ctx) => {
    const form = sentNewClient(ctx);
    const errors = checkClientForm({ ...form, redirectUris: uriLines(form.redirectUris) });
    checkLinks(errors, form);
    if (hasErrors(errors) || !isPageKind(form.kind)) return refused(ctx, () => showNew(ctx, errors, form));
    const { client, secret } = await createClient(
      clients,
      { name: form.name, kind: form.kind, legacy: false, scopes: form.scopes, redirectUris: uriLines(form.redirectUris), ownerUserId: ctx.state.user!.id, policyUri: form.policyUri, tosUri: form.tosUri },
      actor(ctx),
    );
    ctx.state.formDoneAt = clientPath(client);
    if (secret) return showSecret(ctx, client, secret);
    return redirectWithFlash(ctx, clientPath(client), { type: 'ok', text: 'Client registered. It waits for review by an administrator.' });
  };

  const sentEdit = (ctx: Context) => ({ scopes: fields(ctx, 'scope'), redirectUris: field(ctx, 'redirect_uris'), policyUri: sentField(ctx, 'policy_uri'), tosUri: sentField(ctx, 'tos_uri') });
  const editOwnClient: Step = async (ctx) => {
    const client = clientOf(ctx);
    const form = sentEdit(ctx);
    const errors = checkClientForm({ scopes: form.scopes, redirectUris: uriLines(form.redirectUris) }, { kind: client.kind, legacy: client.legacy });
    checkLinks(errors, form);
    if (hasErrors(errors)) return refused(ctx, () => showClient(ctx, client, { errors, form: { ...form, policyUri: form.policyUri ?? '', tosUri: form.tosUri ?? '' } }));
    const outcome = await editClient(clients, client.clientId, { scopes: form.scopes, redirectUris: uriLines(form.redirectUris), links: { policyUri: form.policyUri, tosUri: form.tosUri } }, actor(ctx), { force: field(ctx, 'force') === 'yes' });
    const text = outcome.pending
      ? 'Saved. The changes that widen what the app can do wait for review by an administrator; until then the approved settings stay in force.'
      : 'Saved.';
    return redirectWithFlash(ctx, clientPath(client), { type: 'ok', text });
  };

  // Only before review: see renameOwnClient.
  const renameForm = (ctx: Context) => ({ name: field(ctx, 'name') });
  const renameClient: Step = async (ctx) => {
    const client = clientOf(ctx);
    const errors = checkClientForm(renameForm(ctx));
    if (hasErrors(errors)) return refused(ctx, () => showClient(ctx, client, { errors, renameForm: renameForm(ctx) }));
    const renamed = await renameOwnClient(clients, client.clientId, renameForm(ctx).name, actor(ctx));
    return redirectWithFlash(ctx, clientPath(renamed), { type: 'ok', text: `Renamed to “${renamed.name}”.` });
  };

  // Marks which approved scopes users may untick on the consent page (never a widening: no review).
  const saveOptionalScopes: Step = async (ctx) => {
    await setOptionalScopes(clients, clientOf(ctx).clientId, fields(ctx, 'optional_scope'), actor(ctx));
    redirectWithFlash(ctx, clientPath(clientOf(ctx)), { type: 'ok', text: 'Optional scopes saved.' });
  };

  // Requiring DPoP only narrows what the app may do (RFC 9449 5.2): set by the owner, no review.
  const saveDpop: Step = async (ctx) => {
    const required = field(ctx, 'dpop') === 'on';
    await setClientDpopRequired(clients, clientOf(ctx).clientId, required, actor(ctx));
    redirectWithFlash(ctx, clientPath(clientOf(ctx)), { type: 'ok', text: required ? 'DPoP required: token requests without a proof are refused.' : 'DPoP no longer required.' });
  };

  // Requiring pushed authorization requests only narrows what the app may do (RFC 9126 5): set by the owner, no review.
  const savePar: Step = async (ctx) => {
    const required = field(ctx, 'par') === 'on';
    await setClientParRequired(clients, clientOf(ctx).clientId, required, actor(ctx));
    redirectWithFlash(ctx, clientPath(clientOf(ctx)), { type: 'ok', text: required ? 'Pushed authorization requests required: an authorization request without a request_uri is refused.' : 'Pushed authorization requests no longer required.' });
  };

  // The high-trust profile (FAPI 2.0; docs/security.md) only narrows what the app may do: set by
  // the owner, no review. Refused, as a flash, for a client without keys (clients/service.ts).
  const saveHighTrust: Step = async (ctx) => {
    const on = field(ctx, 'high_trust') === 'on';
    await setClientHighTrust(clients, clientOf(ctx).clientId, on, actor(ctx));
    redirectWithFlash(ctx, clientPath(clientOf(ctx)), { type: 'ok', text: on ? 'High-trust profile on: pushed requests, PKCE, DPoP proofs and your keys are required; a request without one is refused, naming it.' : 'High-trust profile off.' });
  };

  // Keys instead of a secret (private_key_jwt, docs/private-key-jwt.md): a jwks_uri or a key set,
  // public keys only. Narrows how the app authenticates (no review); its secrets are revoked then.
  const keysForm = (ctx: Context) => ({ source: field(ctx, 'key_source'), jwksUri: field(ctx, 'jwks_uri'), jwks: field(ctx, 'jwks') });
  const saveKeys: Step = async (ctx) => {
    const client = clientOf(ctx);
    const form = keysForm(ctx);
    if (form.source !== 'jwks_uri' && form.source !== 'jwks') throw new InputError('choose a jwks_uri or a key set');
    // A jwks_uri is fetched now, under the provider's rules: keys not published yet are refused here, with the reason.
    const keys = await judgedClientKeys(form.source === 'jwks_uri' ? { jwksUri: form.jwksUri } : { jwks: form.jwks }, { production: webhooks.policy.production, allowLoopback: jwksUriAllowLoopback });
    const { revokedSecrets } = await setClientKeys(clients, client.clientId, keys, actor(ctx));
    const revoked = revokedSecrets.length ? ` Its client secret${revokedSecrets.length > 1 ? 's are' : ' is'} revoked: requests that use ${revokedSecrets.length > 1 ? 'them' : 'it'} are refused from now on.` : '';
    redirectWithFlash(ctx, clientPath(client), { type: 'ok', text: `Keys saved: your app authenticates with client assertions signed by its private key (private_key_jwt).${revoked}` });
  };
  const removeKeys: Step = async (ctx) => {
    const client = clientOf(ctx);
    await setClientKeys(clients, client.clientId, null, actor(ctx));
    redirectWithFlash(ctx, clientPath(client), { type: 'ok', text: 'Keys removed: your app authenticates with a client secret again. Generate one below.' });
  };

  const showDelete: Step = async (ctx) => {
    const client = clientOf(ctx);
    return page(ctx, 'developer-delete', { title: `Delete ${client.name}`, client, errors: {}, form: { confirmName: '' } });
  };

  // Only the owner (ownClient, and again under the lock), and only with the name typed.
  const deleteOwnClient: Step = async (ctx) => {
    const client = clientOf(ctx);
    const form = { confirmName: field(ctx, 'confirm_name') };
    if (form.confirmName.trim() !== client.name) {
      const errors = { confirm_name: `Type the client's name exactly as shown, “${client.name}”, to delete it.` };
      return refused(ctx, () => page(ctx, 'developer-delete', { title: `Delete ${client.name}`, client, errors, form }));
    }
    await deleteClient(clients, client.clientId, actor(ctx), { ownerUserId: ctx.state.user!.id });
    return redirectWithFlash(ctx, BASE, { type: 'ok', text: `“${client.name}” is deleted. Its tokens and grants no longer work.` });
  };

  const makeSecret: Step = async (ctx) => {
    const client = clientOf(ctx);
    const expiresInSeconds = choice(SECRET_LIFETIMES, field(ctx, 'lifetime'), 'lifetime');
    return showSecret(ctx, client, await generateSecret(clients, client.clientId, actor(ctx), { expiresInSeconds }));
  };

  const rotateOwnSecret: Step = async (ctx) => {
    const client = clientOf(ctx);
    const overlapSeconds = choice(ROTATION_OVERLAPS, field(ctx, 'overlap'), 'overlap');
    if (overlapSeconds === undefined) throw new InputError('choose how long the current secret keeps working');
    return showSecret(ctx, client, await rotateSecret(clients, client.clientId, actor(ctx), { overlapSeconds }));
  };

  // Webhooks: the URL (checked against the address rule), its signing secret (shown once, on the
  // response that made it), clearing it, and a test event.
  const webhookDeps = { db, outbox, records, ...webhooks };
  const webhookForm = (ctx: Context) => ({ url: field(ctx, 'webhook_url') });
  const saveWebhookUrl: Step = async (ctx) => {
    const client = clientOf(ctx);
    const { secret } = await setWebhookUrl(webhookDeps, client.clientId, webhookForm(ctx).url, actor(ctx));
    if (secret) return showWebhookSecret(ctx, client, secret, false);
    redirectWithFlash(ctx, clientPath(client), { type: 'ok', text: 'Webhook URL saved. Use “Send test event” to check that your app receives it.' });
  };

  const makeWebhookSecret: Step = async (ctx) => {
    const client = clientOf(ctx);
    const replaced = await hasWebhookSecret(db, client.clientId);
    return showWebhookSecret(ctx, client, await regenerateWebhookSecret(webhookDeps, client.clientId, actor(ctx)), replaced);
  };

  const clearWebhookUrl: Step = async (ctx) => {
    const client = clientOf(ctx);
    await setWebhookUrl(webhookDeps, client.clientId, null, actor(ctx));
    redirectWithFlash(ctx, clientPath(client), { type: 'ok', text: 'Webhook URL removed. No more events are sent.' });
  };

  const sendOwnTestEvent: Step = async (ctx) => {
    const client = clientOf(ctx);
    await sendTestEvent(clients, client.clientId, actor(ctx));
    redirectWithFlash(ctx, clientPath(client), { type: 'ok', text: 'Test event queued. Reload the page to see the delivery below.' });
  };

  const ONLY_SECRET = 'This is the only active secret: generate a new one and switch your app to it before revoking this one.';

  const showRevoke: Step = async (ctx) => {
    const client = clientOf(ctx);
    const secretId = secretIdOf(ctx);
    const active = await listActiveSecrets(db, client.clientId);
    const secret = active.find((s) => s.id === secretId);
    if (!secret) return redirectWithFlash(ctx, clientPath(client), { type: 'error', text: 'That secret is not active.' });
    if (active.length === 1) return redirectWithFlash(ctx, clientPath(client), { type: 'error', text: ONLY_SECRET });
    return page(ctx, 'developer-revoke', { title: 'Revoke a secret', client, secret, recentlyUsed: recentUse(secret.lastUsedAt) });
  };

  const revokeOwnSecret: Step = async (ctx) => {
    const client = clientOf(ctx);
    const secretId = secretIdOf(ctx);
    try {
      await revokeSecret(clients, client.clientId, secretId, actor(ctx), { keepOne: true, force: field(ctx, 'confirm_recent') === 'yes' });
    } catch (err) {
      if (err instanceof RecentlyUsedSecretError) {
        const secret = (await listActiveSecrets(db, client.clientId)).find((s) => s.id === secretId)!;
        const error = 'Tick the box to confirm: this secret was used in the last 10 minutes.';
        ctx.status = err.status; // 409: the revocation waits for a confirmation
        return page(ctx, 'developer-revoke', { title: 'Revoke a secret', client, secret, recentlyUsed: recentUse(err.lastUsedAt), error });
      }
      if (err instanceof InputError) return redirectWithFlash(ctx, clientPath(client), { type: 'error', text: ONLY_SECRET });
      if (!(err instanceof NotFoundError)) throw err;
      return redirectWithFlash(ctx, clientPath(client), { type: 'error', text: 'That secret is not active.' });
    }
    redirectWithFlash(ctx, clientPath(client), { type: 'ok', text: 'Secret revoked. Requests that use it are refused from now on.' });
  };

  // The routes, each a list of named steps.
  const CLIENT = `${BASE}/:id`;
  router.get(BASE, ...signedIn, listOwnClients);
  router.get(`${BASE}/new`, ...signedIn, (ctx) => showNew(ctx));
  router.post(BASE, ...form, once('the client was registered once (here it is). Its secret was shown only then: if you did not copy it, generate a new one below.', () => BASE), refusedOn((ctx, refusal) => showNew(ctx, {}, sentNewClient(ctx), refusal), badInputOrLimit), registerClient);
  router.get(CLIENT, ...signedIn, ownClient, (ctx) => showClient(ctx, clientOf(ctx)));
  router.post(CLIENT, ...form, ownClient, refusedOn((ctx, refusal) => showClient(ctx, clientOf(ctx), { error: refusal, form: sentEdit(ctx) })), editOwnClient);
  router.post(`${CLIENT}/name`, ...form, ownClient, refusedOn((ctx, refusal) => showClient(ctx, clientOf(ctx), { errors: { name: refusal }, renameForm: renameForm(ctx) })), renameClient);
  router.post(`${CLIENT}/optional-scopes`, ...form, ownClient, refusedOn((ctx, refusal) => showClient(ctx, clientOf(ctx), { optionalError: refusal })), saveOptionalScopes);
  router.post(`${CLIENT}/dpop`, ...form, ownClient, saveDpop);
  router.post(`${CLIENT}/par`, ...form, ownClient, savePar);
  router.post(`${CLIENT}/high-trust`, ...form, ownClient, refusedAsFlash(), saveHighTrust);
  router.post(`${CLIENT}/keys`, ...form, ownClient, refusedOn((ctx, refusal) => showClient(ctx, clientOf(ctx), { keysError: refusal, keysForm: keysForm(ctx) })), saveKeys);
  router.post(`${CLIENT}/keys/remove`, ...form, ownClient, refusedAsFlash(), removeKeys);
  router.get(`${CLIENT}/delete`, ...signedIn, ownClient, showDelete);
  router.post(`${CLIENT}/delete`, ...form, once('the client was deleted.', () => BASE), ownClient, deleteOwnClient);
  router.post(`${CLIENT}/secrets`, ...form, once(SECRET_AGAIN), ownClient, refusedAsFlash(), makeSecret);
  router.post(`${CLIENT}/secrets/rotate`, ...form, once(`the secret was rotated once: ${SECRET_AGAIN}`), ownClient, refusedAsFlash(), rotateOwnSecret);
  router.post(`${CLIENT}/webhook`, ...form, once('the webhook URL was saved once; a signing secret made then was shown only then (make a new one here if you need it).'), ownClient, refusedOn((ctx, refusal) => showClient(ctx, clientOf(ctx), { errors: { webhook_url: refusal }, webhookForm: webhookForm(ctx) })), saveWebhookUrl);
  router.post(`${CLIENT}/webhook/secret`, ...form, once('the signing secret was made once, and shown only then. If you did not copy it, make a new one here.'), ownClient, refusedAsFlash(), makeWebhookSecret);
  router.post(`${CLIENT}/webhook/clear`, ...form, ownClient, clearWebhookUrl);
  router.post(`${CLIENT}/webhook/test`, ...form, once('the test event was queued once.'), ownClient, refusedAsFlash(anyRefusal), sendOwnTestEvent);
  router.get(`${CLIENT}/secrets/:secretId/revoke`, ...signedIn, ownClient, showRevoke);
  router.post(`${CLIENT}/secrets/:secretId/revoke`, ...form, once('the secret was revoked.'), ownClient, revokeOwnSecret);

  return router;
}
