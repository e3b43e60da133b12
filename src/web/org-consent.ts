// The consent page in an organization's context (issue 35 points 1, 2, 4, 7; docs/org-consent.md):
// what the page offers for each of the user's organizations, and the check of what Allow posted,
// both from current data with the same rules (src/orgs/consent-rules.ts).
import type { Context } from 'koa';
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import { findUserById } from '../accounts/store.ts';
import type { CachedDb } from '../storage/record-cache.ts';
import { describeScope, scopeSatisfies } from '../scopes.ts';
import { checkChoice, isOrgAdmin, isOrgScope, orgOutcome, type OrgOutcome } from '../orgs/consent-rules.ts';
import { lockInstallationForBinding } from '../orgs/installations.ts';
import { orgFactsFor, type OrgConsentFacts } from '../orgs/consent-data.ts';
import { ConflictError, ForbiddenError, InputError } from '../errors.ts';
import { field, fields } from './forms.ts';

type Offered = { facts: OrgConsentFacts; outcome: Exclude<OrgOutcome, { kind: 'blocked' }> };

/** The organizations this request is about, with what each allows; undefined when none is involved. */
export async function orgsInvolved(db: Db, userId: number, clientId: string, clientScopes: string[], requested: string[]) {
  if (!requested.some(isOrgScope)) return undefined;
  const all = await orgFactsFor(db, userId, clientId);
  if (all.length === 0) return undefined; // no organization or team of one: as before this feature
  const offered = all
    .map((facts) => ({ facts, outcome: orgOutcome(facts, clientScopes, requested) }))
    .filter((o): o is Offered => o.outcome.kind !== 'blocked');
  return { all, offered };
}

/**
 * The pages' Content-Security-Policy allows images from this site only; the consent page also
 * shows the organizations' logos (an operator's https link, or http on localhost: `orgs create
 * --logo-url`), so it allows exactly their origins, on this page only.
 */
export function allowLogos(ctx: Context, logoUrls: (string | null)[]): void {
  const origins = new Set<string>();
  for (const url of logoUrls) {
    try {
      const parsed = url ? new URL(url) : undefined;
      if (parsed && (parsed.protocol === 'https:' || parsed.protocol === 'http:')) origins.add(parsed.origin);
    } catch {
      // not a link: the image simply does not load
    }
  }
  const csp = ctx.response.get('Content-Security-Policy');
  if (!origins.size || !csp.includes('img-src ')) return;
  ctx.set('Content-Security-Policy', csp.replace(/img-src ([^;]*)/, (_, sources: string) => `img-src ${sources} ${[...origins].join(' ')}`));
}

/** Form field names, per organization, so that choices made under another option are never read. */
export const teamField = (orgId: number) => `team_${orgId}`;
export const allTeamsField = (orgId: number) => `all_teams_${orgId}`;
export const installationField = (orgId: number) => `installation_${orgId}`;

/** The organization part of the consent page. */
export async function orgOptions(users: CachedDb, offered: Offered[], preferOrg: number | undefined) {
  const checkedId = offered.some((o) => o.facts.org.id === preferOrg) ? preferOrg : offered[0]?.facts.org.id;
  return Promise.all(
    offered.map(async ({ facts, outcome }) => {
      const { org, installation } = facts;
      const teamNames = (ids: number[]) => facts.orgTeams.filter((t) => ids.includes(t.id)).map((t) => t.name);
      let installedBy: string | undefined;
      if (installation) {
        const who = installation.installedBy === null ? undefined : await findUserById(users, String(installation.installedBy));
        installedBy = installation.installedBy === null ? 'the operators' : (who?.name || who?.email || 'a former administrator');
      }
      const grant = outcome.kind === 'grant' ? outcome : undefined;
      // Preselected: an installation's teams for an admin; otherwise every team on offer.
      const preset = grant?.admin && installation ? (installation.allTeams ? grant.teams.map((t) => t.id) : installation.teamIds) : (grant?.teams.map((t) => t.id) ?? []);
      return {
        id: org.id,
        name: org.name,
        logoUrl: org.logoUrl,
        checked: org.id === checkedId,
        needsApproval: outcome.kind === 'needs_approval',
        admin: grant?.admin ?? false,
        installs: grant?.installs ?? false,
        installedBy,
        installedFor: installation ? (installation.allTeams ? 'all teams' : teamNames(installation.teamIds).join(', ') || 'no team') : undefined,
        installationValue: installation ? String(installation.id) : 'none',
        teams: (grant?.teams ?? []).map((t) => ({ id: t.id, name: t.name, checked: preset.includes(t.id) })),
        mayChooseAllTeams: grant?.mayChooseAllTeams ?? false,
        allTeamsChecked: Boolean(grant?.admin && installation?.allTeams),
        withheld: (grant?.withheld ?? []).map((s) => describeScope(s).description),
        fields: { team: teamField(org.id), allTeams: allTeamsField(org.id), installation: installationField(org.id) },
      };
    }),
  );
}

