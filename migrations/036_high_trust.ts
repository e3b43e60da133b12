// The high-trust profile per client (FAPI 2.0 Security Profile, docs/security.md#the-high-trust-profile):
// a client marked so must push its requests, use PKCE, authenticate with keys and prove a DPoP
// key at the token endpoint. A registry client's mark (clients set-high-trust, the developer
// page) and an administrator's for a metadata-document or registered one.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  for (const table of ['oauth_clients', 'cimd_clients']) {
    await knex.schema.alterTable(table, (t) => {
      t.boolean('high_trust').notNullable().defaultTo(false);
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['oauth_clients', 'cimd_clients']) {
    await knex.schema.alterTable(table, (t) => {
      t.dropColumn('high_trust');
    });
  }
}
