// Optional links a developer gives at registration, shown on the consent page: the app's privacy
// policy and terms of service. Null when not given.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.text('policy_uri');
    t.text('tos_uri');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.dropColumn('policy_uri');
    t.dropColumn('tos_uri');
  });
}
