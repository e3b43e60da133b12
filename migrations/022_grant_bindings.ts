// Grants made in an organization's (or its teams') context are bound to it (issue 35 point 3):
// one row per bound grant, never changed — a change of the installation or the memberships
// revokes the grants it affects (src/orgs/bindings.ts). Bound grants have marked ids, so an
// unbound grant never costs a lookup here. No foreign keys to organizations or installations
// (migration 021): a binding is read by grant id, and a revoked grant's row is harmless.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('grant_bindings', (t) => {
    t.text('grant_id').primary();
    t.text('account_id').notNullable();
    t.text('client_id').notNullable();
    t.integer('org_id'); // null: teams outside any organization
    t.jsonb('team_ids').notNullable().defaultTo('[]'); // numbers
    t.integer('installation_id'); // null: bound without an installation
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id'], 'grant_bindings_org_id');
    t.index(['installation_id'], 'grant_bindings_installation_id');
    t.index(['account_id'], 'grant_bindings_account_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('grant_bindings');
}
