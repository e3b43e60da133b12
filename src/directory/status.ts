// One status machine for every kind of client: which decisions each kind allows, from which
// statuses, to which. The registry's (pending, approved, rejected, suspended) are its DECISIONS;
// a metadata-document or registered client is unreviewed until an
// administrator approves or rejects it, and either decision may be taken back by the other.
// The operator scripts' approve/reject/suspend, the review page and the services ask here.
import { InputError } from '../errors.ts';

export type ClientStatus = 'pending' | 'approved' | 'rejected' | 'suspended';

/** Every status, in the order the review page lists clients. */
export const CLIENT_STATUSES: readonly ClientStatus[] = ['pending', 'approved', 'suspended', 'rejected'];

/** The decisions on a registry client: from which statuses each is possible, where it leads, what it did. */
export const DECISIONS = {
  approve: { from: ['pending'], to: 'approved', done: 'approved' },
  reject: { from: ['pending'], to: 'rejected', done: 'rejected' },
  suspend: { from: ['approved'], to: 'suspended', done: 'suspended: its tokens stopped working' },
  reinstate: { from: ['suspended'], to: 'approved', done: 'reinstated' },
} as const satisfies Record<string, { from: readonly ClientStatus[]; to: ClientStatus; done: string }>;

export type DecisionName = keyof typeof DECISIONS;

export function decisionsFor(status: ClientStatus): DecisionName[] {
  return (Object.keys(DECISIONS) as DecisionName[]).filter((name) => (DECISIONS[name].from as readonly ClientStatus[]).includes(status));
}

/** A metadata-document or registered client's status (kept by src/cimd/store.ts). */
export type CimdStatus = 'unreviewed' | 'approved' | 'rejected';
export const CIMD_STATUSES: readonly CimdStatus[] = ['unreviewed', 'approved', 'rejected'];

/** Where a client is described: the registry, a metadata document (its URL), or an RFC 7591 registration. */
export type ClientSource = 'registry' | 'document' | 'registered';
export type DirectoryStatus = ClientStatus | CimdStatus;

/** The decisions on a metadata-document or registered client (src/review/review.ts decideCimdClient). */
export const REVIEW_DECISIONS = {
  approve: { from: ['unreviewed', 'rejected'], to: 'approved', done: 'approved' },
  reject: { from: ['unreviewed', 'approved'], to: 'rejected', done: 'rejected: its tokens were revoked' },
} as const satisfies Record<string, { from: readonly CimdStatus[]; to: CimdStatus; done: string }>;

/** Each kind's decisions. */
export const TRANSITIONS = { registry: DECISIONS, document: REVIEW_DECISIONS, registered: REVIEW_DECISIONS } as const;

/** What each kind is called in a refusal. */
export const SOURCE_NAMES: Record<ClientSource, string> = { registry: 'registry client', document: 'metadata-document client', registered: 'registered client' };

/**
 * Why a metadata-document or registered client has no suspension: rejecting it already ends
 * everything it was issued at once and refuses it from then on, and approving it again is the
 * way back (a registry client's reinstatement). A document client's whole host can be blocked.
 */
const NO_SUSPENSION: Record<Exclude<ClientSource, 'registry'>, string> = {
  document: 'a metadata-document client is approved or rejected, not suspended: reject it (its tokens are revoked at once; approving it again restores it), or stop every client of its host with hosts block HOST',
  registered: 'a registered client is approved or rejected, not suspended: reject it (its tokens are revoked at once; approving it again restores it)',
};

/** Whether some decision moves a client of this kind from one status to the other. */
export function mayMove(source: ClientSource, from: DirectoryStatus, to: DirectoryStatus): boolean {
  return Object.values(TRANSITIONS[source]).some((d) => d.to === to && (d.from as readonly string[]).includes(from));
}

/** The status each of the operator's approve, reject and suspend asks for. */
const ASKED = { approve: 'approved', reject: 'rejected', suspend: 'suspended' } as const;
export type StatusCommand = keyof typeof ASKED;

/** The status an operator's approve, reject or suspend asks for, for this kind; a refusal where the kind has no such decision. */
export function statusAskedBy<C extends StatusCommand>(source: ClientSource, command: C): (typeof ASKED)[C] {
  if (command === 'suspend' && source !== 'registry') throw new InputError(NO_SUSPENSION[source]);
  return ASKED[command];
}
