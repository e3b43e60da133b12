// Pushed authorization requests (RFC 9126, docs/par.md): a client may require them
// (`require_pushed_authorization_requests`): its authorization requests without a request_uri are refused.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.boolean('require_pushed_authorization_requests').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.dropColumn('require_pushed_authorization_requests');
  });
}
