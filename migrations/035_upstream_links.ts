// Users whose account source is an upstream OpenID provider (docs/accounts.md): each link names the
// upstream account by (issuer, subject) — never by e-mail — and one user has at most one account at
// each upstream. A user created by a first upstream sign-in has no password: password_hash may be
// null (such a user cannot sign in with a password until an operator sets one). A sign-in session
// started by the upstream keeps its ID token, the hint of the upstream's logout at sign-out.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('upstream_links', (t) => {
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('issuer').notNullable();
    t.text('subject').notNullable();
    t.timestamp('linked_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['issuer', 'subject']);
    t.unique(['user_id', 'issuer']);
  });
  await knex.schema.alterTable('users', (t) => {
    t.text('password_hash').nullable().alter();
  });
  await knex.schema.alterTable('web_sessions', (t) => {
    t.text('upstream_id_token');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('web_sessions', (t) => t.dropColumn('upstream_id_token'));
  await knex.schema.dropTable('upstream_links');
}
