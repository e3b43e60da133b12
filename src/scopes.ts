// The scope catalogue (spec 5.2–5.4): the one place scope names are spelled out.

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
  { name: 'PROFILE_READ', description: 'See your profile' },
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
 * The grant of a legacy client's request without `scope` (spec 5.6): access to everything the
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

export function describeScope(name: string): ScopeInfo {
  return BY_NAME.get(name) ?? { name, description: name };
}

/** The scope value as clients see it: the legacy marker left out. */
export function visibleScope(scope: string): string {
  return scope.split(' ').filter((s) => s && s !== LEGACY_FULL_ACCESS).join(' ');
}

/** Splits a scope value on spaces and commas (spec 4.1), dropping empties and duplicates. */
export function parseScopeList(value: string): string[] {
  return [...new Set(value.split(/[\s,]+/).filter(Boolean))];
}

/** Scope names from several arguments, each of which may itself be a list (the operator scripts). */
export function parseScopeArgs(values: readonly string[]): string[] {
  return parseScopeList(values.join(' '));
}

/** `ORG_X` satisfies a need for `TEAM_X` (spec 5.4). */
export function scopeSatisfies(granted: ReadonlySet<string>, needed: string): boolean {
  if (granted.has(needed)) return true;
  return needed.startsWith('TEAM_') && granted.has(`ORG_${needed.slice('TEAM_'.length)}`);
}
