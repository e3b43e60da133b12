// Signed webhooks to apps (src/webhooks/): each client's webhook URL, the server's Ed25519 signing
// key, and the last delivery attempts shown on the developer page. The queue itself is pg-boss's
// own schema (pgboss), which pg-boss creates and upgrades when it starts.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => t.text('webhook_url'));
  await knex.schema.createTable('webhook_signing_keys', (t) => {
    t.text('id').primary();
    t.text('public_key').notNullable(); // raw 32 bytes, base64
    t.text('private_key').notNullable(); // PKCS#8 DER, base64: never logged nor shown
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.bigIncrements('id').primary();
    t.text('client_id').notNullable();
    t.text('event_id').notNullable();
    t.text('event_type').notNullable();
    t.integer('attempt').notNullable();
    t.integer('status_code');
    t.text('error');
    t.boolean('succeeded').notNullable();
    t.timestamp('attempted_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['client_id', 'id'], 'webhook_deliveries_client_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhook_signing_keys');
  await knex.schema.alterTable('oauth_clients', (t) => t.dropColumn('webhook_url'));
}
