// Each client's own webhook signing secrets (Standard Webhooks v1, HMAC-SHA256), encrypted under
// DATA_ENCRYPTION_KEYS. A replaced secret keeps signing until expires_at (the overlap while the
// app switches). The server-wide Ed25519 key of migration 012 goes: one key for every app let an
// event for one app verify at another.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_secrets', (t) => {
    t.bigIncrements('id').primary();
    t.text('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    t.text('secret').notNullable(); // enc1:… (src/storage/data-encryption.ts): never the whsec_ value itself
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }); // null: the current secret
    t.index(['client_id', 'id'], 'webhook_secrets_client_id');
  });
  await knex.schema.dropTable('webhook_signing_keys');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_signing_keys', (t) => {
    t.text('id').primary();
    t.text('public_key').notNullable();
    t.text('private_key').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.dropTable('webhook_secrets');
}
