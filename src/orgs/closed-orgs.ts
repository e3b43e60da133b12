// The organizations reached only through their own installations: app policy `approval` or
// `block` (docs/organizations.md). On their paths — /v2/organizations/{org}/… and
// /v2/teams/{team}/… of their teams — the gateway check refuses a token bound to nothing
// (src/api/access.ts). The check is a hot path with no store round trip, so the set is kept in
// memory, as client records are (src/storage/record-cache.ts): read whole once, read again after
// any announced change of an organization's policy or of its teams ('org' records: setAppPolicy,
// teams create), heard at once by this process and at commit by every other. While the change
// feed is down nothing is trusted from memory: each question goes to the database.
import type { Db } from '../storage/db.ts';
import type { RecordCache } from '../storage/record-cache.ts';

/** A team's or organization's resources as the route policy names them (path segments, decoded). */
export interface Reached {
  orgId?: string | undefined;
  teamId?: string | undefined;
}

export interface ClosedOrgs {
  /** Whether the call reaches a closed organization (by its path, or a team of one). */
  reaches(reached: Reached): boolean | Promise<boolean>;
}

interface Known {
  orgs: Set<number>;
  teams: Set<number>;
}

const MAX_ID = 2 ** 31 - 1;

/**
 * The ids a backend may read a path segment as: the plain number, and what lenient parsers make of
 * it (`01`, `+1`, ` 1`, `1abc`, `1e0`, `0x1`…), so that no spelling of a closed organization's id
 * slips by as another organization's.
 */
export function idsOf(segment: string): number[] {
  const ids = new Set<number>();
  for (const n of [Number.parseInt(segment, 10), Number(segment), Number(segment.trim())]) if (Number.isSafeInteger(n) && n > 0 && n <= MAX_ID) ids.add(n);
  return [...ids];
}

async function readAll(db: Db): Promise<Known> {
  const orgs: { id: number }[] = await db('organizations').whereNot('app_policy', 'allow').select('id');
  const teams: { id: number }[] = orgs.length ? await db('teams').whereIn('org_id', orgs.map((o) => o.id)).select('id') : [];
  return { orgs: new Set(orgs.map((o) => o.id)), teams: new Set(teams.map((t) => t.id)) };
}

/** One question to the database (the feed is down): the candidates' organizations, closed or not. */
async function readNow(db: Db, orgIds: number[], teamIds: number[]): Promise<boolean> {
  if (orgIds.length && (await db('organizations').whereIn('id', orgIds).whereNot('app_policy', 'allow').first('id'))) return true;
  if (!teamIds.length) return false;
  const row = await db('teams as t').join('organizations as o', 'o.id', 't.org_id').whereIn('t.id', teamIds).whereNot('o.app_policy', 'allow').first('t.id');
  return row !== undefined;
}

export function closedOrgs(db: Db, records: Pick<RecordCache, 'live' | 'onChange' | 'onReset'>): ClosedOrgs {
  let known: Known | undefined;
  let reading: Promise<Known> | undefined;
  // A change drops what was read (and a read under way: it may have begun before the change).
  const forget = () => {
    known = undefined;
    reading = undefined;
  };
  records.onChange((kind) => kind === 'org' && forget());
  records.onReset(forget);

  function current(): Promise<Known> {
    if (!reading) {
      const read = readAll(db);
      reading = read;
      read.then(
        (result) => void (reading === read && (known = result)),
        () => void (reading === read && (reading = undefined)),
      );
    }
    return reading;
  }

  const within = (k: Known, orgIds: number[], teamIds: number[]) => orgIds.some((id) => k.orgs.has(id)) || teamIds.some((id) => k.teams.has(id));

  return {
    reaches({ orgId, teamId }) {
      const orgIds = orgId === undefined ? [] : idsOf(orgId);
      const teamIds = teamId === undefined ? [] : idsOf(teamId);
      if (!orgIds.length && !teamIds.length) return false;
      if (!records.live) return readNow(db, orgIds, teamIds);
      if (known) return within(known, orgIds, teamIds);
      return current().then((k) => within(k, orgIds, teamIds));
    },
  };
}
