// Sign-in sessions of the web application's pages: a random id in a signed, HttpOnly, SameSite=Lax
// cookie; only its hash is stored (table web_sessions). The pages' CSRF tokens are bound to it.
import { createHash, randomBytes } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Db } from '../storage/db.ts';
import { findUserById, isAdmin, type User } from '../accounts/store.ts';
import { cookieName, cookieOptions } from '../http/cookies.ts';
import { csrfToken } from '../http/csrf.ts';
import type { CachedDb } from '../storage/record-cache.ts';
import { POLICY } from '../settings.ts';

const SESSION_COOKIE = 'web_session';
/** Binds the CSRF tokens of a visitor who is not signed in (the sign-in form). */
const VISITOR_COOKIE = 'web_visitor';
const SESSION_HOURS = POLICY.WEB_SESSION_HOURS.value;

export interface WebUser extends User {
  isAdmin: boolean;
}

declare module 'koa' {
  interface DefaultState {
    user?: WebUser;
    /** Hash of the web session cookie, while signed in. */
    webSessionId?: string;
  }
}

const hash = (value: string) => createHash('sha256').update(value).digest('base64url');

/**
 * A session of SESSION_HOURS; its cookie outlives the browser only when the user asked ("Keep me
 * signed in"). Started by an upstream sign-in, it keeps the upstream's ID token: the hint of the
 * upstream's logout when it ends (src/web/account.ts).
 */
export async function startSession(ctx: Context, db: Db, userId: number, { remember = false, upstreamIdToken }: { remember?: boolean; upstreamIdToken?: string | undefined } = {}): Promise<void> {
  // A new id at every sign-in (no fixation): the browser's previous session, whoever's, ends.
  const previous = ctx.cookies.get(cookieName(ctx, SESSION_COOKIE), { signed: true });
  if (previous) await db('web_sessions').where('id', hash(previous)).delete();
  const value = randomBytes(32).toString('base64url');
  const expires = new Date(Date.now() + SESSION_HOURS * 3600_000);
  await db('web_sessions').insert({ id: hash(value), user_id: userId, expires_at: expires, upstream_id_token: upstreamIdToken ?? null });
  ctx.cookies.set(cookieName(ctx, SESSION_COOKIE), value, cookieOptions(ctx, remember ? { expires } : {}));
  // Tokens minted before sign-in die with the visitor cookie.
  ctx.cookies.set(cookieName(ctx, VISITOR_COOKIE), null, cookieOptions(ctx));
}

/** Ends this browser's session; the upstream ID token it was started with, if any. */
export async function endSession(ctx: Context, db: Db): Promise<string | undefined> {
  const value = ctx.cookies.get(cookieName(ctx, SESSION_COOKIE), { signed: true });
  const [ended] = value ? await db('web_sessions').where('id', hash(value)).delete().returning('upstream_id_token') : [];
  for (const name of [SESSION_COOKIE, VISITOR_COOKIE]) ctx.cookies.set(cookieName(ctx, name), null, cookieOptions(ctx));
  ctx.state.user = undefined;
  ctx.state.webSessionId = undefined;
  return (ended as { upstream_id_token?: string | null } | undefined)?.upstream_id_token ?? undefined;
}

/** This browser's live web session: its hash, the user's record and when they signed in. */
export async function webSessionOf(ctx: Context, users: CachedDb): Promise<{ id: string; user: User; signedInAt: Date } | undefined> {
  const { db } = users;
  const value = ctx.cookies.get(cookieName(ctx, SESSION_COOKIE), { signed: true });
  if (!value) return undefined;
  const row = await db('web_sessions').where('id', hash(value)).where('expires_at', '>', db.fn.now()).first('user_id', 'created_at');
  const user = row ? await findUserById(users, row.user_id) : undefined;
  return user ? { id: hash(value), user, signedInAt: new Date(row.created_at) } : undefined;
}

/** Puts the signed-in user, if any, in ctx.state.user: the first step of every page route. */
export function loadUser(users: CachedDb) {
  const { db } = users;
  return async function webUser(ctx: Context, next: Next) {
    const session = await webSessionOf(ctx, users);
    if (session) {
      const { user } = session;
      ctx.state.user = { ...user, isAdmin: await isAdmin(db, user.id) };
      ctx.state.webSessionId = session.id;
      // An error page of this request (rendered by the envelope) keeps the signed-in layout: a working sign-out.
      ctx.state.errorPageLayout = () => ({ csrf: csrfToken(ctx, csrfBinding(ctx)), currentPath: ctx.path });
    }
    return next();
  };
}

/** What this request's page CSRF tokens are bound to: the web session, else the visitor cookie. */
export function csrfBinding(ctx: Context): string {
  if (ctx.state.webSessionId) return `session:${ctx.state.webSessionId}`;
  const name = cookieName(ctx, VISITOR_COOKIE);
  let visitor = ctx.cookies.get(name, { signed: true });
  if (!visitor) {
    visitor = randomBytes(24).toString('base64url');
    ctx.cookies.set(name, visitor, cookieOptions(ctx));
  }
  return `visitor:${visitor}`;
}
