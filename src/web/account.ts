// Sign-in and sign-out of the web application pages, and the guards of signed-in pages.
// Every page route names its guard itself (no prefix-wide middleware): see pageGuards.
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import type { Challenge, SignInLimits } from './sign-in-limits.ts';
import type { Metrics } from '../http/metrics.ts';
import { newRouter } from '../http/router.ts';
import { ForbiddenError, PageRefusal } from '../errors.ts';
import { endAuthorizationSession } from '../oauth/sessions.ts';
import { endSession, loadUser, startSession } from './session.ts';
import { checkSignIn, formChallenge } from './sign-in.ts';
import { field, formBody, page, redirectWithFlash, requireCsrf } from './forms.ts';
import { CONNECTED_APPS_PATH, LOGIN_PATH, LOGOUT_PATH, UPSTREAM_CALLBACK_PATH, UPSTREAM_START_PATH } from '../http/paths.ts';
import type { UpstreamSignIn } from './upstream-sign-in.ts';
import type { CachedDb, RecordCache } from '../storage/record-cache.ts';
import type { PasswordHashing } from '../accounts/password.ts';
import { ADMIN_COMMAND } from '../admin-command.ts';

export const HOME = CONNECTED_APPS_PATH;

/** Only a local path may be a `next` target: never another site (no open redirect). */
function safeNext(value: unknown): string {
  return typeof value === 'string' && /^\/(?![/\\])/.test(value) ? value : HOME;
}

async function requireUser(ctx: Context, next: Next) {
  if (ctx.state.user) return next();
  if (ctx.method === 'GET') {
    ctx.status = 303;
    return ctx.redirect(`${LOGIN_PATH}?${new URLSearchParams({ next: ctx.url })}`);
  }
  throw new PageRefusal(401, 'login_required', { title: 'Please sign in', happened: 'Your session has ended. Sign in and try again.' });
}

function refuseNonAdmin(ctx: Context): never {
  const email = ctx.state.user?.email ?? 'EMAIL';
  throw new PageRefusal(403, 'access_denied', {
    title: 'Administrators only',
    happened: 'This page is for administrators of the platform.',
    // The operator's way in (docs/operations.md): one command; on the embedded database, with the server stopped.
    whatToDo: `An operator makes an account an administrator with the command ${ADMIN_COMMAND} users set-admin ${email} (on the embedded database, stop the server first, then start it again). Then reload this page.`,
  });
}

async function requireAdmin(ctx: Context, next: Next) {
  return ctx.state.user?.isAdmin ? next() : refuseNonAdmin(ctx);
}

export type Guard = Array<(ctx: Context, next: Next) => Promise<unknown>>;

/** The guards a page route starts with: who may reach it. */
export function pageGuards(users: CachedDb): { anyone: Guard; signedIn: Guard; admin: Guard } {
  const user = loadUser(users);
  return { anyone: [user], signedIn: [user, requireUser], admin: [user, requireUser, requireAdmin] };
}

/** The signed-in administrator: checked again inside each admin handler, whatever guarded the route. */
export function adminOf(ctx: Context) {
  const user = ctx.state.user;
  if (!user?.isAdmin) throw new ForbiddenError('this page is for administrators of the platform');
  return user;
}

/**
 * The pages' sign-in, after the password or the upstream provider said who this is. One sign-in
 * across the site: an authorization session of this browser (maybe another account's) ends; the
 * next authorization request starts one from this sign-in.
 */
export async function signInToPages(ctx: Context, { db, provider }: { db: Db; provider: Provider }, userId: number, { remember, next, upstreamIdToken }: { remember: boolean; next: unknown; upstreamIdToken?: string }): Promise<void> {
  await endAuthorizationSession(ctx, provider);
  await startSession(ctx, db, userId, { remember, upstreamIdToken });
  ctx.status = 303;
  ctx.redirect(safeNext(next));
}

