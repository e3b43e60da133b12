// The one sign-in step of the sign-in forms (the pages' /login and the authorization flow's): the
// proof of work the limits and the hashing load ask for (src/web/sign-in-limits.ts), the password
// check in its lane of the hashing queue (src/accounts/password.ts), the counts, and the "known
// device" mark after a success (src/web/known-devices.ts).
//
// What this promises: strangers cannot take the capacity that users with the right password need.
// A browser known for the account has places in the hashing queue no one else can fill; any other
// browser is asked for proof of work whenever checks are waiting past the low mark, and is then
// let into places that unproven attempts cannot fill. A check refused for capacity is counted like
// a failure and answered with a challenge: a 429 to solve, never a 503 (only with RATE_LIMITS=off,
// where there are no challenges, is it still a 503).
import type { Context } from 'koa';
import type { Db } from '../storage/db.ts';
import { authenticateUser, type User } from '../accounts/store.ts';
import type { Challenge, SignInLimits } from './sign-in-limits.ts';
import type { Metrics } from '../http/metrics.ts';
import { PasswordHashingBusy, type Admission, type PasswordHashing } from '../accounts/password.ts';
import { knownDeviceFor, markKnownDevice } from './known-devices.ts';
import { field } from './forms.ts';

const BUSY_RETRY_AFTER_SECONDS = 2;
/** The form field the ALTCHA widget fills with its solution. */
const SOLUTION_FIELD = 'altcha';
const FAILURES_MESSAGE = 'There have been many failed sign-ins. Please complete the check below, then sign in again.';
const LOAD_MESSAGE = 'Many sign-ins are being checked right now. Please complete the check below, then sign in again.';

export interface SignInDeps {
  db: Db;
  passwords: PasswordHashing;
  limits: SignInLimits;
  metrics: Metrics;
}

/** Why a sign-in did not happen, and the challenge its form must carry next, if any. */
export type Refusal = { refused: string; challenge?: Challenge | undefined };

/** The challenge the empty sign-in form carries: what this address alone and the load ask for, if anything. */
export async function formChallenge(ctx: Context, limits: SignInLimits, passwords: PasswordHashing): Promise<Challenge | undefined> {
  const work = Math.max(await limits.workFor(undefined, ctx.ip), limits.loadWork(passwords.strain()));
  return work ? limits.challenge(work, undefined, ctx.ip) : undefined;
}

/** The user whose email and password the form carries, or why not (status set on ctx). */
export async function checkSignIn(ctx: Context, { db, passwords, limits, metrics }: SignInDeps, email: string, password: string): Promise<User | Refusal> {
  const device = knownDeviceFor(ctx, email);
  // A browser known for the account has its own places in the queue: the load asks it nothing.
  const asked = async () => {
    const counted = await limits.workFor(email, ctx.ip, device);
    const load = device ? 0 : limits.loadWork(passwords.strain());
    return { work: Math.max(counted, load), counted, load, message: counted >= load ? FAILURES_MESSAGE : LOAD_MESSAGE };
  };
  const ask = async (status: number, { work, message }: { work: number; message: string }): Promise<Refusal> => {
    ctx.status = status;
    return { refused: message, challenge: await limits.challenge(work, email, ctx.ip) };
  };

  const now = await asked();
  const solution = field(ctx, SOLUTION_FIELD);
  // A solution shown is checked even when nothing is asked now: it earns the places of proven checks.
  const proven = solution !== '' && (await limits.solved(solution, now, email, ctx.ip));
  // Past the limits the password is not even looked at without the work: no free guesses.
  if (now.work && !proven) return ask(429, now);

  const admission: Admission = { lane: device ? 'known' : proven ? 'proven' : 'unproven', holder: email.trim().toLowerCase() };
  let user: User | undefined;
  try {
    user = email ? await authenticateUser({ db, passwords }, email, password, admission) : undefined;
  } catch (err) {
    if (!(err instanceof PasswordHashingBusy)) throw err;
    // Refused for capacity: counted like a failure (per address and account; not against a known
    // browser's own count, which others' flood did not earn) and asked for work, at least the base.
    await limits.failed(email, ctx.ip);
    const counted = await limits.workFor(email, ctx.ip, device);
    const work = Math.max(counted, limits.loadWork(passwords.strain() || Number.MIN_VALUE));
    if (work) return ask(429, { work, message: LOAD_MESSAGE });
    // Limits are off (RATE_LIMITS=off): no challenge to give, only a moment to wait.
    ctx.status = 503;
    ctx.set('Retry-After', String(BUSY_RETRY_AFTER_SECONDS));
    return { refused: `Too many sign-ins are being checked right now. Please try again in ${BUSY_RETRY_AFTER_SECONDS} seconds.` };
  }
  if (!user) {
    metrics.authFailures.inc({ kind: 'user' });
    await limits.failed(email, ctx.ip, device);
    ctx.status = 401;
    const next = await asked();
    return { refused: 'The email or password is not correct.', challenge: next.work ? await limits.challenge(next.work, email, ctx.ip) : undefined };
  }
  await limits.succeeded(email, device);
  markKnownDevice(ctx, email);
  return user;
}
