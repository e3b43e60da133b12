// Sign-in and sign-out of the web application pages, and the guards of signed-in pages.
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import type { Db } from '../storage/db.ts';
import { authenticateUser } from '../accounts/store.ts';
import type { SignInLimits } from '../oauth/rate-limits.ts';
import type { Metrics } from '../http/metrics.ts';
import { endSession, startSession } from './session.ts';
import { field, formBody, page, redirectWithFlash, requireCsrf } from './forms.ts';

export const HOME = '/settings/connected-apps';

/** Only a local path may be a `next` target: never another site (no open redirect). */
function safeNext(value: unknown): string {
  return typeof value === 'string' && /^\/(?![/\\])/.test(value) ? value : HOME;
}

export async function requireUser(ctx: Context, next: Next) {
  if (ctx.state.user) return next();
  if (ctx.method === 'GET') {
    ctx.status = 303;
    return ctx.redirect(`/login?${new URLSearchParams({ next: ctx.url })}`);
  }
  ctx.status = 401;
  return page(ctx, 'error', { title: 'Please sign in', description: 'Your session has ended. Sign in and try again.' });
}

export async function requireAdmin(ctx: Context, next: Next) {
  if (ctx.state.user?.isAdmin) return next();
  ctx.status = 403;
  return page(ctx, 'error', { title: 'Administrators only', description: 'This page is for administrators of the platform.' });
}

export function accountRoutes({ db, limits, metrics }: { db: Db; limits: SignInLimits; metrics: Metrics }): Router {
  const router = new Router();

  const showLogin = (ctx: Context, error = '', email = '') =>
    page(ctx, 'web-login', { title: 'Sign in', error, email, next: safeNext(ctx.query.next ?? field(ctx, 'next')) });

  router.get('/login', async (ctx) => {
    if (ctx.state.user) {
      ctx.status = 303;
      return ctx.redirect(safeNext(ctx.query.next));
    }
    return showLogin(ctx);
  });

  router.post('/login', formBody, requireCsrf, async (ctx) => {
    const email = field(ctx, 'email').trim();
    const wait = await limits.waitFor(email, ctx.ip);
    if (wait) {
      ctx.status = 429;
      ctx.set('Retry-After', String(wait));
      return showLogin(ctx, `Too many sign-in attempts. Please wait ${wait} seconds and try again.`, email);
    }
    const user = email ? await authenticateUser(db, email, field(ctx, 'password')) : undefined;
    if (!user) {
      metrics.authFailures.inc({ kind: 'user' });
      await limits.failed(email, ctx.ip);
      ctx.status = 401;
      return showLogin(ctx, 'The email or password is not correct.', email);
    }
    await limits.succeeded(email);
    await startSession(ctx, db, user.id);
    ctx.status = 303;
    ctx.redirect(safeNext(field(ctx, 'next')));
  });

  router.post('/logout', formBody, requireCsrf, async (ctx) => {
    await endSession(ctx, db);
    redirectWithFlash(ctx, '/login', { type: 'ok', text: 'You are signed out.' });
  });

  return router;
}
