// Recording when a secret was last used (src/clients/secret-use.ts) updates its row about once a
// minute; with the notification of 013 on every update, each of those writes dropped its client
// from every instance's record cache, which then read the client again: with 10,000 clients in use,
// a client read on nearly every token request. Only a change to what a secret is or whether it
// counts (anything but last_used_at) notifies now.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function oauth_client_secret_changed() returns trigger language plpgsql as $$
    begin
      if tg_op = 'UPDATE' and to_jsonb(new) - 'last_used_at' = to_jsonb(old) - 'last_used_at' then
        return null;
      end if;
      perform pg_notify('oauth_record_changes', 'client:' || coalesce(new.client_id, old.client_id));
      return null;
    end $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function oauth_client_secret_changed() returns trigger language plpgsql as $$
    begin
      perform pg_notify('oauth_record_changes', 'client:' || coalesce(new.client_id, old.client_id));
      return null;
    end $$`);
}
