// The consent decision (src/oauth/consent.ts) without HTTP: facts as the consent steps read them
// (src/web/interactions.ts), the page's and Allow's decision from them. The organization's own
// rules are test/unit/consent-rules.test.ts's; the whole flow over HTTP, test/consent.test.ts and
// test/org-consent.test.ts.
import { describe, expect, it } from 'vitest';
import { allowDecision, boundGrantPlan, consentView, pageDecision, type ConsentFacts, type FoundGrant, type OrgGrantChoice } from '../../src/oauth/consent.ts';
import { ConflictError, InputError } from '../../src/errors.ts';
import { LEGACY_FULL_ACCESS } from '../../src/scopes.ts';

const CLIENT = { clientId: 'app', scope: 'PROFILE_READ BOOKING_READ TEAM_BOOKING_READ ORG_BOOKING_READ' };
const ORG = { facts: { org: { id: 7 } } };

function facts(over: Partial<ConsentFacts> = {}): ConsentFacts {
  return { client: CLIENT, optionalScopes: [], requested: ['PROFILE_READ', 'BOOKING_READ'], includeGrantedScopes: false, grant: undefined, orgs: undefined, userLimit: undefined, ...over };
}
const grant = (over: Partial<FoundGrant> = {}): FoundGrant => ({ id: 'grant-1', scopes: ['PROFILE_READ'], legacy: false, binding: undefined, ...over });
function granted(decision: ReturnType<typeof allowDecision>) {
  if (decision.kind !== 'grant') throw new Error(`expected a grant, got ${JSON.stringify(decision)}`);
  return decision;
}

describe('the limited tier (an unreviewed metadata-document or self-registered client)', () => {
  const unreviewed = { ...CLIENT, cimd_status: 'unreviewed' as const, cimd_host: 'app.example' };

  it('grants user scopes only: TEAM_ and ORG_ scopes are refused, even when the client declares them', () => {
    const decision = granted(allowDecision(facts({ client: unreviewed, requested: ['PROFILE_READ', 'TEAM_BOOKING_READ', 'ORG_BOOKING_READ'] }), []));
    expect(decision.granted).toEqual(['PROFILE_READ']);
    expect(decision.tokenScopes).toEqual(['PROFILE_READ']);
  });

  it('refuses with a 409 when it asks only for what its tier may not have, and nothing is granted', () => {
    expect(() => allowDecision(facts({ client: unreviewed, requested: ['TEAM_BOOKING_READ'] }), [])).toThrow(ConflictError);
  });

  it('once approved, has all its scopes', () => {
    const approved = { ...unreviewed, cimd_status: 'approved' as const };
    expect(granted(allowDecision(facts({ client: approved, requested: ['PROFILE_READ', 'TEAM_BOOKING_READ'] }), [])).granted).toEqual(['PROFILE_READ', 'TEAM_BOOKING_READ']);
  });
});

describe('the user cap', () => {
  const full = 'This app has not been reviewed yet and already has as many users as an unreviewed app may have (2).';

  it('reached: no page and no grant, the app hears access_denied with the reason, before anything else is decided', () => {
    // Even a request the tier would refuse, or one in an organization's context, meets the cap first.
    const capped = facts({ userLimit: full, requested: ['TEAM_BOOKING_READ'], orgs: { all: [ORG], offered: [] } });
    expect(pageDecision(capped)).toEqual({ kind: 'denied', description: full });
    expect(allowDecision(capped, [])).toEqual({ kind: 'denied', description: full });
  });

  it('not reached: the page and the grant as for any client', () => {
    expect(pageDecision(facts()).kind).toBe('page');
    expect(allowDecision(facts(), []).kind).toBe('grant');
  });
});

describe('optional scopes', () => {
  const withOptional = facts({ optionalScopes: ['BOOKING_READ', 'TEAM_BOOKING_READ'] });

  it('the page shows the optional ones among those asked', () => {
    expect(consentView(withOptional).optional).toEqual(['BOOKING_READ']);
  });

  it('an optional scope left unticked is not granted; a ticked one is; a required one always is', () => {
    expect(granted(allowDecision(withOptional, [])).granted).toEqual(['PROFILE_READ']);
    expect(granted(allowDecision(withOptional, ['BOOKING_READ'])).granted).toEqual(['PROFILE_READ', 'BOOKING_READ']);
  });

  it('ticking a scope that was not shown as optional adds nothing', () => {
    expect(granted(allowDecision(facts({ requested: ['PROFILE_READ'] }), ['BOOKING_READ'])).granted).toEqual(['PROFILE_READ']);
  });

  it('every scope unticked: a 400, nothing granted', () => {
    expect(() => allowDecision(facts({ requested: ['BOOKING_READ'], optionalScopes: ['BOOKING_READ'] }), [])).toThrow(InputError);
  });
});

