// The route policy (docs/gateways.md): which scope a call to the scheduling API needs.
// One table, read top to bottom; the first matching rule decides; no rule means no access.
import { ALL_SCOPES } from '../scopes.ts';
import { POLICY } from '../settings.ts';

/**
 * What a call needs: nothing (public), a scope, or it is refused outright. A call to one team's or
 * one organization's resources names it (`teamId`, `orgId`: the path's segment, decoded): a token
 * bound to an organization and teams may make it only inside them (src/api/access.ts).
 */
export type Need = { kind: 'public' } | { kind: 'scope'; scope: string; teamId?: string; orgId?: string } | { kind: 'deny'; reason: string };

type Access = 'READ' | 'WRITE';

interface Rule {
  /**
   * Segments after /v2; `{id}` is any one segment — `{team}` and `{org}` too, naming the team or
   * organization whose resources the call reaches — and a final `**` is zero or more segments.
   */
  pattern: string;
  /** A scope family such as `BOOKING_` (READ or WRITE is added by method), or 'public'. */
  family: string;
  /** Only these methods; all when absent. */
  methods?: string[];
}

const RULES: Rule[] = [
  // Booking creation, cancellation and rescheduling are public (docs/gateways.md).
  { pattern: 'bookings', family: 'public', methods: ['POST'] },
  { pattern: 'bookings/{id}/cancel', family: 'public', methods: ['POST'] },
  { pattern: 'bookings/{id}/reschedule', family: 'public', methods: ['POST'] },

  { pattern: 'me', family: 'PROFILE_' },
  { pattern: 'event-types/**', family: 'EVENT_TYPE_' },
  { pattern: 'bookings/**', family: 'BOOKING_' },
  { pattern: 'schedules/**', family: 'SCHEDULE_' },
  { pattern: 'out-of-office/**', family: 'SCHEDULE_' },
  { pattern: 'calendars/**', family: 'APPS_' },
  { pattern: 'conferencing/**', family: 'APPS_' },
  { pattern: 'selected-calendars/**', family: 'APPS_' },
  { pattern: 'destination-calendars/**', family: 'APPS_' },

  { pattern: 'teams', family: 'TEAM_PROFILE_' },
  { pattern: 'teams/{team}', family: 'TEAM_PROFILE_' },
  { pattern: 'teams/{team}/event-types/**', family: 'TEAM_EVENT_TYPE_' },
  { pattern: 'teams/{team}/bookings/**', family: 'TEAM_BOOKING_' },
  { pattern: 'teams/{team}/schedules/**', family: 'TEAM_SCHEDULE_' },
  { pattern: 'teams/{team}/memberships/**', family: 'TEAM_MEMBERSHIP_' },

  { pattern: 'organizations/{org}/teams', family: 'ORG_PROFILE_' },
  { pattern: 'organizations/{org}/teams/{team}', family: 'TEAM_PROFILE_' },
  { pattern: 'organizations/{org}/teams/{team}/event-types/**', family: 'TEAM_EVENT_TYPE_' },
  { pattern: 'organizations/{org}/teams/{team}/bookings/**', family: 'TEAM_BOOKING_' },
  { pattern: 'organizations/{org}/teams/{team}/schedules/**', family: 'TEAM_SCHEDULE_' },
  { pattern: 'organizations/{org}/teams/{team}/memberships/**', family: 'TEAM_MEMBERSHIP_' },
  { pattern: 'organizations/{org}/event-types/**', family: 'ORG_EVENT_TYPE_' },
  { pattern: 'organizations/{org}/bookings/**', family: 'ORG_BOOKING_' },
  { pattern: 'organizations/{org}/schedules/**', family: 'ORG_SCHEDULE_' },
];

const ACCESS_BY_METHOD: Record<string, Access> = { GET: 'READ', HEAD: 'READ', POST: 'WRITE', PUT: 'WRITE', PATCH: 'WRITE', DELETE: 'WRITE' };

// Every family in the table must name real scopes: a typo here would lock a route for everyone.
for (const { family } of RULES) {
  if (family === 'public') continue;
  for (const access of ['READ', 'WRITE']) {
    if (!ALL_SCOPES.includes(`${family}${access}`)) throw new Error(`route policy names an unknown scope ${family}${access}`);
  }
}

const ANY_SEGMENT = new Set(['{id}', '{team}', '{org}']);

