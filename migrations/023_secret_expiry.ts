// Client secrets that expire on schedule (docs/secret-rotation.md): a lifetime chosen when a secret
// is made, or the overlap of a rotation. When the app was told that a secret is about to expire,
// and that it did (the secret.expiring and secret.expired webhooks), is kept so each is sent once.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_client_secrets', (t) => {
    t.timestamp('expires_at', { useTz: true }); // null: never expires
    t.timestamp('expiring_notified_at', { useTz: true });
    t.timestamp('expired_notified_at', { useTz: true });
  });
  // The expiry sweep reads only unrevoked secrets with an expiry.
  await knex.raw('create index oauth_client_secrets_expiry on oauth_client_secrets (expires_at) where revoked_at is null and expires_at is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists oauth_client_secrets_expiry');
  await knex.schema.alterTable('oauth_client_secrets', (t) => {
    t.dropColumn('expires_at');
    t.dropColumn('expiring_notified_at');
    t.dropColumn('expired_notified_at');
  });
}
