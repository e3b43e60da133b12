// The device flow is off (and never was part of this service): its user_code lookup column goes.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oidc_models', (t) => {
    t.dropColumn('user_code');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oidc_models', (t) => {
    t.text('user_code');
  });
}
