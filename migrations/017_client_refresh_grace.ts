// A per-client refresh grace window (`clients set-refresh-grace`), in seconds: 0 turns it off for
// the client; null means the default (REFRESH_GRACE_SECONDS, lower for public clients; see
// src/oauth/refresh-grace.ts).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.integer('refresh_grace_seconds').checkBetween([0, 60]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.dropColumn('refresh_grace_seconds');
  });
}
