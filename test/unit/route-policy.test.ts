// The route policy of CONTRACT 4, row by row, and the scope rules it relies on.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { CPU_BOUND_TEST_MS } from '../support/timeouts.ts';
import { neededFor, type Need } from '../../src/api/route-policy.ts';
import { ALL_SCOPES, isKnownScope, parseScopeList, scopeSatisfies } from '../../src/scopes.ts';
import { decideAccess, type VerifiedToken } from '../../src/api/access.ts';
import { gatewayCheck } from '../../src/api/check.ts';
import { idsOf, type ClosedOrgs } from '../../src/orgs/closed-orgs.ts';

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

/** The team and organization a row's path reaches, read off the path by CONTRACT 4's shapes. */
function reachedBy(path: string): { orgId?: string; teamId?: string } {
  const org = /^\/v2\/organizations\/([^/]+)/.exec(path)?.[1];
  const team = /^\/v2\/(?:organizations\/[^/]+\/)?teams\/([^/]+)/.exec(path)?.[1];
  return { ...(org ? { orgId: org } : {}), ...(team ? { teamId: team } : {}) };
}

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
      expect(neededFor(method, path)).toEqual({ kind: 'scope', scope: `${family}READ`, ...reachedBy(path) });
      expect(allowed(method, path, [`${family}READ`])).toBe(true);
      expect(allowed(method, path, [`${family}WRITE`])).toBe(false);
    }
    for (const method of WRITES) {
      expect(neededFor(method, path)).toEqual({ kind: 'scope', scope: `${family}WRITE`, ...reachedBy(path) });
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
});