/** Password sign-in switched off (LOCAL_PASSWORDS=off): said so, nothing checked. */
export function refuseLocalPasswords(upstreamName: string): never {
  throw new PageRefusal(403, 'access_denied', {
    title: 'Passwords are not used here',
    happened: `This site does not sign in with a password: people sign in with ${upstreamName}.`,
    whatToDo: `Go back to the sign-in page and choose "Sign in with ${upstreamName}".`,
  });
}

export interface SignInChoices {
  /** LOCAL_PASSWORDS: the password form is offered. */
  localPasswords: boolean;
  /** "Sign in with …", when an upstream provider is configured. */
  upstream: UpstreamSignIn | undefined;
}

export function accountRoutes({ db, records, passwords, provider, limits, metrics, signInChoices }: { db: Db; records: RecordCache; passwords: PasswordHashing; provider: Provider; limits: SignInLimits; metrics: Metrics; signInChoices: SignInChoices }) {
  const router = newRouter();
  const { anyone } = pageGuards({ db, records });
  const { localPasswords, upstream } = signInChoices;

  const showLogin = (ctx: Context, challenge: Challenge | undefined, error = '', email = '') =>
    page(ctx, 'login', {
      title: 'Sign in',
      action: LOGIN_PATH,
      error,
      email,
      challenge,
      next: safeNext(ctx.query.next ?? field(ctx, 'next')),
      localPasswords,
      upstreamName: upstream?.name,
      upstreamAction: UPSTREAM_START_PATH,
    });

  router.get(LOGIN_PATH, ...anyone, async (ctx) => {
    if (ctx.state.user) {
      ctx.status = 303;
      return ctx.redirect(safeNext(ctx.query.next));
    }
    return showLogin(ctx, localPasswords ? await formChallenge(ctx, limits, passwords) : undefined);
  });

  router.post(LOGIN_PATH, ...anyone, formBody, requireCsrf, async (ctx) => {
    if (!localPasswords) refuseLocalPasswords(upstream!.name);
    const email = field(ctx, 'email').trim();
    const user = await checkSignIn(ctx, { db, passwords, limits, metrics }, email, field(ctx, 'password'));
    if ('refused' in user) return showLogin(ctx, user.challenge, user.refused, email);
    await signInToPages(ctx, { db, provider }, user.id, { remember: field(ctx, 'remember') === 'yes', next: field(ctx, 'next') });
  });

  if (upstream) {
    // "Sign in with …": a form POST (CSRF-checked), so no other site can start a sign-in here.
    router.post(UPSTREAM_START_PATH, ...anyone, formBody, requireCsrf, async (ctx) => {
      await upstream.begin(ctx, { kind: 'pages', next: safeNext(field(ctx, 'next')), remember: field(ctx, 'remember') === 'yes' });
    });
    // Back from the upstream: the pages' sign-in, or the authorization flow's step (interactions.ts).
    router.get(UPSTREAM_CALLBACK_PATH, ...anyone, async (ctx) => {
      const { user, target, idToken } = await upstream.callback(ctx);
      if (target.kind === 'interaction') return upstream.handOver(ctx, target.uid, user, target.remember, idToken);
      await signInToPages(ctx, { db, provider }, user.id, { remember: target.remember, next: target.next, upstreamIdToken: idToken });
    });
  }

  // Sign-out ends both sessions: the pages' and the authorization session of the OAuth flow; a
  // session the upstream started ends there too, where it offers a logout (RP-initiated logout),
  // which sends the browser back to the sign-in page.
  router.post(LOGOUT_PATH, ...anyone, formBody, requireCsrf, async (ctx) => {
    const upstreamIdToken = await endSession(ctx, db);
    await endAuthorizationSession(ctx, provider);
    redirectWithFlash(ctx, LOGIN_PATH, { type: 'ok', text: 'You are signed out.' });
    const atUpstream = upstreamIdToken && upstream ? await upstream.signOutUrl(upstreamIdToken) : undefined;
    if (atUpstream) ctx.redirect(atUpstream);
  });

  return router;
}
