// Legacy clients (docs/legacy-migration.md): which grants are unscoped legacy grants, and what each legacy client
// has been asking for lately (the order guard of `clients set-scopes`).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('legacy_grants', (t) => {
    t.text('account_id').notNullable();
    t.text('client_id').notNullable();
    t.text('grant_id').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['account_id', 'client_id', 'grant_id']);
  });
  // One row per client, day and requested scope set ('' = no scope): bounded, not one per request.
  await knex.schema.createTable('client_scope_requests', (t) => {
    t.text('client_id').notNullable();
    t.date('day').notNullable();
    t.text('scope_set').notNullable();
    t.integer('count').notNullable().defaultTo(0);
    t.timestamp('last_at', { useTz: true }).notNullable();
    t.primary(['client_id', 'day', 'scope_set']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('client_scope_requests');
  await knex.schema.dropTableIfExists('legacy_grants');
}
