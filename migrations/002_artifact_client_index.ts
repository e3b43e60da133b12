// Lets a client's artifacts (codes, tokens, grants) be revoked together when it is suspended.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oidc_models', (t) => {
    t.text('client_id');
    t.index(['client_id']);
  });
  await knex.raw(`update oidc_models set client_id = payload->>'clientId' where payload->>'clientId' is not null`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oidc_models', (t) => {
    t.dropColumn('client_id');
  });
}