describe('grant reuse and incremental consent', () => {
  it('Allow adds to the scoped grant the request names: its id is reused', () => {
    expect(granted(allowDecision(facts({ grant: grant() }), [])).reuse).toBe('grant-1');
  });

  it('include_granted_scopes=true with nothing new: the page asks for all requested, the token says all', () => {
    const all = facts({ includeGrantedScopes: true, grant: grant({ scopes: ['PROFILE_READ', 'BOOKING_READ'] }) });
    expect(consentView(all)).toMatchObject({ shown: ['PROFILE_READ', 'BOOKING_READ'], held: [] });
    const decision = granted(allowDecision(all, []));
    expect(decision).toMatchObject({ reuse: 'grant-1', granted: ['PROFILE_READ', 'BOOKING_READ'], tokenScopes: ['PROFILE_READ', 'BOOKING_READ'] });
  });

  it('include_granted_scopes=true with something new: the page shows only the new, the token says what the grant held too', () => {
    const more = facts({ includeGrantedScopes: true, requested: ['BOOKING_READ'], grant: grant({ scopes: ['PROFILE_READ'] }) });
    expect(consentView(more)).toMatchObject({ shown: ['BOOKING_READ'], held: ['PROFILE_READ'] });
    expect(granted(allowDecision(more, []))).toMatchObject({ reuse: 'grant-1', granted: ['BOOKING_READ'], tokenScopes: ['PROFILE_READ', 'BOOKING_READ'] });
  });

  it('held scopes the client no longer has are not said again', () => {
    const narrowed = facts({ includeGrantedScopes: true, requested: ['BOOKING_READ'], grant: grant({ scopes: ['PROFILE_READ', 'EVENT_TYPE_READ'] }) });
    expect(consentView(narrowed).held).toEqual(['PROFILE_READ']);
  });

  it('a grant bound to an organization is not joined outside it: a new grant', () => {
    const bound = facts({ includeGrantedScopes: true, grant: grant({ binding: { orgId: 7, teamIds: [1], installationId: 3 } }) });
    expect(consentView(bound).held).toEqual([]);
    expect(granted(allowDecision(bound, [])).reuse).toBeUndefined();
  });
});

describe('legacy full access', () => {
  const legacyClient = { clientId: 'old', scope: LEGACY_FULL_ACCESS };

  it('is granted as full access and audited so, on its own grant', () => {
    const decision = granted(allowDecision(facts({ client: legacyClient, requested: [LEGACY_FULL_ACCESS] }), []));
    expect(decision).toMatchObject({ legacy: true, granted: [LEGACY_FULL_ACCESS], audit: { scopes: 'full access (legacy)' }, reuse: undefined });
  });

  it('never merges with a scoped grant, nor a scoped request with a legacy grant', () => {
    const legacyOnScoped = facts({ client: legacyClient, requested: [LEGACY_FULL_ACCESS], grant: grant() });
    expect(granted(allowDecision(legacyOnScoped, [])).reuse).toBeUndefined();
    const scopedOnLegacy = facts({ grant: grant({ scopes: [LEGACY_FULL_ACCESS], legacy: true }), includeGrantedScopes: true });
    expect(granted(allowDecision(scopedOnLegacy, []))).toMatchObject({ reuse: undefined, legacy: false, audit: { scopes: ['PROFILE_READ', 'BOOKING_READ'] } });
    // A legacy grant is never the "existing" grant the page adds to.
    expect(consentView(scopedOnLegacy)).toMatchObject({ existing: undefined, held: [] });
  });

  it('a legacy grant is joined by another legacy Allow', () => {
    expect(granted(allowDecision(facts({ client: legacyClient, requested: [LEGACY_FULL_ACCESS], grant: grant({ scopes: [LEGACY_FULL_ACCESS], legacy: true }) }), [])).reuse).toBe('grant-1');
  });
});

describe('in an organization\'s context', () => {
  const orgRequest = { requested: ['PROFILE_READ', 'TEAM_BOOKING_READ'] };

  it('every organization blocks the app: no page, access_denied', () => {
    expect(pageDecision(facts({ ...orgRequest, orgs: { all: [ORG], offered: [] } }))).toEqual({ kind: 'denied', description: 'Your organization does not allow this app.' });
  });

  it('Allow is the organization\'s to decide (checkOrgPost), after the tier', () => {
    expect(allowDecision(facts({ ...orgRequest, orgs: { all: [ORG], offered: [ORG] } }), []).kind).toBe('organization');
  });

  it('a bound grant is joined only in its organization, which is then the one offered', () => {
    const other = { facts: { org: { id: 8 } } };
    const bound = grant({ scopes: ['TEAM_BOOKING_READ'], binding: { orgId: 7, teamIds: [1], installationId: 3 } });
    const inIt = consentView(facts({ requested: ['PROFILE_READ', 'TEAM_BOOKING_READ'], includeGrantedScopes: true, grant: bound, orgs: { all: [ORG, other], offered: [ORG, other] } }));
    expect(inIt.held).toEqual(['TEAM_BOOKING_READ']);
    expect(inIt.orgs!.offered).toEqual([ORG]);
    const elsewhere = consentView(facts({ requested: ['PROFILE_READ', 'TEAM_BOOKING_READ'], includeGrantedScopes: true, grant: bound, orgs: { all: [other], offered: [other] } }));
    expect(elsewhere.held).toEqual([]);
  });

  it('the org-bound grant is added to only with the very same organization, installation and teams', () => {
    const bound = grant({ scopes: ['TEAM_BOOKING_READ'], binding: { orgId: 7, teamIds: [1, 2], installationId: 3 } });
    const view = consentView(facts({ requested: ['PROFILE_READ', 'TEAM_BOOKING_READ'], includeGrantedScopes: true, grant: bound, orgs: { all: [ORG], offered: [ORG] } }));
    const choice = { orgId: 7, scopes: ['PROFILE_READ'], teamIds: [2, 1], installs: false };
    expect(boundGrantPlan(view, choice, 3)).toEqual({ reuse: 'grant-1', tokenScopes: ['TEAM_BOOKING_READ', 'PROFILE_READ'], binding: { orgId: 7, teamIds: [2, 1], installationId: 3 } });
    // Another team, another installation, or an admin's install: a new grant bound to the choice.
    const others: Array<[OrgGrantChoice, number]> = [[{ ...choice, teamIds: [1] }, 3], [choice, 4], [{ ...choice, installs: true }, 3]];
    for (const [other, installationId] of others) {
      expect(boundGrantPlan(view, other, installationId)).toEqual({ reuse: undefined, tokenScopes: ['PROFILE_READ'], binding: { orgId: 7, teamIds: other.teamIds, installationId } });
    }
  });
});
