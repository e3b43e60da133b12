// The route policy of CONTRACT 4, row by row, and the scope rules it relies on.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { neededFor, type Need } from '../src/api/route-policy.ts';
import { ALL_SCOPES, isKnownScope, parseScopeList, scopeSatisfies } from '../src/oauth/scopes.ts';

const READS = ['GET', 'HEAD'];
const WRITES = ['POST', 'PUT', 'PATCH', 'DELETE'];

// One example path for each row (and each alternative within a row) of CONTRACT section 4.
const ROWS: Array<[path: string, family: string]> = [
  ['/v2/me', 'PROFILE_'],
  ['/v2/event-types', 'EVENT_TYPE_'],
  ['/v2/event-types/42', 'EVENT_TYPE_'],
  ['/v2/event-types/42/private-links/abc', 'EVENT_TYPE_'],
  ['/v2/event-types/42/webhooks', 'EVENT_TYPE_'],
  ['/v2/bookings/uid-1', 'BOOKING_'],
  ['/v2/bookings/uid-1/guests', 'BOOKING_'],
  ['/v2/schedules', 'SCHEDULE_'],
  ['/v2/schedules/7', 'SCHEDULE_'],
  ['/v2/out-of-office/3', 'SCHEDULE_'],
  ['/v2/calendars/busy-times', 'APPS_'],
  ['/v2/conferencing/zoom/connect', 'APPS_'],
  ['/v2/selected-calendars', 'APPS_'],
  ['/v2/destination-calendars/1', 'APPS_'],
  ['/v2/teams', 'TEAM_PROFILE_'],
  ['/v2/teams/5', 'TEAM_PROFILE_'],
  ['/v2/teams/5/event-types', 'TEAM_EVENT_TYPE_'],
  ['/v2/teams/5/event-types/9', 'TEAM_EVENT_TYPE_'],
  ['/v2/teams/5/bookings', 'TEAM_BOOKING_'],
  ['/v2/teams/5/schedules/2', 'TEAM_SCHEDULE_'],
  ['/v2/teams/5/memberships', 'TEAM_MEMBERSHIP_'],
  ['/v2/organizations/1/teams/5', 'TEAM_PROFILE_'],
  ['/v2/organizations/1/teams/5/event-types/9', 'TEAM_EVENT_TYPE_'],
  ['/v2/organizations/1/teams/5/bookings', 'TEAM_BOOKING_'],
  ['/v2/organizations/1/teams/5/schedules', 'TEAM_SCHEDULE_'],
  ['/v2/organizations/1/teams/5/memberships/8', 'TEAM_MEMBERSHIP_'],
  ['/v2/organizations/1/teams', 'ORG_PROFILE_'],
  ['/v2/organizations/1/event-types', 'ORG_EVENT_TYPE_'],
  ['/v2/organizations/1/bookings/77', 'ORG_BOOKING_'],
  ['/v2/organizations/1/schedules', 'ORG_SCHEDULE_'],
];

/** Whether a token holding `scopes` may make the call, by the policy alone. */
function allowed(method: string, path: string, scopes: string[]): boolean {
  const need: Need = neededFor(method, path);
  if (need.kind === 'public') return true;
  if (need.kind === 'deny') return false;
  return scopeSatisfies(new Set(scopes), need.scope);
}

