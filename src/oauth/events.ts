// What the provider reports, turned into the audit trail, metrics and logs.
import type Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../http/metrics.ts';
import { recordAudit } from '../audit.ts';
import { ArtifactAlreadyConsumed } from '../storage/artifact-errors.ts';
import type { GrantUses } from './grant-use.ts';
import type { WebhookOutbox } from '../webhooks/outbox.ts';
import { webhookEvent } from '../webhooks/events.ts';
import { isLibraryReplay, isRefreshTokenReuse } from '../seams/oidc-provider.ts';

// A spent code or refresh token presented again, as the library finds it (it then revokes the
// grant) or as a race lost inside our adapters (ArtifactAlreadyConsumed).
function isReplay(err: Error): boolean {
  return err instanceof ArtifactAlreadyConsumed || isLibraryReplay(err);
}

/** Tokens were issued (grant.success, from the provider or the fast refresh, src/seams/oidc-provider.ts): counted, and the grant's last use noted. */
export function tokensIssued({ grantUses, metrics, log }: { grantUses: GrantUses; metrics: Metrics; log: Logger }) {
  return (grantType: string, grant: { jti?: string; accountId?: string; clientId?: string } | undefined) => {
    metrics.tokensIssued.inc({ grant_type: grantType });
    // "Last used" of the apps with access page: after the answer, never delaying it.
    if (grant?.jti) void grantUses.record(grant as Parameters<GrantUses['record']>[0]).catch((err) => log.error({ err }, 'grant use write failed'));
  };
}

export function watchProviderEvents(provider: Provider, { db, outbox, grantUses, metrics, log }: { db: Db; outbox: WebhookOutbox; grantUses: GrantUses; metrics: Metrics; log: Logger }): void {
  const audit = (event: Parameters<typeof recordAudit>[1]) => recordAudit(db, event).catch((err) => log.error({ err }, 'audit write failed'));
  async function recordReplay(clientId: string, accountId: string, grantId: string | undefined, event: Parameters<typeof recordAudit>[1]) {
    await outbox.prepare(clientId);
    await db.transaction(async (trx) => {
      await recordAudit(trx, event);
      if (grantId) await trx('user_grants').where({ account_id: accountId, grant_id: grantId }).delete(); // revoked: not the app's any more
      await outbox.enqueue(trx, clientId, [webhookEvent(clientId, 'grant.revoked', { user_id: accountId, reason: 'refresh_token_replayed' })]);
    });
  }

  const issued = tokensIssued({ grantUses, metrics, log });
  provider.on('grant.success', (ctx) => issued(String(ctx.oidc.params?.grant_type ?? 'unknown'), ctx.oidc.entities.Grant));

  function onFailure(event: string) {
    return (ctx: KoaContextWithOIDC, err: Error & { error?: string }) => {
      if (err.error === 'invalid_client') metrics.authFailures.inc({ kind: 'client' });
      if (event === 'grant.error' && err.error === 'invalid_grant' && isReplay(err)) {
        // RFC 6749 4.1.2 / RFC 9700 4.14.2: a spent code or refresh token came back; its grant is revoked.
        const kind = ctx.oidc.params?.grant_type === 'refresh_token' ? 'refresh_token.reuse_detected' : 'authorization_code.replay_detected';
        metrics.securityEvents.inc({ event: kind });
        const clientId = ctx.oidc.client?.clientId;
        const event = { actor: `client:${clientId ?? 'unknown'}`, action: kind, clientId, details: { ip: ctx.ip } };
        // The library revoked the grant of a refresh token used twice: tell the app whose, with the audit row.
        const { accountId, grantId } = ctx.oidc.entities.RefreshToken ?? {};
        if (kind === 'refresh_token.reuse_detected' && isRefreshTokenReuse(err) && clientId && accountId) {
          void recordReplay(clientId, accountId, grantId, event).catch((e) => log.error({ err: e }, 'audit write failed'));
        } else void audit(event);
      }
    };
  }
  provider.on('grant.error', onFailure('grant.error'));
  provider.on('introspection.error', onFailure('introspection.error'));
  provider.on('revocation.error', onFailure('revocation.error'));

  provider.on('grant.revoked', (ctx, grantId: string) => {
    const clientId = ctx.oidc.client?.clientId;
    void audit({ actor: clientId ? `client:${clientId}` : 'system', action: 'grant.revoked', clientId, details: { grant_id: grantId, route: ctx.oidc.route } });
  });

  provider.on('server_error', (ctx, err) => {
    log.error({ err, route: ctx.oidc?.route, reqId: ctx.get('X-Request-Id') || undefined }, 'provider error');
  });
}
