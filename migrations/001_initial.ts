// Users, the OAuth client registry, provider artifacts (when Redis is not used) and signing keys.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.increments('id').primary();
    t.text('email').notNullable().unique(); // stored lower-cased
    t.text('username').notNullable().unique();
    t.text('name').notNullable();
    t.text('time_zone').notNullable().defaultTo('UTC');
    t.text('password_hash').notNullable(); // scrypt, see src/accounts/password.ts
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('oauth_clients', (t) => {
    t.text('id').primary(); // the public client_id
    t.text('name').notNullable();
    t.text('kind').notNullable().checkIn(['confidential', 'public']);
    t.text('status').notNullable().defaultTo('pending').checkIn(['pending', 'approved', 'rejected', 'suspended']);
    t.boolean('legacy').notNullable().defaultTo(false);
    t.jsonb('scopes').notNullable().defaultTo('[]'); // array of scope names
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('oauth_client_redirect_uris', (t) => {
    t.text('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    t.text('uri').notNullable();
    t.integer('position').notNullable();
    t.primary(['client_id', 'uri']);
  });

  await knex.schema.createTable('oauth_client_secrets', (t) => {
    t.increments('id').primary();
    t.text('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    t.text('secret_hash').notNullable(); // sha256 of a 256-bit random secret; never the secret
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
    t.timestamp('last_used_at', { useTz: true });
    t.index(['client_id']);
  });

  // oidc-provider artifacts (sessions, interactions, codes, tokens, grants) when REDIS_URL is unset.
  await knex.schema.createTable('oidc_models', (t) => {
    t.text('model').notNullable();
    t.text('id').notNullable(); // a hash of the artifact id, never the token itself
    t.jsonb('payload').notNullable();
    t.text('grant_id');
    t.text('uid');
    t.text('user_code');
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('consumed_at', { useTz: true });
    t.primary(['model', 'id']);
    t.index(['grant_id']);
    t.index(['uid']);
    t.index(['expires_at']);
  });

  // Token-signing keys, shared by every instance and kept across restarts.
  await knex.schema.createTable('signing_keys', (t) => {
    t.text('kid').primary();
    t.jsonb('jwk').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['signing_keys', 'oidc_models', 'oauth_client_secrets', 'oauth_client_redirect_uris', 'oauth_clients', 'users']) {
    await knex.schema.dropTableIfExists(table);
  }
}
