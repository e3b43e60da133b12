// The consent decision (issue 48 item 4): what the consent page shows and what Allow grants, as
// pure functions over facts read beforehand from current data (src/web/interactions.ts reads them),
// so the rules are tested without HTTP (test/unit/consent.test.ts). The rules of one organization
// are src/orgs/consent-rules.ts; the limited tier's, src/cimd/tier.ts.
import { LEGACY_FULL_ACCESS } from '../scopes.ts';
import { tierScopes } from '../cimd/tier.ts';
import { grantedScopes, newScopes } from '../orgs/consent-rules.ts';
import { ConflictError, InputError } from '../errors.ts';

/** What a grant bound to an organization is bound to (src/orgs/bindings.ts); it never changes. */
export interface GrantBinding {
  /** null: teams outside any organization. */
  orgId: number | null;
  teamIds: number[];
  installationId: number | null;
}

/** The grant the request names (its grantId), as found now. */
export interface FoundGrant {
  id: string;
  scopes: string[];
  /** A pre-migration grant of full access (LEGACY_FULL_ACCESS). */
  legacy: boolean;
  binding: GrantBinding | undefined;
}

/** An organization on offer (src/web/org-consent.ts orgsInvolved): only its id matters here. */
export interface OfferedOrg {
  facts: { org: { id: number } };
}

export interface ConsentFacts<O extends OfferedOrg = OfferedOrg> {
  /** The client as the provider sees it now: its scopes and its tier (tierScopes). */
  client: { clientId: string; scope?: string | undefined };
  /** The scopes the client marked optional (its registry record). */
  optionalScopes: readonly string[];
  requested: readonly string[];
  /** include_granted_scopes=true: the grant is added to, and the token says all it holds. */
  includeGrantedScopes: boolean;
  grant: FoundGrant | undefined;
  /** The user's organizations involved (org-context consent), undefined when none is. */
  orgs: { all: readonly unknown[]; offered: O[] } | undefined;
  /** Why this user may not authorize the client now (the tier's user cap), or undefined. */
  userLimit: string | undefined;
}

/** What this consent is about: what the page shows, and what Allow adds to. */
export interface ConsentView<O extends OfferedOrg = OfferedOrg> {
  orgs: { all: readonly unknown[]; offered: O[] } | undefined;
  /** The scoped grant the request names (never a legacy one), which Allow may add to. */
  existing: FoundGrant | undefined;
  /** Scopes the grant holds that the token will say too (incremental consent); [] when nothing is new. */
  held: string[];
  /** The scopes the page asks for: the new ones, or all requested when nothing is new. */
  shown: string[];
  /** The client's optional scopes among those shown. */
  optional: string[];
}

const unique = (scopes: readonly string[]) => [...new Set(scopes)];

export function consentView<O extends OfferedOrg>(f: ConsentFacts<O>): ConsentView<O> {
  const clientScopes = f.client.scope?.split(' ') ?? [];
  const existing = f.grant && !f.grant.legacy ? f.grant : undefined;
  const binding = existing?.binding;
  // A bound grant is joined only in its organization; an unbound one only outside any.
  const joinable = f.orgs ? f.orgs.offered.some((o) => o.facts.org.id === binding?.orgId) : !binding;
  const held = f.includeGrantedScopes && existing && joinable ? existing.scopes.filter((s) => s && clientScopes.includes(s)) : [];
  const orgs = f.orgs && binding && held.length ? { ...f.orgs, offered: f.orgs.offered.filter((o) => o.facts.org.id === binding.orgId) } : f.orgs;
  const fresh = newScopes(f.requested, held);
  const shown = fresh.length ? fresh : [...f.requested];
  const optional = f.optionalScopes.filter((s) => shown.includes(s));
  return { orgs, existing, held: fresh.length ? held : [], shown, optional };
}

/** The app hears access_denied with this description; no page is shown. */
export interface Denied {
  kind: 'denied';
  description: string;
}

