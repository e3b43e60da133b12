// The admin review table pages through thousands of clients by status; the "apps with access" page
// shows when each grant was last used (a token issued or refreshed), written at most once a minute.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => t.index(['status', 'created_at'], 'oauth_clients_status_created_at'));
  await knex.schema.alterTable('user_grants', (t) => t.timestamp('last_used_at', { useTz: true }));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('user_grants', (t) => t.dropColumn('last_used_at'));
  await knex.schema.alterTable('oauth_clients', (t) => t.dropIndex(['status', 'created_at'], 'oauth_clients_status_created_at'));
}
