// The one sign-in step of the sign-in forms (the pages' /login and the authorization flow's):
// growing delays keyed by (account, device or address), the password check, the failure count.
import type { Context } from 'koa';
import type { Db } from '../storage/db.ts';
import { authenticateUser, type User } from '../accounts/store.ts';
import type { SignInLimits } from '../oauth/rate-limits.ts';
import type { Metrics } from '../http/metrics.ts';
import { signInSource } from './session.ts';
import { PasswordHashingBusy } from '../accounts/password.ts';

const BUSY_RETRY_AFTER_SECONDS = 2;

export interface SignInDeps {
  db: Db;
  limits: SignInLimits;
  metrics: Metrics;
}

/** The user whose email and password the form carries, or why not (status and message set on ctx). */
export async function checkSignIn(ctx: Context, { db, limits, metrics }: SignInDeps, email: string, password: string): Promise<User | { refused: string }> {
  const source = signInSource(ctx);
  const wait = await limits.waitFor(email, source, ctx.ip);
  if (wait) {
    ctx.status = 429;
    ctx.set('Retry-After', String(wait));
    return { refused: `Too many sign-in attempts. Please wait ${wait} ${wait === 1 ? 'second' : 'seconds'} and try again.` };
  }
  let user: User | undefined;
  try {
    user = email ? await authenticateUser(db, email, password) : undefined;
  } catch (err) {
    if (!(err instanceof PasswordHashingBusy)) throw err;
    // Nothing was checked: not a failure of this account, only a moment of too many checks.
    ctx.status = 503;
    ctx.set('Retry-After', String(BUSY_RETRY_AFTER_SECONDS));
    return { refused: `Too many sign-ins are being checked right now. Please try again in ${BUSY_RETRY_AFTER_SECONDS} seconds.` };
  }
  if (!user) {
    metrics.authFailures.inc({ kind: 'user' });
    await limits.failed(email, source, ctx.ip);
    ctx.status = 401;
    return { refused: 'The email or password is not correct.' };
  }
  await limits.succeeded(email, source);
  return user;
}
