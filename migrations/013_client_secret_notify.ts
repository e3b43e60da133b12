// Any change to a client's secrets — also one written straight into the table, not through the
// operator scripts or the pages — notifies every instance's change feed at commit
// (src/storage/record-cache.ts), which drops its cached copy of the client: a secret revoked
// behind the product's back is refused everywhere within milliseconds. The product's own
// revocations are refused at once (src/oauth/client-secrets.ts).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function oauth_client_secret_changed() returns trigger language plpgsql as $$
    begin
      perform pg_notify('oauth_record_changes', 'client:' || coalesce(new.client_id, old.client_id));
      return null;
    end $$`);
  await knex.raw(`
    create trigger oauth_client_secrets_notify after insert or update or delete on oauth_client_secrets
    for each row execute function oauth_client_secret_changed()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop trigger oauth_client_secrets_notify on oauth_client_secrets');
  await knex.raw('drop function oauth_client_secret_changed()');
}
