// Secrets that expire on schedule (docs/secret-rotation.md): the app is told ahead of time
// (`secret.expiring`, SECRET_EXPIRY_NOTICE_DAYS before) and when it happens (`secret.expired`).
// Refusing an expired secret needs nothing from here: its expiry travels with the client record
// (matchClientSecret). Every instance sweeps; each notice is claimed once (repository.ts). What is
// due is decided by the system's clock (on the system clock, by the database's own now()).
import type { ChangeDeps } from './service.ts';
import { claimExpiryNotices, clientsWithExpiryDue } from './repository.ts';
import { webhookEvent, type WebhookEvent } from '../webhooks/events.ts';
import { recordAudit } from '../audit.ts';
import { sqlNow, type Clock } from '../clock.ts';

/** Sends the due notices; how many of each. */
export async function sweepSecretExpiry({ db, outbox, clock }: Pick<ChangeDeps, 'db' | 'outbox'> & { clock: Clock }, noticeSeconds: number): Promise<{ expiring: number; expired: number }> {
  const clients = await clientsWithExpiryDue(db, noticeSeconds, sqlNow(db, clock));
  if (clients.length === 0) return { expiring: 0, expired: 0 };
  // Outside the transaction (the embedded database has one connection): see WebhookOutbox.prepare.
  for (const clientId of clients) await outbox.prepare(clientId);
  return db.transaction(async (trx) => {
    const { expiring, expired } = await claimExpiryNotices(trx, noticeSeconds, sqlNow(trx, clock));
    const events = new Map<string, WebhookEvent[]>();
    const add = (clientId: string, event: WebhookEvent) => events.set(clientId, [...(events.get(clientId) ?? []), event]);
    for (const s of expiring) add(s.client_id, webhookEvent(s.client_id, 'secret.expiring', { secret_id: s.id, expires_at: s.expires_at.toISOString() }));
    for (const s of expired) {
      add(s.client_id, webhookEvent(s.client_id, 'secret.expired', { secret_id: s.id, expired_at: s.expires_at.toISOString() }));
      await recordAudit(trx, { actor: 'system', action: 'secret.expired', clientId: s.client_id, details: { secret_id: s.id, expired_at: s.expires_at.toISOString() } });
    }
    for (const [clientId, list] of events) await outbox.enqueue(trx, clientId, list);
    return { expiring: expiring.length, expired: expired.length };
  });
}
