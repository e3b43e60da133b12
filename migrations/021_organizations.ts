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

  // A team of an organization takes only that organization's members, and leaving the
  // organization leaves its teams — also for rows a platform sync writes straight into the tables
  // (docs/organizations.md), not only through src/orgs/store.ts.
  await knex.raw(`
    create function team_membership_check_org() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from teams t where t.id = new.team_id and t.org_id is not null
                 and not exists (select 1 from org_memberships m where m.org_id = t.org_id and m.user_id = new.user_id)) then
        raise exception 'user % is not a member of the organization of team %', new.user_id, new.team_id using errcode = 'check_violation';
      end if;
      return new;
    end $$`);
  await knex.raw(`
    create trigger team_memberships_check_org before insert or update on team_memberships
    for each row execute function team_membership_check_org()`);
  await knex.raw(`
    create function org_membership_ended() returns trigger language plpgsql as $$
    begin
      delete from team_memberships tm using teams t where tm.team_id = t.id and t.org_id = old.org_id and tm.user_id = old.user_id;
      return null;
    end $$`);
  await knex.raw(`
    create trigger org_memberships_ended after delete on org_memberships
    for each row execute function org_membership_ended()`);

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
  await knex.raw('drop function if exists team_membership_check_org()');
  await knex.raw('drop function if exists org_membership_ended()');
}
