// An append-only trail of security-relevant events: who did what to which client or user, when, why.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('audit_events', (t) => {
    t.bigIncrements('id').primary();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('actor').notNullable(); // e.g. "operator:alice" or "user:42"
    t.text('action').notNullable(); // e.g. "client.approved", "secret.revoked"
    t.text('client_id');
    t.integer('user_id');
    t.jsonb('details').notNullable().defaultTo('{}');
    t.index(['client_id', 'at']);
    t.index(['action', 'at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('audit_events');
}
