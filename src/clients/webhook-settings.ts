// A client's webhook: its URL (set by its owner on the developer page or by an operator), its
// signing secret, the test event, and the last delivery attempts. Each change is one client change
// (service.ts changeClient): locked, written, audited. The audit trail keeps the URL without its
// query, where apps sometimes put a token of their own, and never a secret.
import type { Db } from '../storage/db.ts';
import type { DataCipher } from '../storage/data-encryption.ts';
import type { Actor } from './model.ts';
import { changeClient, type ChangeDeps } from './service.ts';
import { InputError, LimitError } from '../errors.ts';
import { checkWebhookUrl, type AddressPolicy } from '../webhooks/address-policy.ts';
import { webhookEvent } from '../webhooks/events.ts';
import { webhookUrlOf } from '../webhooks/outbox.ts';
import { hasWebhookSecret, replaceWebhookSecret } from '../webhooks/secrets.ts';
import { POLICY } from '../settings.ts';

export { webhookUrlOf };

/** Test events a client may send per hour: enough to debug, too few to keep the delivery slots busy. */
export const TEST_EVENTS_PER_HOUR = POLICY.TEST_EVENTS_PER_HOUR.value;

const auditedUrl = (url: URL) => `${url.origin}${url.pathname}${url.search ? '?…' : ''}`;

export interface WebhookSettingsDeps extends ChangeDeps {
  cipher: DataCipher;
  policy: AddressPolicy;
}

export interface WebhookSetting {
  url: string | null;
  /** The signing secret made by this change (the client had none): shown once, never again. */
  secret?: string;
}

/** Sets (or with null, clears) the client's webhook URL, after the address rule; the first URL also gets a signing secret. */
export async function setWebhookUrl(deps: WebhookSettingsDeps, clientId: string, value: string | null, by: Actor): Promise<WebhookSetting> {
  const { cipher, policy } = deps;
  const url = value === null ? null : await checkWebhookUrl(value, policy);
  return changeClient(deps, clientId, by, async (trx, current) => {
    const before = await webhookUrlOf(trx, clientId);
    await trx('oauth_clients').where('id', current.clientId).update({ webhook_url: url?.href ?? null, updated_at: trx.fn.now() });
    const secret = url && !(await hasWebhookSecret(trx, clientId)) ? (await replaceWebhookSecret(trx, clientId, cipher)).value : undefined;
    const details = url ? { url: auditedUrl(url), replaced: before !== null, ...(secret ? { secret_generated: true } : {}) } : { had_url: before !== null };
    return { result: { url: url?.href ?? null, ...(secret ? { secret } : {}) }, action: url ? 'client.webhook_set' : 'client.webhook_cleared', details };
  });
}

/** A new signing secret for the client; the one it replaces keeps signing for the overlap (secrets.ts). */
export async function regenerateWebhookSecret(deps: Pick<WebhookSettingsDeps, 'db' | 'outbox' | 'records' | 'cipher'>, clientId: string, by: Actor): Promise<string> {
  const { cipher } = deps;
  return changeClient(deps, clientId, by, async (trx) => {
    if (!(await webhookUrlOf(trx, clientId))) throw new InputError('set a webhook URL first');
    const { value, replaced } = await replaceWebhookSecret(trx, clientId, cipher);
    return { result: value, action: 'client.webhook_secret_generated', details: { replaced } };
  });
}

/** Queues a webhook.test event for the client (refused without a webhook URL, or past TEST_EVENTS_PER_HOUR). */
export async function sendTestEvent(deps: ChangeDeps, clientId: string, by: Actor): Promise<string> {
  const event = webhookEvent(clientId, 'webhook.test', { message: 'A test event from the developer settings.' });
  return changeClient(deps, clientId, by, async (trx) => {
    if (!(await webhookUrlOf(trx, clientId))) throw new InputError('set a webhook URL first');
    // Counted in the audit trail, under the client's row lock: parallel requests cannot all pass.
    const [{ sent } = { sent: 0 }] = await trx('audit_events').where({ client_id: clientId, action: 'client.webhook_test_sent' }).where('at', '>', trx.raw("now() - interval '1 hour'")).count({ sent: '*' });
    if (Number(sent) >= TEST_EVENTS_PER_HOUR) throw new LimitError(`at most ${TEST_EVENTS_PER_HOUR} test events per hour: try again later`);
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