describe('route policy, row by row', () => {
  it.each(ROWS)('%s needs %s*', (path, family) => {
    for (const method of READS) {
      expect(neededFor(method, path)).toEqual({ kind: 'scope', scope: `${family}READ` });
      expect(allowed(method, path, [`${family}READ`])).toBe(true);
      expect(allowed(method, path, [`${family}WRITE`])).toBe(false);
    }
    for (const method of WRITES) {
      expect(neededFor(method, path)).toEqual({ kind: 'scope', scope: `${family}WRITE` });
      expect(allowed(method, path, [`${family}READ`])).toBe(false);
      expect(allowed(method, path, [`${family}WRITE`])).toBe(true);
    }
    // Every other catalogue scope is useless here, except ORG_X where TEAM_X is needed.
    const others = ALL_SCOPES.filter((s) => !s.startsWith(family) && !(family.startsWith('TEAM_') && s.startsWith(`ORG_${family.slice(5)}`)));
    expect(allowed('GET', path, others)).toBe(false);
    expect(allowed('POST', path, others)).toBe(false);
  });

  it('lets ORG_X stand in for TEAM_X, never the other way round; memberships have no ORG scope', () => {
    expect(allowed('GET', '/v2/teams/5/bookings', ['ORG_BOOKING_READ'])).toBe(true);
    expect(allowed('DELETE', '/v2/organizations/1/teams/5/event-types/9', ['ORG_EVENT_TYPE_WRITE'])).toBe(true);
    expect(allowed('PATCH', '/v2/teams/5', ['ORG_PROFILE_WRITE'])).toBe(true);
    expect(allowed('GET', '/v2/organizations/1/bookings', ['TEAM_BOOKING_READ'])).toBe(false);
    expect(allowed('GET', '/v2/organizations/1/teams', ['TEAM_PROFILE_READ'])).toBe(false);
    expect(ALL_SCOPES.some((s) => s.startsWith('ORG_MEMBERSHIP'))).toBe(false);
    expect(allowed('GET', '/v2/teams/5/memberships', ['ORG_PROFILE_READ', 'ORG_BOOKING_READ'])).toBe(false);
  });

  it('lets the public booking operations through without a token, and nothing else of bookings', () => {
    for (const path of ['/v2/bookings', '/v2/bookings/uid-1/cancel', '/v2/bookings/uid-1/reschedule']) {
      expect(neededFor('POST', path)).toEqual({ kind: 'public' });
    }
    expect(neededFor('GET', '/v2/bookings')).toEqual({ kind: 'scope', scope: 'BOOKING_READ' });
    expect(neededFor('GET', '/v2/bookings/uid-1/cancel')).toEqual({ kind: 'scope', scope: 'BOOKING_READ' });
    expect(neededFor('POST', '/v2/bookings/uid-1/confirm')).toEqual({ kind: 'scope', scope: 'BOOKING_WRITE' });
    expect(neededFor('POST', '/v2/bookings/uid-1/cancel/extra')).toEqual({ kind: 'scope', scope: 'BOOKING_WRITE' });
  });

  it('refuses paths and methods that no rule covers', () => {
    for (const [method, path] of [
      ['GET', '/v2/users'],
      ['GET', '/v2/organizations/1'],
      ['GET', '/v2/organizations/1/memberships'],
      ['GET', '/v2/teams/5/unknown'],
      ['GET', '/v2/me/extra'],
      ['GET', '/v1/me'],
      ['GET', '/me'],
      ['GET', '/'],
      ['OPTIONS', '/v2/me'],
      ['TRACE', '/v2/me'],
      ['CONNECT', '/v2/me'],
    ] as const) {
      expect(neededFor(method, path).kind, `${method} ${path}`).toBe('deny');
    }
  });

  it('judges tricky paths on their normalised form or refuses them, never allowing by accident', () => {
    // Judged as written, after dropping the query and one trailing slash.
    expect(neededFor('GET', '/v2/me/')).toEqual({ kind: 'scope', scope: 'PROFILE_READ' });
    expect(neededFor('GET', '/v2/me?x=/../teams')).toEqual({ kind: 'scope', scope: 'PROFILE_READ' });
    expect(neededFor('POST', '/v2/bookings/a%20b/cancel')).toEqual({ kind: 'public' });
    // Refused.
    for (const path of [
      '/v2/me/../teams/1',
      '/v2/teams/1/../../me',
      '/v2/./me',
      '//v2/me',
      '/v2//me',
      '/v2/me//',
      '/v2/%2e%2e/teams/1',
      '/v2/bookings/%2e%2e/teams',
      '/v2/bookings/x%2Fcancel',
      '/v2/bookings/x%252Fcancel',
      '/v2/teams/1\\..\\me',
      '/v2/me%00',
      '/v2/bad%escape',
      '/V2/ME',
      '/v2/ME',
      '/v2/Teams/5',
    ]) {
      expect(neededFor('GET', path).kind, path).toBe('deny');
      expect(neededFor('POST', path).kind, path).toBe('deny');
    }
  });

  it('never grants a random path to a token without scopes, and never crashes', () => {
    const segment = fc.oneof(fc.constantFrom('v2', 'me', 'teams', 'bookings', 'cancel', '..', '.', '', '%2e', '%2F', '1'), fc.string());
    fc.assert(
      fc.property(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'get'), fc.array(segment, { maxLength: 7 }), (method, parts) => {
        const path = `/${parts.join('/')}`;
        const need = neededFor(method, path);
        if (need.kind === 'public') expect(method.toUpperCase()).toBe('POST');
        if (need.kind === 'scope') expect(isKnownScope(need.scope)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('scope parsing', () => {
  const scopeNames = fc.constantFrom(...ALL_SCOPES);
  const separator = fc.constantFrom(' ', ',', '  ', ', ', ' ,', '\t', ',,');

  it('yields the same set for any mix of separators, duplicates collapsed', () => {
    fc.assert(
      fc.property(fc.array(scopeNames, { minLength: 1, maxLength: 10 }), fc.array(separator, { minLength: 11, maxLength: 11 }), (names, seps) => {
        const joined = names.map((n, i) => `${n}${seps[i]}`).join('');
        expect(new Set(parseScopeList(joined))).toEqual(new Set(names));
        expect(parseScopeList(joined)).toHaveLength(new Set(names).size);
      }),
    );
  });

  it('never crashes on random input, and only catalogue names pass as known', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (value) => {
        for (const name of parseScopeList(value)) {
          expect(name).not.toMatch(/[\s,]/);
          expect(isKnownScope(name)).toBe(ALL_SCOPES.includes(name));
        }
      }),
    );
  });
});
