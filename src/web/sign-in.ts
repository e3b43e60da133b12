// The one sign-in step of the sign-in forms (the pages' /login and the authorization flow's): the
// proof of work the limits ask for (src/web/sign-in-limits.ts), the password check, the counts,
// and the "known device" mark after a success (src/web/known-devices.ts).
import type { Context } from 'koa';
import type { Db } from '../storage/db.ts';
import { authenticateUser, type User } from '../accounts/store.ts';
import type { Challenge, SignInLimits } from './sign-in-limits.ts';
import type { Metrics } from '../http/metrics.ts';
import { PasswordHashingBusy, type PasswordHashing } from '../accounts/password.ts';
import { knownDeviceFor, markKnownDevice } from './known-devices.ts';
import { field } from './forms.ts';

const BUSY_RETRY_AFTER_SECONDS = 2;
/** The form field the ALTCHA widget fills with its solution. */
const SOLUTION_FIELD = 'altcha';

export interface SignInDeps {
  db: Db;
  passwords: PasswordHashing;
  limits: SignInLimits;
  metrics: Metrics;
}

/** Why a sign-in did not happen, and the challenge its form must carry next, if any. */
export type Refusal = { refused: string; challenge?: Challenge | undefined };

/** The challenge the empty sign-in form carries: what this address alone asks for, if anything. */
export async function formChallenge(ctx: Context, limits: SignInLimits): Promise<Challenge | undefined> {
  const work = await limits.workFor(undefined, ctx.ip);
  return work ? limits.challenge(work) : undefined;
}

/** The user whose email and password the form carries, or why not (status set on ctx). */
export async function checkSignIn(ctx: Context, { db, passwords, limits, metrics }: SignInDeps, email: string, password: string): Promise<User | Refusal> {
  const device = knownDeviceFor(ctx, email);
  const work = await limits.workFor(email, ctx.ip, device);
  // Past the limits the password is not even looked at without the work: no free guesses.
  if (work && !(await limits.solved(field(ctx, SOLUTION_FIELD), work))) {
    ctx.status = 429;
    return { refused: 'There have been many failed sign-ins. Please complete the check below, then sign in again.', challenge: await limits.challenge(work) };
  }
  let user: User | undefined;
  try {
    user = email ? await authenticateUser({ db, passwords }, email, password) : undefined;
  } catch (err) {
    if (!(err instanceof PasswordHashingBusy)) throw err;
    // Nothing was checked: not a failure of this account, only a moment of too many checks.
    ctx.status = 503;
    ctx.set('Retry-After', String(BUSY_RETRY_AFTER_SECONDS));
    return { refused: `Too many sign-ins are being checked right now. Please try again in ${BUSY_RETRY_AFTER_SECONDS} seconds.` };
  }
  if (!user) {
    metrics.authFailures.inc({ kind: 'user' });
    await limits.failed(email, ctx.ip, device);
    ctx.status = 401;
    const next = await limits.workFor(email, ctx.ip, device);
    return { refused: 'The email or password is not correct.', challenge: next ? await limits.challenge(next) : undefined };
  }
  await limits.succeeded(email, device);
  markKnownDevice(ctx, email);
  return user;
}