export type OrgDecision =
  | { kind: 'request'; facts: OrgConsentFacts; scopes: string[] }
  | { kind: 'grant'; facts: OrgConsentFacts; scopes: string[]; teamIds: number[]; allTeams: boolean; installs: boolean };

/**
 * What Allow posted for the organization, checked against current data: an organization of the
 * user's that does not block the app, the same installation the page showed, teams on offer, "all
 * teams" only for its admins. Throws a 400/403/409 that changes nothing.
 */
export function checkOrgPost(ctx: Context, offered: Offered[], all: OrgConsentFacts[], optional: string[]): OrgDecision {
  const raw = field(ctx, 'org');
  if (!/^\d{1,9}$/.test(raw)) throw new InputError('choose the organization this app may reach');
  const orgId = Number(raw);
  const chosen = offered.find((o) => o.facts.org.id === orgId);
  if (!chosen) {
    if (all.some((f) => f.org.id === orgId)) throw new ForbiddenError('your organization does not allow this app; nothing was shared');
    throw new ForbiddenError('you are not in this organization; nothing was shared');
  }
  const { facts, outcome } = chosen;
  // The page showed an installation (or none); a different one now (uninstalled, reinstalled, a
  // concurrent change) means the page said something that is no longer true.
  const shown = field(ctx, installationField(orgId));
  const current = facts.installation ? String(facts.installation.id) : 'none';
  if (shown !== current) throw new ConflictError(`${facts.org.name}'s installation of this app changed while the page was open; nothing was shared. Please start again from the app`);
  if (outcome.kind === 'needs_approval') return { kind: 'request', facts, scopes: outcome.scopes };

  const rawTeams = fields(ctx, teamField(orgId));
  if (rawTeams.some((t) => !/^\d{1,9}$/.test(t))) throw new InputError('the teams chosen are not valid team ids');
  const allTeams = field(ctx, allTeamsField(orgId)) === 'yes';
  const result = checkChoice(outcome, optional, { ticked: fields(ctx, 'optional_scope'), teamIds: rawTeams.map(Number), allTeams });
  if (!result.ok) throw result.status === 403 ? new ForbiddenError(`${result.message}; nothing was shared`) : new InputError(result.message);
  return { kind: 'grant', facts, ...result };
}

/**
 * Re-read, locked, in the transaction that binds a grant (src/web/interactions.ts): the
 * organization's policy, the installation, the user's memberships. A change that committed first
 * is seen (ConflictError, the caller revokes the grant); one that comes later waits for the
 * binding to commit and then revokes the grant with the others (src/orgs/installations.ts).
 */
export async function checkStillAllowed(trx: Knex.Transaction, decision: Extract<OrgDecision, { kind: 'grant' }>, userId: number, installationId: number | null) {
  const { org, role } = decision.facts;
  const changed = () => new ConflictError(`${org.name} changed what this app may reach while you were allowing it; nothing was shared. Please start again from the app`);
  const policy = (await trx('organizations').where('id', org.id).forShare().first('app_policy'))?.app_policy;
  if (!policy || policy === 'block' || (policy === 'approval' && installationId === null && !isOrgAdmin(role))) throw changed();
  if (installationId !== null) {
    const installation = await lockInstallationForBinding(trx, installationId);
    if (!installation.allTeams && decision.teamIds.some((t) => !installation.teamIds.includes(t))) throw changed();
    const installed = new Set(installation.scopes);
    if (decision.scopes.some((s) => isOrgScope(s) && !scopeSatisfies(installed, s))) throw changed();
  }
  if (role) {
    const now = await trx('org_memberships').where({ org_id: org.id, user_id: userId }).forShare().first('role');
    if (!now || isOrgAdmin(now.role) !== isOrgAdmin(role)) throw changed();
  }
  if (!isOrgAdmin(role) && decision.teamIds.length) {
    const still = await trx('team_memberships').where('user_id', userId).whereIn('team_id', decision.teamIds).forShare().select('team_id');
    if (still.length !== new Set(decision.teamIds).size) throw changed();
  }
}
