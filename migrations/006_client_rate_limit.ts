// A per-client budget of token, revocation and introspection requests per minute, set by an
// operator (`clients set-rate-limit`); null means the server's default.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.integer('token_requests_per_minute').checkPositive();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.dropColumn('token_requests_per_minute');
  });
}
