// DPoP (RFC 9449 5.2, docs/dpop.md): a client may require DPoP for all its tokens
// (`dpop_bound_access_tokens`): its token requests without a proof are refused.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.boolean('dpop_bound_access_tokens').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.dropColumn('dpop_bound_access_tokens');
  });
}
