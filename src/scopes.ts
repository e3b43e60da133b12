// The scope catalogue (docs/scopes.md): the one place scope names are spelled out.

export interface ScopeInfo {
  name: string;
  /** Plain words for the consent page and documentation. */
  description: string;
}

const USER_SCOPES: ScopeInfo[] = [
  { name: 'EVENT_TYPE_READ', description: 'See your event types, their private links and webhooks' },
  { name: 'EVENT_TYPE_WRITE', description: 'Create, change and delete your event types, private links and webhooks' },
  { name: 'BOOKING_READ', description: 'See your bookings, with their recordings, transcripts, calendar links, references and attendees' },
  { name: 'BOOKING_WRITE', description: 'Add guests and attendees, change locations, and confirm, decline or reassign your bookings' },
  { name: 'SCHEDULE_READ', description: 'See your schedules and out-of-office entries' },
  { name: 'SCHEDULE_WRITE', description: 'Create, change and delete your schedules and out-of-office entries' },
  { name: 'APPS_READ', description: 'See your connected calendars and conferencing apps, and check your busy times and calendar feeds' },
  { name: 'APPS_WRITE', description: 'Connect and disconnect your calendars and conferencing apps, and manage where events are read and written' },
  { name: 'PROFILE_READ', description: 'See your profile, including your e-mail address' },
  { name: 'PROFILE_WRITE', description: 'Change your profile' },
];

const TEAM_SCOPES: ScopeInfo[] = [
  { name: 'TEAM_EVENT_TYPE_READ', description: "See your teams' event types" },
  { name: 'TEAM_EVENT_TYPE_WRITE', description: "Create, change and delete your teams' event types" },
  { name: 'TEAM_BOOKING_READ', description: "See your teams' bookings" },
  { name: 'TEAM_BOOKING_WRITE', description: "Create, change and delete your teams' bookings" },
  { name: 'TEAM_SCHEDULE_READ', description: "See your teams' schedules" },
  { name: 'TEAM_SCHEDULE_WRITE', description: "Create, change and delete your teams' schedules" },
  { name: 'TEAM_PROFILE_READ', description: "See your teams' profiles" },
  { name: 'TEAM_PROFILE_WRITE', description: 'Create, change and delete your teams' },
  { name: 'TEAM_MEMBERSHIP_READ', description: "See who is in your teams" },
  { name: 'TEAM_MEMBERSHIP_WRITE', description: 'Add, change and remove members of your teams' },
];

const ORG_SCOPES: ScopeInfo[] = [
  { name: 'ORG_EVENT_TYPE_READ', description: 'See all event types across your organization' },
  { name: 'ORG_EVENT_TYPE_WRITE', description: 'Create, change and delete event types across your organization' },
  { name: 'ORG_BOOKING_READ', description: 'See all bookings across your organization' },
  { name: 'ORG_BOOKING_WRITE', description: 'Create, change and delete bookings across your organization' },
  { name: 'ORG_SCHEDULE_READ', description: 'See schedules across your organization' },
  { name: 'ORG_SCHEDULE_WRITE', description: 'Create, change and delete schedules across your organization' },
  { name: 'ORG_PROFILE_READ', description: "See your organization's teams" },
  { name: 'ORG_PROFILE_WRITE', description: "Create, change and delete your organization's teams" },
];

/**
 * The grant of a legacy client's request without `scope` (docs/legacy-migration.md): access to everything the
 * user can reach. An internal marker, not a catalogue scope: clients can never request it, and it
 * is not shown in token responses.
 */
export const LEGACY_FULL_ACCESS = 'legacy:full-access';

export const SCOPE_CATALOGUE: readonly ScopeInfo[] = [...USER_SCOPES, ...TEAM_SCOPES, ...ORG_SCOPES];
export const ALL_SCOPES: readonly string[] = SCOPE_CATALOGUE.map((s) => s.name);

const BY_NAME = new Map(SCOPE_CATALOGUE.map((s) => [s.name, s]));

export function isKnownScope(name: string): boolean {
  return BY_NAME.has(name);
}

/** Edit distance (insertions, deletions, substitutions), for suggesting a scope name. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

/**
 * The scope a mistyped name most likely meant ("profile-read", "PROFILE_REED", "PROFILE" →
 * PROFILE_READ), or undefined when none is close: for "did you mean …?" in refusals.
 */
export function suggestScope(name: string): string | undefined {
  const typed = name.trim().toUpperCase().replace(/[\s.:-]+/g, '_');
  if (isKnownScope(typed)) return typed;
  if (isKnownScope(`${typed}_READ`)) return `${typed}_READ`;
  let best: { scope: string; d: number } | undefined;
  for (const scope of ALL_SCOPES) {
    const d = distance(typed, scope);
    if (!best || d < best.d) best = { scope, d };
  }
  return best && best.d <= Math.max(2, Math.floor(best.scope.length / 5)) ? best.scope : undefined;
}

