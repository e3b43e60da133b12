// An approval of a metadata-document or registered client covers what the administrator saw
// (src/cimd/approval.ts, docs/agents.md): the scopes, redirect URIs and links it was shown are
// recorded with the decision, and a document that asks for more later waits for review. The
// links a document or registration gives (policy_uri, tos_uri: what the consent page shows) are
// kept as last seen, as its scopes and redirect URIs are.
//
// Clients approved before this migration are taken to have approved what their row holds now —
// the scopes and redirect URIs of their document as last seen, which is what the review page and
// `clients show` were showing — and no links: links were not read from documents before, so no
// administrator saw one. A link such a client gives is a pending change until reviewed.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('cimd_clients', (t) => {
    t.text('policy_uri'); // the links as last seen (null: none)
    t.text('tos_uri');
    // What the approval covered: {scopes, redirect_uris, policy_uri, tos_uri}; null until approved.
    t.jsonb('approved');
    // The fingerprint of a pending change an administrator rejected: not shown again while the
    // document keeps asking for exactly that.
    t.text('change_rejected');
  });
  // A registered client's links were kept with its registration.
  await knex('cimd_clients').where('registered', true).update({ policy_uri: knex.raw("registration->>'policy_uri'"), tos_uri: knex.raw("registration->>'tos_uri'") });
  await recordExistingApprovals(knex);
}

/** What clients approved before this migration are taken to have approved (above). */
export async function recordExistingApprovals(knex: Knex): Promise<void> {
  await knex('cimd_clients')
    .where('status', 'approved')
    .whereNull('approved')
    .update({ approved: knex.raw("jsonb_build_object('scopes', scopes, 'redirect_uris', redirect_uris, 'policy_uri', null, 'tos_uri', null)") });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('cimd_clients', (t) => {
    t.dropColumn('policy_uri');
    t.dropColumn('tos_uri');
    t.dropColumn('approved');
    t.dropColumn('change_rejected');
  });
}
