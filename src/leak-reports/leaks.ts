// Credentials reported as leaked (POST /v2/auth/credentials/revoke, docs/credentials.md): each one
// of ours that is found is revoked at once — an access token destroyed; a refresh token or a code
// with its whole grant; a client secret (the client keeps its other one) — then the app is told
// (`credential.leaked`, and `grant.revoked` when a grant ended) and the user sees a notice on
// "Apps with access". Only credentials of our format are recognised: anything else is ignored,
// and so is what is not found; the caller learns nothing of which (the endpoint answers alike).
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import type { ClientArtifacts } from '../storage/client-artifacts.ts';
import { changeClient, type ChangeDeps } from '../clients/service.ts';
import { revokeSecretRow } from '../clients/repository.ts';
import { hashClientSecret } from '../clients/secrets.ts';
import { revokeGrant } from '../oauth/grants.ts';
import { recordAudit } from '../audit.ts';
import { webhookEvent, type WebhookEvent } from '../webhooks/events.ts';
import { credentialHint, credentialKind, type CredentialKind } from '../credentials/format.ts';

export interface LeakDeps extends ChangeDeps {
  provider: Provider;
  artifacts: Pick<ClientArtifacts, 'markSecretRevoked'>;
}

/** What a revocation found: whose credential it was. */
interface Found {
  kind: CredentialKind;
  clientId: string;
  userId?: string | undefined;
  /** The grant that ended with it (a refresh token's or a code's). */
  grantId?: string | undefined;
}

const ACTOR = { actor: 'system', reason: 'reported as leaked' };

/** Revokes every recognised credential among `values` (duplicates once); how many were found. */
export async function revokeLeakedCredentials(deps: LeakDeps, values: readonly string[]): Promise<number> {
  const reportedAt = new Date();
  let found = 0;
  for (const value of new Set(values)) {
    const kind = credentialKind(value);
    if (!kind) continue;
    const hint = credentialHint(value);
    if (kind === 'client_secret') {
      if (await revokeLeakedSecret(deps, value, hint, reportedAt)) found += 1;
      continue;
    }
    const revoked = await revokeLeakedToken(deps.provider, kind, value);
    if (!revoked) continue;
    await tell(deps, revoked, hint, reportedAt);
    found += 1;
  }
  return found;
}

/** Revokes a token or code (with its grant, for a refresh token or a code); whose it was, or undefined. */
async function revokeLeakedToken(provider: Provider, kind: Exclude<CredentialKind, 'client_secret'>, value: string): Promise<Found | undefined> {
  // Expired or spent ones too: a spent refresh token still names a grant that may be live.
  const options = { ignoreExpiration: true };
  const token =
    kind === 'access_token'
      ? await provider.AccessToken.find(value, options)
      : kind === 'refresh_token'
        ? await provider.RefreshToken.find(value, options)
        : await provider.AuthorizationCode.find(value, options);
  if (!token?.clientId) return undefined;
  await token.destroy();
  // An access token alone ends; a refresh token or a code may mint more: its grant ends with it.
  const grantId = kind === 'access_token' ? undefined : token.grantId;
  if (grantId) await revokeGrant(provider, grantId);
  return { kind, clientId: token.clientId, userId: token.accountId, grantId };
}

/** The report, the audit row and the app's events, in one transaction (the outbox's). */
async function tell({ db, outbox }: LeakDeps, found: Found, hint: string, reportedAt: Date): Promise<void> {
  const userId = found.userId && /^[0-9]+$/.test(found.userId) ? Number(found.userId) : undefined;
  await outbox.prepare(found.clientId);
  await db.transaction(async (trx) => {
    // Named in the table that holds its client: the registry's, or a metadata-document or registered client's.
    const inRegistry = await trx('oauth_clients').where('id', found.clientId).first('id');
    const client = inRegistry ? { client_id: found.clientId } : { cimd_client_id: found.clientId };
    await trx('credential_leak_reports').insert({ kind: found.kind, ...client, user_id: userId ?? null, hint, reported_at: reportedAt });
    await recordAudit(trx, { actor: ACTOR.actor, action: 'credential.leaked', clientId: found.clientId, userId, details: { kind: found.kind, hint, ...(found.grantId ? { grant_revoked: true } : {}) } });
    const events: WebhookEvent[] = [leakedEvent(found.clientId, found.kind, hint, reportedAt, found.userId)];
    if (found.grantId && found.userId) {
      await trx('user_grants').where({ account_id: found.userId, client_id: found.clientId, grant_id: found.grantId }).delete();
      events.push(webhookEvent(found.clientId, 'grant.revoked', { user_id: found.userId, reason: 'credential_leaked' }));
    }
    await outbox.enqueue(trx, found.clientId, events);
  });
}

const leakedEvent = (clientId: string, kind: CredentialKind, hint: string, reportedAt: Date, userId?: string, secretId?: number) =>
  webhookEvent(clientId, 'credential.leaked', { kind, hint, reported_at: reportedAt.toISOString(), ...(userId ? { user_id: userId } : {}), ...(secretId !== undefined ? { secret_id: secretId } : {}) });

/**
 * Revokes an active secret with this value (found by its hash), as an operator's revocation does
 * (marked revoked for every instance before it commits), with the app's events; false when none.
 */
async function revokeLeakedSecret(deps: LeakDeps, value: string, hint: string, reportedAt: Date): Promise<boolean> {
  const row: { id: number; client_id: string } | undefined = await deps
    .db('oauth_client_secrets')
    .where('secret_hash', hashClientSecret(value))
    .whereNull('revoked_at')
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', deps.db.fn.now()))
    .first('id', 'client_id');
  if (!row) return false;
  return changeClient(deps, row.client_id, ACTOR, async (trx) => {
    const revoked = await revokeSecretRow(trx, row.client_id, row.id);
    if (revoked) await deps.artifacts.markSecretRevoked(row.id);
    if (revoked) await trx('credential_leak_reports').insert({ kind: 'client_secret', client_id: row.client_id, user_id: null, hint, reported_at: reportedAt });
    return {
      result: revoked,
      action: 'credential.leaked',
      details: { kind: 'client_secret', hint, secret_id: row.id },
      events: revoked ? [webhookEvent(row.client_id, 'secret.revoked', { secret_id: row.id }), leakedEvent(row.client_id, 'client_secret', hint, reportedAt, undefined, row.id)] : [],
    };
  });
}

/** A user's notices: credentials of their grants reported and revoked in the last 90 days, newest first. */
export async function leakNoticesFor(db: Db, userId: number): Promise<Array<{ clientName: string; reportedAt: Date; kind: CredentialKind }>> {
  const rows: Array<{ name: string; reported_at: Date; kind: CredentialKind }> = await db('credential_leak_reports as r')
    .leftJoin('oauth_clients as c', 'c.id', 'r.client_id')
    .leftJoin('cimd_clients as m', 'm.client_id', 'r.cimd_client_id')
    .where('r.user_id', userId)
    .where('r.reported_at', '>', db.raw(`now() - interval '90 days'`))
    .orderBy('r.reported_at', 'desc')
    .limit(20)
    // A metadata-document or registered client by its name, else its id (a document's URL).
    .select(db.raw('coalesce(c.name, m.name, m.client_id) as name'), 'r.reported_at', 'r.kind');
  return rows.map((r) => ({ clientName: r.name, reportedAt: r.reported_at, kind: r.kind }));
}
