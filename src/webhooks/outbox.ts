// The outbox: events are written as pg-boss jobs in the transaction of the change that causes
// them, so a change is never committed without its events, nor an event sent for a change that
// rolled back. Only clients with a webhook URL get jobs.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import { inTransaction, WEBHOOK_QUEUE, type WebhookQueue } from './queue.ts';
import type { WebhookEvent } from './events.ts';

/** What a delivery job carries: the body is serialized once, so every attempt signs the same bytes. */
export interface DeliveryJob {
  clientId: string;
  eventId: string;
  type: string;
  /** When the event happened (ms since the epoch): retries stop 24 hours after it. */
  occurredAt: number;
  body: string;
}

/** Where the changes of a database write their webhook events (built in system.ts, and by the operator scripts' context). */
export interface WebhookOutbox {
  /**
   * Before a change's transaction: starts the queue if the client has a webhook URL. On the
   * embedded PGlite (one connection) the queue cannot start while a transaction holds that connection.
   */
  prepare(clientId: string): Promise<void>;
  /** Writes the events as delivery jobs in `trx`; nothing when the client has no webhook URL. */
  enqueue(trx: Knex.Transaction, clientId: string, events: WebhookEvent[]): Promise<void>;
  /** From now on nothing is queued here (shutdown): a change of a client with a webhook URL fails. */
  close(): void;
}

/**
 * The outbox of `db`, with its queue: the server's (started with its worker) or the operator
 * scripts' (started on first need). Without a queue, a change of a client with a webhook URL fails.
 */
export function webhookOutbox(db: Db, queue?: () => Promise<WebhookQueue>): WebhookOutbox {
  let open = queue !== undefined;
  let started: Promise<WebhookQueue> | undefined;
  const queueOf = (): Promise<WebhookQueue> => {
    if (!open || !queue) return Promise.reject(new Error('webhooks: this database has no delivery queue (see webhookOutbox)'));
    return (started ??= queue().catch((err) => ((started = undefined), Promise.reject(err))));
  };
  return {
    async prepare(clientId) {
      if (open && (await webhookUrlOf(db, clientId))) await queueOf();
    },
    enqueue: (trx, clientId, events) => enqueueWebhookEvents(queueOf, trx, clientId, events),
    close() {
      open = false;
    },
  };
}

export async function webhookUrlOf(q: Db | Knex.Transaction, clientId: string): Promise<string | null> {
  const row: { webhook_url: string | null } | undefined = await q('oauth_clients').where('id', clientId).first('webhook_url');
  return row?.webhook_url ?? null;
}

// The queue orders one client's jobs by (created_on, id), and created_on is the transaction's
// start: the events of one change tie on it. Job ids that grow with time and within the
// millisecond (UUID version 7 with a counter, RFC 9562 6.2 method 1) keep them in the order written.
let lastMs = 0;
let sequence = 0;
function orderedJobId(): string {
  const now = Date.now();
  if (now > lastMs) [lastMs, sequence] = [now, 0];
  else if (++sequence > 0xfff) [lastMs, sequence] = [lastMs + 1, 0];
  const bytes = randomBytes(16);
  bytes.writeUIntBE(lastMs, 0, 6);
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Whose deliveries share the owner's slots (delivery.ts OWNER_CONCURRENCY): the owner's, or a client without one its own. */
const deliveryGroup = (clientId: string, ownerUserId: number | null) => (ownerUserId === null ? `client:${clientId}` : `owner:${ownerUserId}`);

async function enqueueWebhookEvents(queueOf: () => Promise<WebhookQueue>, trx: Knex.Transaction, clientId: string, events: WebhookEvent[]): Promise<void> {
  if (events.length === 0) return;
  const row: { webhook_url: string | null; owner_user_id: number | null } | undefined = await trx('oauth_clients').where('id', clientId).first('webhook_url', 'owner_user_id');
  if (!row?.webhook_url) return;
  const group = { id: deliveryGroup(clientId, row.owner_user_id) };
  const queue = await queueOf();
  for (const event of events) {
    const job: DeliveryJob = { clientId, eventId: event.id, type: event.type, occurredAt: Date.parse(event.timestamp), body: JSON.stringify(event) };
    // singletonKey: the queue's key_strict_fifo policy delivers one client's events in order.
    // group: at most OWNER_CONCURRENCY attempts of one owner's clients at a time.
    await queue.send(WEBHOOK_QUEUE, job, { id: orderedJobId(), singletonKey: clientId, group, db: inTransaction(trx) });
  }
}
