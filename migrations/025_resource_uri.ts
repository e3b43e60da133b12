// RFC 8707 resource indicators: a resource server may name the resource it serves (its audience),
// an absolute URI that tokens are then issued for. Null: it serves the platform API, as before.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.text('resource_uri');
  });
  // One resource, one server: a token's audience names exactly one registered resource server.
  await knex.raw('create unique index oauth_clients_resource_uri on oauth_clients (resource_uri) where resource_uri is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists oauth_clients_resource_uri');
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.dropColumn('resource_uri');
  });
}