export function describeScope(name: string): ScopeInfo {
  return BY_NAME.get(name) ?? { name, description: name };
}

/** Whose data a scope reaches: the user's own, their teams', or everyone's in their organization. */
export type ScopeAudience = 'you' | 'team' | 'org';
export type ScopeAccess = 'view' | 'change';

export const AUDIENCE_TITLES: Record<ScopeAudience, string> = {
  you: 'Your account',
  team: 'Your teams',
  org: 'Everyone in your organization',
};

const RESOURCE_TITLES: Record<string, string> = {
  EVENT_TYPE: 'Event types',
  BOOKING: 'Bookings',
  SCHEDULE: 'Schedules',
  APPS: 'Connected apps',
  PROFILE: 'Profile',
  MEMBERSHIP: 'Memberships',
};

/** What the scope name says about itself: EVENT_TYPE_READ, TEAM_BOOKING_WRITE, ORG_PROFILE_READ… */
export interface ScopeShape {
  name: string;
  audience: ScopeAudience;
  /** The resource's title ("Bookings"); for teams and organizations, PROFILE means their teams. */
  resource: string;
  access: ScopeAccess;
}

export function scopeShape(name: string): ScopeShape {
  const audience: ScopeAudience = name.startsWith('ORG_') ? 'org' : name.startsWith('TEAM_') ? 'team' : 'you';
  const rest = audience === 'you' ? name : name.slice(name.indexOf('_') + 1);
  const access: ScopeAccess = rest.endsWith('_WRITE') ? 'change' : 'view';
  const key = rest.replace(/_(READ|WRITE)$/, '');
  const resource = audience !== 'you' && key === 'PROFILE' ? 'Teams' : (RESOURCE_TITLES[key] ?? key);
  return { name, audience, resource, access };
}

/**
 * The catalogue as a grid for choosing scopes: per audience, one row per resource, with the view
 * and change scope of that row (the developer settings page).
 */
export function scopeGrid(): { audience: ScopeAudience; title: string; rows: { resource: string; view?: ScopeInfo; change?: ScopeInfo }[] }[] {
  return (Object.keys(AUDIENCE_TITLES) as ScopeAudience[]).map((audience) => {
    const rows = new Map<string, { resource: string; view?: ScopeInfo; change?: ScopeInfo }>();
    for (const info of SCOPE_CATALOGUE) {
      const shape = scopeShape(info.name);
      if (shape.audience !== audience) continue;
      const row = rows.get(shape.resource) ?? { resource: shape.resource };
      row[shape.access] = info;
      rows.set(shape.resource, row);
    }
    return { audience, title: AUDIENCE_TITLES[audience], rows: [...rows.values()] };
  });
}

/**
 * Granted scopes grouped as a person reads them (the consent page): by audience, viewing before
 * changing. Unknown names are left out.
 */
export function groupScopes(names: readonly string[]): { audience: ScopeAudience; title: string; scopes: (ScopeInfo & ScopeShape)[] }[] {
  const known = names.filter(isKnownScope).map((name) => ({ ...describeScope(name), ...scopeShape(name) }));
  return (Object.keys(AUDIENCE_TITLES) as ScopeAudience[])
    .map((audience) => ({
      audience,
      title: AUDIENCE_TITLES[audience],
      scopes: known.filter((s) => s.audience === audience).sort((a, b) => (a.access === b.access ? 0 : a.access === 'view' ? -1 : 1)),
    }))
    .filter((group) => group.scopes.length > 0);
}

/** The scope value as clients see it: the legacy marker left out. */
export function visibleScope(scope: string): string {
  return scope.split(' ').filter((s) => s && s !== LEGACY_FULL_ACCESS).join(' ');
}

/** Splits a scope value on spaces and commas (docs/endpoints.md), dropping empties and duplicates. */
export function parseScopeList(value: string): string[] {
  return [...new Set(value.split(/[\s,]+/).filter(Boolean))];
}

/** Scope names from several arguments, each of which may itself be a list (the operator scripts). */
export function parseScopeArgs(values: readonly string[]): string[] {
  return parseScopeList(values.join(' '));
}

/** `ORG_X` satisfies a need for `TEAM_X` (docs/scopes.md). */
export function scopeSatisfies(granted: ReadonlySet<string>, needed: string): boolean {
  if (granted.has(needed)) return true;
  return needed.startsWith('TEAM_') && granted.has(`ORG_${needed.slice('TEAM_'.length)}`);
}
