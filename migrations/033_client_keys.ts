// Keys instead of shared secrets (RFC 7523 private_key_jwt, docs/private-key-jwt.md): a registry
// client may register a jwks_uri or an inline JWKS (public keys only). With either, it
// authenticates with signed assertions and has no secret; at most one of the two is set.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.text('jwks_uri').nullable();
    t.jsonb('jwks').nullable();
  });
  await knex.raw('alter table oauth_clients add constraint oauth_clients_one_key_source check (jwks_uri is null or jwks is null)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table oauth_clients drop constraint oauth_clients_one_key_source');
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.dropColumn('jwks_uri');
    t.dropColumn('jwks');
  });
}
