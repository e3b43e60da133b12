// Token-signing key rotation (`keys rotate`, docs/operations.md): each key is published from its
// creation (created_at), signs from sign_from, and leaves the key set after retire_after (set when
// a newer key replaces it). Keys before this signed from their creation, and none is retiring.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('signing_keys', (t) => {
    t.timestamp('sign_from', { useTz: true });
    t.timestamp('retire_after', { useTz: true });
  });
  await knex('signing_keys').update({ sign_from: knex.ref('created_at') });
  await knex.schema.alterTable('signing_keys', (t) => {
    t.timestamp('sign_from', { useTz: true }).notNullable().defaultTo(knex.fn.now()).alter();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('signing_keys', (t) => {
    t.dropColumn('sign_from');
    t.dropColumn('retire_after');
  });
}
