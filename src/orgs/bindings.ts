// Grants bound to an organization and teams (issue 35 point 3; docs/gateways.md). A grant made
// in an organization's context carries a row in grant_bindings (migration 022) and a marked id, so
// that an unbound grant — every grant of an app without organizations — never costs a lookup.
// Bindings never change: a change of the installation or of a membership revokes the grants it
// affects (src/oauth/grants.ts revokeGrant), and the user authorizes again. That is what lets every
// instance keep them in memory with no invalidation, and lets the access token carry its binding
// (extraTokenClaims in src/oauth/provider.ts): the check reads it from the token, no round trip.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import { ConflictError } from '../errors.ts';
import { grantWithId } from '../seams/oidc-provider.ts';
import { POLICY } from '../settings.ts';

/** The marker of a bound grant's id. Library ids are nanoid's letters, digits, `-` and `_`: never a `.`. */
const BOUND_PREFIX = 'bound.';

export const isBoundGrantId = (grantId: string | undefined): grantId is string => grantId !== undefined && grantId.startsWith(BOUND_PREFIX);

/**
 * A new, unsaved Grant of the provider whose id is marked as bound. Bind it (bindings.bind) before
 * its first token is issued: a marked grant without a binding gives tokens bound to nothing.
 */
export function createBoundGrant(provider: Provider, { accountId, clientId }: { accountId: string; clientId: string }) {
  return grantWithId(provider, `${BOUND_PREFIX}${randomBytes(32).toString('base64url')}`, { accountId, clientId });
}

export interface Binding {
  accountId: string;
  clientId: string;
  /** null: teams outside any organization. */
  orgId: number | null;
  teamIds: number[];
  /** null: bound without an installation. */
  installationId: number | null;
}

/** The claims an access token of a bound grant carries (its `extra`): org_id and team_ids, as strings. */
export interface BindingClaims {
  org_id?: string;
  team_ids: string[];
}

/** The names of those claims: all the fast path may find in a token's extra (src/fast/assumptions.ts). */
export const BINDING_CLAIM_NAMES = ['org_id', 'team_ids'] as const;

/**
 * A binding's claims. A marked grant with no binding (not bound yet, or its row lost) is bound to
 * nothing: fail closed, never a token without limits.
 */
export function bindingClaims(binding: Binding | undefined): BindingClaims {
  if (!binding) return { team_ids: [] };
  const teamIds = binding.teamIds.map(String);
  return binding.orgId === null ? { team_ids: teamIds } : { org_id: String(binding.orgId), team_ids: teamIds };
}

export interface BoundGrant {
  grantId: string;
  accountId: string;
  clientId: string;
}

export interface BoundTo {
  orgId?: number;
  installationId?: number;
  clientId?: string;
  accountId?: string;
  /** Grants whose teams include this one. */
  teamId?: number;
}

export interface GrantBindings {
  /** Records a marked grant's binding (in the caller's transaction, if given). The same again is a no-op. */
  bind(db: Db | Knex.Transaction, grantId: string, binding: Binding): Promise<void>;
  /** A grant's binding: undefined for an unbound grant (no read), from memory once read. */
  forGrant(grantId: string): Promise<Binding | undefined>;
  /** The bound grants matching every filter given (at least one). */
  grantsBoundTo(filter: BoundTo): Promise<BoundGrant[]>;
}

interface Row {
  grant_id: string;
  account_id: string;
  client_id: string;
  org_id: number | null;
  team_ids: number[];
  installation_id: number | null;
}

const fromRow = (row: Row): Binding => ({
  accountId: row.account_id,
  clientId: row.client_id,
  orgId: row.org_id,
  teamIds: row.team_ids.map(Number),
  installationId: row.installation_id,
});

const sameBinding = (a: Binding, b: Binding) =>
  a.accountId === b.accountId && a.clientId === b.clientId && a.orgId === b.orgId && a.installationId === b.installationId && a.teamIds.join() === b.teamIds.join();

const isId = (value: unknown) => Number.isSafeInteger(value) && (value as number) > 0;

/** At most this many bindings in memory (one per bound grant in use); the oldest go first. */
const KEEP_AT_MOST = POLICY.BINDINGS_KEPT.value;

export function grantBindings(db: Db, keepAtMost = KEEP_AT_MOST): GrantBindings {
  // Bindings never change, so what was read stays true: no invalidation. Only found rows are kept:
  // a grant not bound yet (its transaction not committed) is read again next time.
  const known = new Map<string, Binding>();
  const reading = new Map<string, Promise<Binding | undefined>>();

  function keep(grantId: string, binding: Binding) {
    if (known.size >= keepAtMost) known.delete(known.keys().next().value!);
    known.set(grantId, binding);
  }

  async function read(grantId: string): Promise<Binding | undefined> {
    const row = (await db('grant_bindings').where({ grant_id: grantId }).first()) as Row | undefined;
    return row && fromRow(row);
  }

  return {
    async bind(trx, grantId, binding) {
      if (!isBoundGrantId(grantId)) throw new Error('only a grant made by createBoundGrant can be bound');
      if (binding.orgId !== null && !isId(binding.orgId)) throw new Error('a binding needs an organization id or null');
      if (binding.installationId !== null && !isId(binding.installationId)) throw new Error('a binding needs an installation id or null');
      if (!binding.teamIds.every(isId)) throw new Error('team ids are positive integers');
      const teamIds = [...new Set(binding.teamIds)].sort((a, b) => a - b);
      const inserted = await trx('grant_bindings')
        .insert({
          grant_id: grantId,
          account_id: binding.accountId,
          client_id: binding.clientId,
          org_id: binding.orgId,
          team_ids: JSON.stringify(teamIds),
          installation_id: binding.installationId,
        })
        .onConflict('grant_id')
        .ignore()
        .returning('grant_id');
      if (inserted.length) return;
      const existing = (await trx('grant_bindings').where({ grant_id: grantId }).first()) as Row | undefined;
      if (!existing || !sameBinding(fromRow(existing), { ...binding, teamIds })) throw new ConflictError("a grant's binding never changes: revoke the grant and authorize again");
    },

    async forGrant(grantId) {
      if (!isBoundGrantId(grantId)) return undefined;
      const found = known.get(grantId);
      if (found) return found;
      // Concurrent first uses of one grant (a burst of refreshes) share the read.
      let pending = reading.get(grantId);
      if (!pending) {
        pending = read(grantId).finally(() => reading.delete(grantId));
        reading.set(grantId, pending);
      }
      const binding = await pending;
      if (binding) keep(grantId, binding);
      return binding;
    },

    async grantsBoundTo(filter) {
      const { orgId, installationId, clientId, accountId, teamId } = filter;
      if ([orgId, installationId, clientId, accountId, teamId].every((v) => v === undefined)) throw new Error('grantsBoundTo needs at least one filter');
      const query = db('grant_bindings').select('grant_id', 'account_id', 'client_id').orderBy('grant_id');
      if (orgId !== undefined) query.where('org_id', orgId);
      if (installationId !== undefined) query.where('installation_id', installationId);
      if (clientId !== undefined) query.where('client_id', clientId);
      if (accountId !== undefined) query.where('account_id', accountId);
      if (teamId !== undefined) query.whereRaw('team_ids @> ?::jsonb', [JSON.stringify([teamId])]);
      const rows = (await query) as Row[];
      return rows.map((row) => ({ grantId: row.grant_id, accountId: row.account_id, clientId: row.client_id }));
    },
  };
}