function matches(pattern: string[], segments: string[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const part = pattern[i]!;
    if (part === '**' && i === pattern.length - 1) return true;
    const segment = segments[i];
    if (segment === undefined) return false;
    if (!ANY_SEGMENT.has(part) && part !== segment) return false;
  }
  return segments.length === pattern.length;
}

const COMPILED = RULES.map((rule) => {
  const parts = rule.pattern.split('/');
  return { ...rule, parts, teamAt: parts.indexOf('{team}'), orgAt: parts.indexOf('{org}') };
});

// What a segment may hold once decoded: printable ASCII, without the characters that end or
// split a path somewhere (`/ \ ; ? #`) and without `%` (a double encoding such as %252e). Every
// other character is refused: look-alikes of `.` and `/` (fullwidth `．` `／`, `‥`, `∕`, `⁄`, `⧸`
// …) are folded into the real ones by some servers (NFKC, best-fit code pages), and no route
// needs anything outside ASCII.
const SAFE_SEGMENT = /^[\x20-\x7e]+$/;
const SPLITTING = /[/\\;?#%]/;

/**
 * The path's segments after /v2, or undefined when it cannot be judged safely: anything a
 * server behind the gateway might resolve differently is refused rather than guessed at —
 * dot segments, empty segments, matrix parameters (`;`: servlet containers drop `;…` from each
 * segment, so `..;` is `..` to them), encoded slashes, dots, backslashes or semicolons, double
 * encodings, malformed escapes (overlong UTF-8 too), and any character outside printable ASCII.
 */
export function normalisePath(rawPath: string): string[] | undefined {
  const path = rawPath.split(/[?#]/, 1)[0]!;
  if (!path.startsWith('/v2/')) return undefined;
  // A URI is printable ASCII; raw bytes beyond it are decoded differently by different servers.
  if (!/^[\x21-\x7e]+$/.test(path) || path.includes(';')) return undefined;
  const raw = path.slice('/v2/'.length).split('/');
  if (raw.length > 1 && raw[raw.length - 1] === '') raw.pop(); // one trailing slash is harmless
  const segments: string[] = [];
  for (const part of raw) {
    let segment: string;
    try {
      segment = decodeURIComponent(part);
    } catch {
      return undefined;
    }
    if (!SAFE_SEGMENT.test(segment) || SPLITTING.test(segment) || /^\.+$/.test(segment)) return undefined;
    if (segment !== part && segment.includes('.')) return undefined; // %2e
    segments.push(segment);
  }
  return segments;
}

// What a call needs is a pure function of its method and path, and gateways ask about the same
// paths over and over: answers for short paths are remembered, a bounded number of them.
const REMEMBERED = new Map<string, Need>();
const REMEMBER_AT_MOST = POLICY.ROUTE_POLICY_REMEMBERED.value;
const REMEMBER_PATHS_UP_TO = 256;

/** What a call with this method and path (as sent, query allowed) needs. */
export function neededFor(method: string, rawPath: string): Need {
  const at = rawPath.search(/[?#]/);
  const path = at < 0 ? rawPath : rawPath.slice(0, at);
  if (path.length > REMEMBER_PATHS_UP_TO) return judge(method, path);
  const key = `${method} ${path}`;
  let need = REMEMBERED.get(key);
  if (need) return need;
  need = judge(method, path);
  if (REMEMBERED.size >= REMEMBER_AT_MOST) REMEMBERED.clear();
  REMEMBERED.set(key, need);
  return need;
}

function judge(method: string, rawPath: string): Need {
  const access = ACCESS_BY_METHOD[method.toUpperCase()];
  if (!access) return { kind: 'deny', reason: `method ${method} is not allowed` };
  const segments = normalisePath(rawPath);
  if (!segments) return { kind: 'deny', reason: 'the path is not in a form that can be judged' };
  const upper = method.toUpperCase();
  for (const rule of COMPILED) {
    if (rule.methods && !rule.methods.includes(upper)) continue;
    if (!matches(rule.parts, segments)) continue;
    if (rule.family === 'public') return { kind: 'public' };
    const need: Need = { kind: 'scope', scope: `${rule.family}${access}` };
    if (rule.orgAt >= 0) need.orgId = segments[rule.orgAt]!;
    if (rule.teamAt >= 0) need.teamId = segments[rule.teamAt]!;
    return need;
  }
  return { kind: 'deny', reason: 'no rule of the route policy covers this call' };
}
