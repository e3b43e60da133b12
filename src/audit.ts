// The audit trail (table audit_events). Never record a secret, token or password here.
import type { Knex } from 'knex';

export interface AuditEvent {
  actor: string;
  action: string;
  clientId?: string | undefined;
  userId?: number | undefined;
  details?: Record<string, unknown>;
}

export async function recordAudit(db: Knex | Knex.Transaction, event: AuditEvent): Promise<void> {
  await db('audit_events').insert({
    actor: event.actor,
    action: event.action,
    client_id: event.clientId ?? null,
    user_id: event.userId ?? null,
    details: JSON.stringify(event.details ?? {}),
  });
}