/** The consent page, or no page: the user cap reached, or every organization blocks the app. */
export function pageDecision<O extends OfferedOrg>(f: ConsentFacts<O>): Denied | { kind: 'page'; view: ConsentView<O> } {
  if (f.userLimit) return { kind: 'denied', description: f.userLimit };
  const view = consentView(f);
  if (view.orgs && view.orgs.offered.length === 0) return { kind: 'denied', description: 'Your organization does not allow this app.' };
  return { kind: 'page', view };
}

export interface Grant {
  kind: 'grant';
  /** What this Allow grants, in request order. */
  granted: string[];
  /** What the token is to say: what the grant held (incremental consent) and what was granted. */
  tokenScopes: string[];
  /** Full access of an unmigrated client: its own grant, never merged with a scoped one. */
  legacy: boolean;
  /** The grant added to (its id), or undefined for a new one. */
  reuse: string | undefined;
  /** The audit record's details (besides the grant's id). */
  audit: { scopes: string[] | 'full access (legacy)' };
}

/**
 * What Allow grants outside any organization, or that it is an organization's consent (then the
 * organization's choice decides: checkOrgPost, boundGrantPlan). `ticked`: the optional scopes left
 * ticked. Throws a 409 when the client may no longer be granted anything asked, a 400 when every
 * scope was unticked.
 */
export function allowDecision<O extends OfferedOrg>(f: ConsentFacts<O>, ticked: readonly string[]): Denied | Grant | { kind: 'organization'; view: ConsentView<O> & { orgs: NonNullable<ConsentView<O>['orgs']> } } {
  if (f.userLimit) return { kind: 'denied', description: f.userLimit };
  // What the client may have now (narrowed, migrated or suspended while the page was open), within
  // its tier: an unreviewed metadata-document client gets user scopes only.
  const allowed = new Set(tierScopes(f.client));
  const offered = f.requested.filter((s) => allowed.has(s));
  if (offered.length === 0) throw new ConflictError('what this app may ask for changed while the page was open; nothing was shared. Please start again from the app');
  const view = consentView(f);
  if (view.orgs) return { kind: 'organization', view: view as ConsentView<O> & { orgs: NonNullable<ConsentView<O>['orgs']> } };
  // Granular consent: the optional scopes the page showed are granted only when left ticked.
  const granted = grantedScopes(offered, view.optional, ticked);
  if (granted.length === 0) throw new InputError('choose at least one permission to share, or deny the request');
  const legacy = granted.includes(LEGACY_FULL_ACCESS);
  // A legacy grant and a scoped one are never merged: each kind has its own; nor is a grant bound
  // to an organization joined outside it.
  const reuse = f.grant && f.grant.legacy === legacy && !f.grant.binding ? f.grant.id : undefined;
  return { kind: 'grant', granted, tokenScopes: unique([...view.held, ...granted]), legacy, reuse, audit: { scopes: legacy ? 'full access (legacy)' : granted } };
}

/** The organization's choice checked (src/web/org-consent.ts checkOrgPost): a grant's part of it. */
export interface OrgGrantChoice {
  orgId: number;
  scopes: string[];
  teamIds: number[];
  /** Allow installs the app for the organization (or updates its installation) first. */
  installs: boolean;
}

const sameIds = (a: readonly number[], b: readonly number[]) => a.length === b.length && [...a].sort().join() === [...b].sort().join();

/**
 * A grant bound to the organization and teams chosen: the existing grant is added to only when it
 * is bound to the very same organization, installation and teams (a binding never changes);
 * otherwise a new bound grant. `installationId`: the installation after Allow's install, if any.
 */
export function boundGrantPlan(view: ConsentView, choice: OrgGrantChoice, installationId: number | null) {
  const binding = view.existing?.binding;
  const same = Boolean(!choice.installs && binding && binding.orgId === choice.orgId && binding.installationId === installationId && sameIds(binding.teamIds, choice.teamIds));
  return {
    reuse: same ? view.existing!.id : undefined,
    tokenScopes: unique([...(same ? view.held : []), ...choice.scopes]),
    binding: { orgId: choice.orgId as number | null, teamIds: choice.teamIds, installationId },
  };
}
