// Organizations, teams and their memberships (synced from the scheduling platform, or made by the
// operator scripts), the apps an organization has installed, and members' requests for apps that
// need an admin's approval (docs/organizations.md). Also which of a client's scopes are optional.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('organizations', (t) => {
    t.increments('id').primary();
    t.text('name').notNullable();
    t.text('app_policy').notNullable().defaultTo('allow').checkIn(['allow', 'approval', 'block']);
    t.text('logo_url');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('teams', (t) => {
    t.increments('id').primary();
    t.integer('org_id').references('id').inTable('organizations').onDelete('CASCADE'); // null: a team of no organization
    t.text('name').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id']);
  });

  await knex.schema.createTable('org_memberships', (t) => {
    t.integer('org_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE');
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('role').notNullable().checkIn(['owner', 'admin', 'member']);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'user_id']);
    t.index(['user_id']); // the consent page asks "which organizations is this user in"
  });

  await knex.schema.createTable('team_memberships', (t) => {
    t.integer('team_id').notNullable().references('id').inTable('teams').onDelete('CASCADE');
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('role').notNullable().checkIn(['admin', 'member']);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['team_id', 'user_id']);
    t.index(['user_id']);
  });

  await knex.schema.createTable('app_installations', (t) => {
    t.increments('id').primary();
    t.text('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    t.integer('org_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE');
    t.boolean('all_teams').notNullable().defaultTo(false); // every team of the organization, present and future
    t.jsonb('team_ids').notNullable().defaultTo('[]'); // array of team ids, when not all_teams
    t.jsonb('scopes').notNullable().defaultTo('[]');
    t.text('status').notNullable().defaultTo('active').checkIn(['active', 'removed']);
    t.integer('installed_by'); // a user id; null: the operator. No foreign key: the record outlives the user.
    t.timestamp('installed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id']);
    t.index(['client_id']);
  });
  // Removed installations stay as history; only one may be active per app and organization.
  await knex.raw(`create unique index app_installations_one_active on app_installations (client_id, org_id) where status = 'active'`);

  await knex.schema.createTable('installation_requests', (t) => {
    t.increments('id').primary();
    t.text('client_id').notNullable().references('id').inTable('oauth_clients').onDelete('CASCADE');
    t.integer('org_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE');
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.jsonb('scopes').notNullable().defaultTo('[]');
    t.text('status').notNullable().defaultTo('pending').checkIn(['pending', 'approved', 'dismissed']);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id', 'status']);
  });
  await knex.raw(`create unique index installation_requests_one_pending on installation_requests (client_id, org_id, user_id) where status = 'pending'`);

  // Scopes (a subset of `scopes`) the user may untick on the consent page.
  await knex.schema.alterTable('oauth_clients', (t) => t.jsonb('optional_scopes').notNullable().defaultTo('[]'));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => t.dropColumn('optional_scopes'));
  for (const table of ['installation_requests', 'app_installations', 'team_memberships', 'org_memberships', 'teams', 'organizations']) {
    await knex.schema.dropTableIfExists(table);
  }
}
