// A third kind of client: a resource server (an API, a gateway) that introspects tokens issued to
// other clients (RFC 7662 2.1). It has no redirect URIs and obtains no tokens.
import type { Knex } from 'knex';

async function kindCheck(knex: Knex): Promise<string> {
  const { rows } = await knex.raw(
    `select conname from pg_constraint where conrelid = 'oauth_clients'::regclass and contype = 'c' and pg_get_constraintdef(oid) like '%kind%'`,
  );
  return rows[0].conname as string;
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table oauth_clients drop constraint "${await kindCheck(knex)}"`);
  await knex.raw(`alter table oauth_clients add constraint oauth_clients_kind_check check (kind in ('confidential', 'public', 'resource_server'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`alter table oauth_clients drop constraint "${await kindCheck(knex)}"`);
  await knex.raw(`alter table oauth_clients add constraint oauth_clients_kind_check check (kind in ('confidential', 'public'))`);
}
