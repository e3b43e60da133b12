// Single-use forms (src/web/single-use.ts, issue 38 point 4): each submission of a state-changing
// form is claimed once, by a digest of (who, where, the form's nonce), with where its answer led.
// Kept a day (the forms' lifetime), then swept.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('form_submissions', (t) => {
    t.text('id').primary(); // sha256 (base64url): never the token itself
    t.text('location'); // where the first submission's answer led (null while it runs)
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('form_submissions');
}
