// A client's webhook: its URL (set by its owner on the developer page or by an operator), the
// test event, and the last delivery attempts. Each change is one client change (service.ts
// changeClient): locked, written, audited. The audit trail keeps the URL without its query, where
// apps sometimes put a token of their own.
import type { Db } from '../storage/db.ts';
import type { Actor } from '../clients/model.ts';
import { changeClient } from '../clients/service.ts';
import { InputError } from '../errors.ts';
import { checkWebhookUrl, type AddressPolicy } from './address-policy.ts';
import { webhookEvent } from './events.ts';
import { webhookUrlOf } from './outbox.ts';

export { webhookUrlOf };

const auditedUrl = (url: URL) => `${url.origin}${url.pathname}${url.search ? '?…' : ''}`;

/** Sets (or with null, clears) the client's webhook URL, after the address rule; returns what is stored. */
export async function setWebhookUrl(db: Db, clientId: string, value: string | null, by: Actor, policy: AddressPolicy): Promise<string | null> {
  const url = value === null ? null : await checkWebhookUrl(value, policy);
  return changeClient(db, clientId, by, async (trx, current) => {
    const before = await webhookUrlOf(trx, clientId);
    await trx('oauth_clients').where('id', current.clientId).update({ webhook_url: url?.href ?? null, updated_at: trx.fn.now() });
    const details = url ? { url: auditedUrl(url), replaced: before !== null } : { had_url: before !== null };
    return { result: url?.href ?? null, action: url ? 'client.webhook_set' : 'client.webhook_cleared', details };
  });
}

/** Queues a webhook.test event for the client (refused when it has no webhook URL). */
export async function sendTestEvent(db: Db, clientId: string, by: Actor): Promise<string> {
  const event = webhookEvent(clientId, 'webhook.test', { message: 'A test event from the developer settings.' });
  return changeClient(db, clientId, by, async (trx) => {
    if (!(await webhookUrlOf(trx, clientId))) throw new InputError('set a webhook URL first');
    return { result: event.id, action: 'client.webhook_test_sent', details: { event_id: event.id }, events: [event] };
  });
}

export interface DeliveryAttempt {
  attemptedAt: Date;
  eventId: string;
  eventType: string;
  attempt: number;
  statusCode: number | null;
  error: string | null;
  succeeded: boolean;
}

/** The client's last delivery attempts, newest first. */
export async function recentDeliveries(db: Db, clientId: string, limit = 20): Promise<DeliveryAttempt[]> {
  const rows = await db('webhook_deliveries').where('client_id', clientId).orderBy('id', 'desc').limit(limit);
  return rows.map((r) => ({ attemptedAt: r.attempted_at, eventId: r.event_id, eventType: r.event_type, attempt: r.attempt, statusCode: r.status_code, error: r.error, succeeded: r.succeeded }));
}
