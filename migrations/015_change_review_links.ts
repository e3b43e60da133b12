// What an administrator reviews in a pending change grows by two things that widen what users see
// or grant: a legacy client's return to full access (its scopes back to none), and new privacy-
// policy or terms links (shown next to "Approved by …" on the consent page).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_client_changes', (t) => {
    t.boolean('to_full_access').notNullable().defaultTo(false);
    t.jsonb('set_links'); // {"policy_uri", "tos_uri"} to apply when approved; null: the links stay
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_client_changes', (t) => {
    t.dropColumn('to_full_access');
    t.dropColumn('set_links');
  });
}
