// Client ID metadata documents (docs/agents.md): every URL client_id the server has fetched and
// used, with what its document said when last seen and an administrator's decision on it; and the
// hosts whose documents are refused. The document itself is fetched (and cached in memory), never
// trusted from here: these rows are for review and for the tier a client gets.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('cimd_clients', (t) => {
    t.text('client_id').primary(); // the document's URL
    t.text('host').notNullable(); // its host, lower-cased (what a block applies to)
    t.text('status').notNullable().defaultTo('unreviewed'); // unreviewed | approved | rejected
    t.text('name'); // client_name as last seen
    t.jsonb('redirect_uris').notNullable().defaultTo('[]');
    t.jsonb('scopes').notNullable().defaultTo('[]'); // what the document asks for (its `scope`)
    t.text('token_endpoint_auth_method');
    // Registered through open dynamic registration (RFC 7591) rather than a document.
    t.boolean('registered').notNullable().defaultTo(false);
    t.jsonb('registration'); // a registered client's metadata (it has no document to fetch)
    t.timestamp('first_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('first_token_at', { useTz: true }); // the dynamic registration sweep keeps only those with one
    t.timestamp('decided_at', { useTz: true });
    t.text('decided_by');
    t.index(['status', 'last_seen_at']);
    t.index(['host']);
  });
  await knex.schema.createTable('cimd_blocked_hosts', (t) => {
    t.text('host').primary();
    t.text('blocked_by').notNullable();
    t.text('reason');
    t.timestamp('blocked_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('cimd_blocked_hosts');
  await knex.schema.dropTable('cimd_clients');
}
