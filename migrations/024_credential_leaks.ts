// Credentials reported as leaked (docs/credentials.md): each report that revoked something is
// kept, so that the user whose grant it was sees it on "Apps with access" — the grant may be gone.
// Never the credential: its kind and a hint (prefix and last four characters).
// A leaked client secret is found by its hash: an index on the hashes of unrevoked secrets.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('credential_leak_reports', (t) => {
    t.increments('id').primary();
    t.string('kind', 32).notNullable();
    t.text('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    // The user whose grant it was (none for a client secret).
    t.integer('user_id').references('id').inTable('users').onDelete('CASCADE');
    t.string('hint', 16).notNullable();
    t.timestamp('reported_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['user_id', 'reported_at']);
  });
  await knex.raw('create index oauth_client_secrets_unrevoked_hash on oauth_client_secrets (secret_hash) where revoked_at is null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists oauth_client_secrets_unrevoked_hash');
  await knex.schema.dropTable('credential_leak_reports');
}
