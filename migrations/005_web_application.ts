// The web application pages: administrators, client owners, pending changes of approved clients,
// web sign-in sessions, and the grants each user has given (the "apps with access" page).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.boolean('is_admin').notNullable().defaultTo(false);
  });
  await knex.schema.alterTable('oauth_clients', (t) => {
    // Who registered it in the developer settings (null for clients created by an operator).
    t.integer('owner_user_id').references('id').inTable('users').onDelete('SET NULL');
    t.index(['owner_user_id']);
  });
  // A widening change to an approved client waits here for an administrator.
  await knex.schema.createTable('oauth_client_changes', (t) => {
    t.increments('id').primary();
    t.text('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    t.jsonb('add_scopes').notNullable().defaultTo('[]');
    t.jsonb('add_redirect_uris').notNullable().defaultTo('[]');
    t.text('state').notNullable().defaultTo('pending').checkIn(['pending', 'approved', 'rejected', 'withdrawn']);
    t.text('requested_by').notNullable();
    t.timestamp('requested_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('decided_by');
    t.timestamp('decided_at', { useTz: true });
    t.text('reason');
    t.index(['client_id', 'state']);
  });
  await knex.schema.createTable('web_sessions', (t) => {
    t.text('id').primary(); // a hash of the session cookie's value
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
  });
  await knex.schema.createTable('user_grants', (t) => {
    t.text('account_id').notNullable();
    t.text('client_id').notNullable();
    t.text('grant_id').notNullable();
    t.jsonb('scopes').notNullable();
    t.timestamp('granted_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['account_id', 'client_id', 'grant_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('user_grants');
  await knex.schema.dropTableIfExists('web_sessions');
  await knex.schema.dropTableIfExists('oauth_client_changes');
  await knex.schema.alterTable('oauth_clients', (t) => t.dropColumn('owner_user_id'));
  await knex.schema.alterTable('users', (t) => t.dropColumn('is_admin'));
}
