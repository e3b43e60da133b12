// A leak report names its client in the table that holds it (issue 47: one client directory):
// the registry's (oauth_clients) or a metadata-document or registered client's (cimd_clients).
// Reports used to reference oauth_clients only, so a report of another kind's credential failed
// to be written (and the user never saw its notice). Each reference deletes its reports with
// its client, as before; exactly one of the two is set.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table credential_leak_reports alter column client_id drop not null');
  await knex.schema.alterTable('credential_leak_reports', (t) => {
    t.text('cimd_client_id').references('client_id').inTable('cimd_clients').onDelete('CASCADE');
  });
  await knex.raw('alter table credential_leak_reports add constraint credential_leak_reports_one_client check ((client_id is null) <> (cimd_client_id is null))');
}

export async function down(knex: Knex): Promise<void> {
  await knex('credential_leak_reports').whereNull('client_id').delete();
  await knex.raw('alter table credential_leak_reports drop constraint credential_leak_reports_one_client');
  await knex.schema.alterTable('credential_leak_reports', (t) => {
    t.dropColumn('cimd_client_id');
  });
  await knex.raw('alter table credential_leak_reports alter column client_id set not null');
}
