// Sign-in sessions of the web application's pages: a random id in a signed, HttpOnly, SameSite=Lax
// cookie; only its hash is stored (table web_sessions).
import { createHash, randomBytes } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Db } from '../storage/db.ts';
import { findUserById, isAdmin, type User } from '../accounts/store.ts';

export const SESSION_COOKIE = 'web_session';
const SESSION_HOURS = 12;

export interface WebUser extends User {
  isAdmin: boolean;
}

declare module 'koa' {
  interface DefaultState {
    user?: WebUser;
  }
}

const hash = (value: string) => createHash('sha256').update(value).digest('base64url');
const cookieOptions = { httpOnly: true, sameSite: 'lax' as const, signed: true, overwrite: true };

export async function startSession(ctx: Context, db: Db, userId: number): Promise<void> {
  const value = randomBytes(32).toString('base64url');
  const expires = new Date(Date.now() + SESSION_HOURS * 3600_000);
  await db('web_sessions').insert({ id: hash(value), user_id: userId, expires_at: expires });
  ctx.cookies.set(SESSION_COOKIE, value, { ...cookieOptions, expires, secure: ctx.secure });
}

export async function endSession(ctx: Context, db: Db): Promise<void> {
  const value = ctx.cookies.get(SESSION_COOKIE, { signed: true });
  if (value) await db('web_sessions').where('id', hash(value)).delete();
  ctx.cookies.set(SESSION_COOKIE, null, { ...cookieOptions, secure: ctx.secure });
}

/** Puts the signed-in user, if any, in ctx.state.user. */
export function loadWebUser(db: Db) {
  return async function webUser(ctx: Context, next: Next) {
    const value = ctx.cookies.get(SESSION_COOKIE, { signed: true });
    if (value) {
      const row = await db('web_sessions').where('id', hash(value)).where('expires_at', '>', db.fn.now()).first('user_id');
      const user = row ? await findUserById(db, row.user_id) : undefined;
      if (user) ctx.state.user = { ...user, isAdmin: await isAdmin(db, user.id) };
    }
    return next();
  };
}