// A corpus of paths that a server behind the gateway may resolve to another route than the one
// they read as (CONTRACT 4 says a path no rule covers is refused): matrix parameters (servlet
// containers drop `;…` from each segment, so `..;` is `..`), encoded and double-encoded dots,
// slashes, backslashes and semicolons, overlong UTF-8, and Unicode look-alikes of `.`, `/`, `\`
// and `;`, some found by NFKC (what many servers fold text with), some only by their looks.
describe('route policy: paths that may resolve differently are never allowed', () => {
  const utf8 = (char: string) => encodeURIComponent(char);
  const bmp = Array.from({ length: 0xffff - 0x7f }, (_, i) => String.fromCharCode(0x80 + i)).filter((c) => !/[\ud800-\udfff]/.test(c));
  const foldsTo = (chars: string) => bmp.filter((c) => [...c.normalize('NFKC')].some((k) => chars.includes(k)));
  const VISUAL = {
    dot: ['\u0660', '\u06f0', '\u0701', '\u0702', '\u2024', '\u3002', '\u30fb', '\ua4f8', '\ua60e', '\uff0e', '\uff61', '\ufe52', '\u00b7', '\u2027', '\u2219', '\u22c5'],
    slash: ['\u2044', '\u2215', '\u2571', '\u27cb', '\u29f8', '\u1735', '\u2f03', '\u3033', '\u30ce', '\u4e3f', '\u31d3', '\uff0f'],
    backslash: ['\u2216', '\u27cd', '\u29f5', '\u29f9', '\u2f02', '\u31d4', '\u4e36', '\ufe68', '\uff3c', '\u00a5', '\u20a9'],
    semicolon: ['\u037e', '\ufe54', '\uff1b'],
  };
  const unicode = (visual: string[], ascii: string) => [...new Set([...visual, ...foldsTo(ascii)])].flatMap((c) => [c, utf8(c)]);
  const DOT = ['%2e', '%2E', '%252e', '%25252e', '%u002e', '%c0%ae', '%C0%AE', '%e0%80%ae', '%f0%80%80%ae', '%c0.', ...unicode(VISUAL.dot, '.')];
  const DOTDOT = ['..', '...', '%2e%2e', '%2e.', '.%2e', '%252e%252e', '%c0%ae%c0%ae', '\u2025', utf8('\u2025'), '\u2026', utf8('\u2026'), '\ufe30', utf8('\ufe30'), ...DOT.map((d) => `${d}${d}`)];
  const SLASH = ['%2f', '%2F', '%252f', '%5c', '%5C', '%255c', '\\', '%c0%af', '%e0%80%af', '%c1%9c', '%c1%1c', ...unicode([...VISUAL.slash, ...VISUAL.backslash], '/\\')];
  const SEMI = [';', ';x=1', ';jsessionid=0', '%3b', '%3B', '%253b', ...unicode(VISUAL.semicolon, ';')];
  const PARENT = [...DOTDOT.flatMap((dd) => [dd, ...SEMI.map((s) => `${dd}${s}`)]), ...SEMI.map((s) => `..${s}`)];

  const corpus = [
    ...PARENT.flatMap((p) => [
      `/v2/organizations/o1/teams/t1/bookings/${p}/${p}/${p}/bookings/123`,
      `/v2/bookings/${p}/organizations/o1/bookings`,
      `/v2/me/${p}/teams/1`,
      `/v2/bookings/1/${p}/${p}/me/cancel`,
    ]),
    ...SLASH.flatMap((sl) => [
      `/v2/teams/1/bookings/x${sl}..${sl}..${sl}..${sl}organizations${sl}1${sl}bookings`,
      `/v2/bookings/x${sl}..${sl}..${sl}teams${sl}1`,
      `/v2/bookings${sl}1${sl}cancel`,
    ]),
    ...SLASH.flatMap((sl) => PARENT.slice(0, 40).map((p) => `/v2/bookings/x${sl}${p}${sl}${p}${sl}organizations${sl}1${sl}bookings`)),
    // Matrix parameters on any segment of a legitimate path.
    ...ROWS.flatMap(([path]) => path.split('/').slice(2).flatMap((_, i, parts) => SEMI.map((s) => `/v2/${parts.map((p, j) => (j === i ? `${p}${s}` : p)).join('/')}`))),
  ];

  it('refuses every path of the generated corpus, for every method', () => {
    expect(corpus.length).toBeGreaterThan(5_000);
    for (const path of corpus) {
      for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']) {
        expect(neededFor(method, path).kind, `${method} ${path}`).toBe('deny');
      }
    }
  });

  // Every character of the BMP, twice: its length is its own work (test/support/timeouts.ts).
  it('refuses every non-ASCII character in a path, raw or percent-encoded', { timeout: CPU_BOUND_TEST_MS }, () => {
    for (const char of bmp) {
      expect(neededFor('GET', `/v2/bookings/${char}`).kind, `U+${char.charCodeAt(0).toString(16)}`).toBe('deny');
      expect(neededFor('GET', `/v2/bookings/a${utf8(char)}b`).kind, `U+${char.charCodeAt(0).toString(16)} encoded`).toBe('deny');
    }
    for (const char of ['\u{1d16d}', '\u{10a50}', '\u{1f4c1}']) expect(neededFor('GET', `/v2/bookings/${utf8(char)}`).kind).toBe('deny');
  });

  it('refuses any hostile token inserted anywhere in a legitimate path (property)', () => {
    // Raw `..` inside a segment (`uid..1`) is an ordinary character; every other token is hostile anywhere.
    const hostile = fc.constantFrom(...DOT, ...DOTDOT.filter((t) => !/^\.+$/.test(t)), ...SLASH, ...SEMI, '%00', '%0a', '%09', '%3f', '%23', '%25', ' ', '\t');
    fc.assert(
      fc.property(fc.constantFrom(...ROWS.map(([path]) => path)), hostile, fc.nat(), fc.constantFrom('GET', 'POST', 'DELETE'), (path, token, at, method) => {
        const cut = '/v2/'.length + (at % (path.length - '/v2/'.length + 1));
        const spliced = `${path.slice(0, cut)}${token}${path.slice(cut)}`;
        expect(neededFor(method, spliced).kind, spliced).toBe('deny');
      }),
      { numRuns: 5000 },
    );
  });
});

describe('route policy: random input', () => {
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

  it('never crashes on random input and never yields an empty name or one with a separator', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (value) => {
        for (const name of parseScopeList(value)) expect(name).toMatch(/^[^\s,]+$/);
      }),
    );
  });

  it('knows no near miss of a catalogue name: another case, a prefix, a suffix, padding', () => {
    fc.assert(
      fc.property(scopeNames, fc.string({ minLength: 1, maxLength: 5 }), (name, extra) => {
        expect(isKnownScope(name)).toBe(true);
        for (const miss of [name.toLowerCase(), `${name}${extra}`, `${extra}${name}`, ` ${name}`, `${name}\u0000`]) expect(isKnownScope(miss), miss).toBe(false);
      }),
    );
  });
});

