// How the catalogue is shown to people: by whose data (you / teams / organization), by resource,
// viewing apart from changing.
import { describe, expect, it } from 'vitest';
import { ALL_SCOPES, groupScopes, scopeGrid, scopeShape } from '../../src/scopes.ts';

describe('scope presentation', () => {
  it('reads audience, resource and access from each name', () => {
    expect(scopeShape('EVENT_TYPE_WRITE')).toEqual({ name: 'EVENT_TYPE_WRITE', audience: 'you', resource: 'Event types', access: 'change' });
    expect(scopeShape('TEAM_MEMBERSHIP_READ')).toEqual({ name: 'TEAM_MEMBERSHIP_READ', audience: 'team', resource: 'Memberships', access: 'view' });
    expect(scopeShape('ORG_PROFILE_WRITE')).toMatchObject({ audience: 'org', resource: 'Teams', access: 'change' });
  });

  it('puts every catalogue scope in exactly one cell of the grid, view and change side by side', () => {
    const cells = scopeGrid().flatMap((g) => g.rows.flatMap((r) => [r.view?.name, r.change?.name])).filter(Boolean);
    expect(cells.sort()).toEqual([...ALL_SCOPES].sort());
    const you = scopeGrid().find((g) => g.audience === 'you')!;
    expect(you.rows.find((r) => r.resource === 'Bookings')).toMatchObject({ view: { name: 'BOOKING_READ' }, change: { name: 'BOOKING_WRITE' } });
  });

  it('groups granted scopes by audience, viewing first, and leaves unknown names out', () => {
    const groups = groupScopes(['ORG_BOOKING_WRITE', 'BOOKING_WRITE', 'BOOKING_READ', 'NOT_A_SCOPE', 'legacy:full-access']);
    expect(groups.map((g) => g.audience)).toEqual(['you', 'org']);
    expect(groups[0]!.scopes.map((s) => s.name)).toEqual(['BOOKING_READ', 'BOOKING_WRITE']);
    expect(groups[1]!.title).toBe('Everyone in your organization');
  });
});