// Issue 35 point 3: a token bound to an organization and teams (src/orgs/bindings.ts) reaches only
// them. Its scopes are all there are, so every refusal below is the binding's: any spelling of a
// path that a server behind the gateway may read as another team or organization is refused.
describe('route policy: tokens bound to an organization and teams', () => {
  const OWN_ORG = '10';
  const OWN_TEAMS = ['1', '3'];
  const bound: VerifiedToken = { accountId: '7', clientId: 'app', scopes: new Set(ALL_SCOPES), unscoped: false, orgId: OWN_ORG, teamIds: OWN_TEAMS };
  const teamsOnly: VerifiedToken = { ...bound, orgId: undefined, teamIds: ['1'] };
  const unbound: VerifiedToken = { accountId: '7', clientId: 'app', scopes: new Set(ALL_SCOPES), unscoped: false };
  const verifyAs = (token: VerifiedToken) => async () => token;
  const decide = (token: VerifiedToken, path: string, methods = ['GET']) => decideAccess(verifyAs(token), { methods, path }, 'Bearer x');
  const denied = { allow: false, status: 403, boundElsewhere: true, message: 'this token is bound to another organization or other teams' };

  /** What a lenient server behind the gateway may take the path for: dot segments resolved, each segment decoded. */
  function backendReading(path: string): { orgId?: string; teamId?: string } | undefined {
    let resolved: string;
    try {
      resolved = new URL(path.replaceAll('\\', '/'), 'http://api.example').pathname;
    } catch {
      return undefined;
    }
    const segments = resolved.split('/').filter(Boolean).map((s) => {
      try {
        return decodeURIComponent(s).split(';')[0]!.toLowerCase();
      } catch {
        return s.toLowerCase();
      }
    });
    const at = segments.indexOf('v2');
    const rest = segments.slice(at + 1);
    if (rest[0] === 'teams') return { teamId: rest[1] };
    if (rest[0] === 'organizations') return { orgId: rest[1], ...(rest[2] === 'teams' ? { teamId: rest[3] } : {}) };
    return {};
  }

  it('allows its own teams and organization on every team and organization row', async () => {
    const allowed = [
      '/v2/teams/1', '/v2/teams/3/bookings', '/v2/teams/1/event-types/9', '/v2/teams/1/schedules', '/v2/teams/3/memberships/8',
      '/v2/organizations/10/teams', '/v2/organizations/10/teams/1', '/v2/organizations/10/teams/3/bookings/4',
      '/v2/organizations/10/event-types', '/v2/organizations/10/bookings/77', '/v2/organizations/10/schedules',
      '/v2/teams/1/', '/v2/teams/1?other=/../2', '/v2/teams/%31/bookings',
      // User-level paths: whatever the binding.
      '/v2/me', '/v2/bookings/uid-1', '/v2/event-types/42', '/v2/schedules/7', '/v2/calendars/busy-times',
    ];
    for (const path of allowed) expect(await decide(bound, path, ['GET', 'DELETE']), path).toMatchObject({ allow: true });
  });

  it('refuses other teams and organizations with access_denied, on every row and method', async () => {
    const refused = [
      '/v2/teams/2', '/v2/teams/2/bookings', '/v2/teams/4/event-types/9', '/v2/teams/2/schedules', '/v2/teams/2/memberships',
      '/v2/teams/01/bookings', '/v2/teams/1.0', '/v2/teams/+1', '/v2/teams/%32/bookings', '/v2/teams/2/',
      '/v2/organizations/20/teams', '/v2/organizations/20/teams/1', '/v2/organizations/20/teams/1/bookings',
      '/v2/organizations/10/teams/2', '/v2/organizations/10/teams/2/bookings/4', '/v2/organizations/010/teams/1',
      '/v2/organizations/20/event-types', '/v2/organizations/20/bookings/77', '/v2/organizations/20/schedules',
    ];
    for (const path of refused) {
      for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']) expect(await decide(bound, path, [method]), `${method} ${path}`).toEqual(denied);
    }
    // A binding to teams outside any organization reaches no organization path.
    expect(await decide(teamsOnly, '/v2/teams/1/bookings')).toMatchObject({ allow: true });
    expect(await decide(teamsOnly, '/v2/organizations/10/teams/1')).toEqual(denied);
    expect(await decide(teamsOnly, '/v2/organizations/10/bookings')).toEqual(denied);
    // A token bound to no team (its binding lost: fail closed) reaches none.
    expect(await decide({ ...bound, teamIds: [] }, '/v2/teams/1')).toEqual(denied);
  });

  it('judges the scope first: a missing scope is insufficient_scope, as for any token', async () => {
    const narrow = { ...bound, scopes: new Set(['TEAM_BOOKING_READ']) };
    expect(await decide(narrow, '/v2/teams/2/bookings', ['DELETE'])).toMatchObject({ status: 403, neededScope: 'TEAM_BOOKING_WRITE' });
    expect(await decide(narrow, '/v2/teams/2/bookings')).toEqual(denied);
    // ORG_X satisfies TEAM_X, inside the binding only.
    const org = { ...bound, scopes: new Set(['ORG_BOOKING_READ']) };
    expect(await decide(org, '/v2/organizations/10/teams/1/bookings')).toMatchObject({ allow: true });
    expect(await decide(org, '/v2/organizations/10/teams/2/bookings')).toEqual(denied);
    expect(await decide(org, '/v2/teams/2/bookings')).toEqual(denied);
  });

  it('leaves unbound tokens exactly as before', async () => {
    for (const path of ['/v2/teams/2/bookings', '/v2/organizations/20/teams/2', '/v2/organizations/20/bookings']) {
      expect(await decide(unbound, path, ['GET', 'POST'])).toEqual({ allow: true, token: unbound });
    }
  });

  // The path-trick corpus, aimed at another team or organization from a path that starts in its own.
  const OTHER = ['2', '20', '%32', '%32%30'];
  const DOTS = ['..', '%2e%2e', '%2E%2E', '.%2e', '%2e.', '%252e%252e', '%c0%ae%c0%ae', '\uff0e\uff0e', '..;', '..%3b', '..;x=1'];
  const SLASHES = ['/', '%2f', '%2F', '%252f', '%5c', '\\', '%c0%af', '\uff0f', '//'];
  const tricks = [
    ...DOTS.flatMap((dd) => SLASHES.flatMap((sl) => OTHER.flatMap((o) => [
      `/v2/teams/1${sl}${dd}${sl}${o}/bookings`,
      `/v2/teams/1/bookings${sl}${dd}${sl}${dd}${sl}${o}/bookings`,
      `/v2/organizations/10/teams/1${sl}${dd}${sl}${o}/bookings`,
      `/v2/organizations/10${sl}${dd}${sl}${o}/bookings`,
      `/v2/organizations/10/bookings${sl}${dd}${sl}${dd}${sl}${o}/bookings`,
      `/v2/organizations/10/teams/1/bookings${sl}${dd}${sl}${dd}${sl}${dd}${sl}${dd}${sl}organizations${sl}${o}${sl}bookings`,
      `/v2/me${sl}${dd}${sl}teams${sl}${o}`,
      `/v2/bookings/x${sl}${dd}${sl}${dd}${sl}teams${sl}${o}${sl}bookings`,
    ]))),
    ...OTHER.flatMap((o) => [
      `//v2/teams/${o}`, `/v2//teams/${o}`, `/v2/teams//${o}`, `/v2/teams/${o}//`, `/v2/./teams/${o}`, `/v2/teams/./${o}`,
      `/v2/Teams/${o}`, `/v2/TEAMS/${o}/bookings`, `/V2/teams/${o}`, `/v2/ORGANIZATIONS/${o}/bookings`, `/v2/Organizations/10/teams/${o}`,
      `/v2/teams/1;/${o}`, `/v2/teams/${o};/bookings`, `/v2/teams/1%3b${o}/bookings`, `/v2/teams/1%00/${o}`,
      `/v2/teams/1%2f${o}`, `/v2/teams/1%2F..%2F${o}/bookings`, `/v2/teams/%2e%2e/teams/${o}`, `/v2/teams/1/%2e%2e/${o}`,
      `/v2/teams/1/%2e/${o}`, `/v2/teams/1/.%2e/${o}/bookings`, `/v2/organizations/10/%2e%2e/${o}/teams/1`,
    ]),
  ];

  it('refuses every path of the corpus that a server may read as another team or organization', async () => {
    expect(tricks.length).toBeGreaterThan(1_500);
    for (const path of tricks) {
      for (const method of ['GET', 'DELETE']) {
        const decision = await decide(bound, path, [method]);
        expect(decision.allow, `${method} ${path}`).toBe(false);
      }
    }
  });

  it('allows a path only when a lenient server reads it as the token’s own team and organization (property)', async () => {
    const segment = fc.constantFrom('v2', 'teams', 'organizations', 'Teams', 'bookings', '1', '2', '3', '10', '20', '%31', '%32', '..', '.', '%2e%2e', '%2e', '%2f', '%5c', '', ';', '1;', '..;', 'x');
    await fc.assert(
      fc.asyncProperty(fc.array(segment, { minLength: 1, maxLength: 8 }), fc.constantFrom('GET', 'POST', 'DELETE'), async (parts, method) => {
        const path = `/v2/${parts.join('/')}`;
        const decision = await decide(bound, path, [method]);
        if (!decision.allow) return;
        const reading = backendReading(path);
        expect(reading, path).toBeDefined();
        if (reading!.teamId !== undefined) expect(OWN_TEAMS, path).toContain(reading!.teamId);
        if (reading!.orgId !== undefined) expect(reading!.orgId, path).toBe(OWN_ORG);
      }),
      { numRuns: 4000 },
    );
  });

  // Issue 45 item 5: organization 10 (teams 1 and 3) admits apps only through its installations.
  // Which ids are closed is the store's (src/orgs/closed-orgs.ts, tested on real stores in
  // test/org-installs.test.ts); how a path segment maps to ids is idsOf's, under test here.
  const closed: ClosedOrgs = {
    reaches: ({ orgId, teamId }) => (orgId !== undefined && idsOf(orgId).includes(10)) || (teamId !== undefined && idsOf(teamId).some((id) => id === 1 || id === 3)),
  };
  const decideUnbound = (path: string, methods = ['GET']) => decideAccess(verifyAs(unbound), { methods, path }, 'Bearer x', closed);
  /** Every id a lenient backend may read a segment as. */
  const lenientIds = (segment: string) => [Number(segment), Number.parseInt(segment, 10), Number(segment.trim())].filter((n) => Number.isSafeInteger(n));

  it('refuses a token bound to nothing on a closed organization and its teams, in every spelling of their ids; others by scope alone', async () => {
    const refusedPaths = [
      '/v2/organizations/10/bookings/77', '/v2/organizations/10/teams', '/v2/organizations/20/teams/1/bookings', '/v2/teams/3/bookings', '/v2/teams/1',
      '/v2/organizations/010/bookings', '/v2/organizations/+10/bookings', '/v2/organizations/10abc/bookings', '/v2/organizations/0xa/bookings',
      '/v2/organizations/1e1/bookings', '/v2/organizations/%2010/bookings', '/v2/organizations/%31%30/bookings', '/v2/teams/0x3/bookings', '/v2/teams/3.0/bookings', '/v2/teams/%33',
    ];
    for (const path of refusedPaths) {
      expect(await decideUnbound(path, ['DELETE']), path).toEqual({ allow: false, status: 403, boundElsewhere: true, message: 'this organization admits apps only through its installations: authorize the app in the organization' });
    }
    for (const path of ['/v2/organizations/20/bookings', '/v2/organizations/100/bookings', '/v2/teams/2/bookings', '/v2/teams/13', '/v2/me', '/v2/bookings/1', '/v2/teams']) {
      expect(await decideUnbound(path), path).toMatchObject({ allow: true });
    }
    // A bound token is judged by its binding, as before: its own organization passes.
    expect(await decideAccess(verifyAs(bound), { methods: ['GET'], path: '/v2/organizations/10/bookings' }, 'Bearer x', closed)).toMatchObject({ allow: true });
  });

  it('allows a token bound to nothing only where a lenient server reads no closed organization or team (property)', async () => {
    const segment = fc.constantFrom('v2', 'teams', 'organizations', 'bookings', '1', '2', '3', '10', '20', '010', '+10', '10x', '0xa', '1e1', '%31', '%33', '%31%30', '%2010', '..', '.', '%2e%2e', '', ';', 'x');
    await fc.assert(
      fc.asyncProperty(fc.array(segment, { minLength: 1, maxLength: 6 }), fc.constantFrom('GET', 'DELETE'), async (parts, method) => {
        const path = `/v2/${parts.join('/')}`;
        if (!(await decideUnbound(path, [method])).allow) return;
        const reading = backendReading(path);
        expect(reading, path).toBeDefined();
        if (reading!.orgId !== undefined) expect(lenientIds(reading!.orgId), path).not.toContain(10);
        if (reading!.teamId !== undefined) expect(lenientIds(reading!.teamId), path).not.toContain(1);
        if (reading!.teamId !== undefined) expect(lenientIds(reading!.teamId), path).not.toContain(3);
      }),
      { numRuns: 3000 },
    );
  });

  describe('through the gateway check (every way a gateway names the call, method overrides)', () => {
    const answer = (token: VerifiedToken, method: string, path: string, headers: Record<string, string>, search = '') =>
      gatewayCheck(verifyAs(token), { reaches: () => false })({ method, path, search, headers: { authorization: 'Bearer x', ...headers }, rawHeaders: ['Authorization', 'Bearer x'] });

    it('answers its own teams with the binding headers, other teams with 403 access_denied', async () => {
      const cases: Array<[method: string, path: string, headers: Record<string, string>, own: boolean]> = [
        ['GET', '/v2/auth/check', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/teams/1/bookings' }, true],
        ['GET', '/v2/auth/check', { 'x-original-method': 'DELETE', 'x-original-uri': '/v2/organizations/10/teams/3' }, true],
        ['DELETE', '/v2/auth/check/v2/teams/3/bookings/4', {}, true],
        ['GET', '/v2/auth/check', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/teams/2/bookings' }, false],
        ['GET', '/v2/auth/check', { 'x-original-method': 'GET', 'x-original-uri': '/v2/organizations/20/bookings' }, false],
        ['POST', '/v2/auth/check/v2/teams/2/bookings', {}, false],
        ['GET', '/v2/auth/check/v2/organizations/10/teams/2', {}, false],
        ['GET', '/v2/auth/check', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/teams/2/bookings', 'x-http-method-override': 'DELETE' }, false],
        ['GET', '/v2/auth/check', { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/teams/2/bookings?_method=PATCH' }, false],
        ['GET', '/v2/auth/check/v2/teams/2/bookings', { 'x-method-override': 'GET' }, false],
      ];
      for (const [method, path, headers, own] of cases) {
        const res = await answer(bound, method, path, headers);
        if (own) {
          expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(200);
          expect(res.headers).toMatchObject({ 'X-Auth-User-Id': '7', 'X-Auth-Org-Id': '10', 'X-Auth-Team-Ids': '1,3' });
        } else {
          expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(403);
          expect(res.body).toMatchObject({ status: 'error', error: { code: 'access_denied' } });
          expect(res.headers['X-Auth-Team-Ids']).toBeUndefined();
        }
      }
    });

    it('adds the binding headers for bound tokens only', async () => {
      const call = { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/v2/teams/2/bookings' };
      const plain = await answer(unbound, 'GET', '/v2/auth/check', call);
      expect(plain.status).toBe(200);
      expect(Object.keys(plain.headers).sort()).toEqual(['Cache-Control', 'X-Auth-Client-Id', 'X-Auth-Scopes', 'X-Auth-User-Id']);
      const teams = await answer(teamsOnly, 'GET', '/v2/auth/check', { ...call, 'x-forwarded-uri': '/v2/teams/1' });
      expect(teams.headers['X-Auth-Team-Ids']).toBe('1');
      expect(teams.headers['X-Auth-Org-Id']).toBeUndefined();
      // A user-level call of a bound token: allowed, and the gateway is still told the binding.
      const me = await answer(bound, 'GET', '/v2/auth/check', { ...call, 'x-forwarded-uri': '/v2/bookings/uid-1' });
      expect(me).toMatchObject({ status: 200, headers: { 'X-Auth-Org-Id': '10', 'X-Auth-Team-Ids': '1,3' } });
    });
  });
});
