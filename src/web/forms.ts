// Form plumbing of the web application pages: body parsing, CSRF (a signed double-submit cookie
// plus Fetch Metadata), flash messages after redirects, and page rendering with the layout data.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, Next } from 'koa';
import { koaBody } from 'koa-body';
import { renderPage } from '../views.ts';

export const formBody = koaBody({ multipart: false, json: false, urlencoded: true, formLimit: '32kb' });
const CSRF_COOKIE = 'web_csrf';
const FLASH_COOKIE = 'web_flash';
const cookie = { httpOnly: true, sameSite: 'lax' as const, signed: true, overwrite: true };

/** A form field as a string ('' when absent); repeated fields give the last value. */
export function field(ctx: Context, name: string): string {
  const value = (ctx.request.body as Record<string, unknown> | undefined)?.[name];
  if (Array.isArray(value)) return String(value[value.length - 1] ?? '');
  return typeof value === 'string' ? value : '';
}

/** A repeated form field (checkboxes) as a list. */
export function fields(ctx: Context, name: string): string[] {
  const value = (ctx.request.body as Record<string, unknown> | undefined)?.[name];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return typeof value === 'string' ? [value] : [];
}

function csrfToken(ctx: Context): string {
  let token = ctx.cookies.get(CSRF_COOKIE, { signed: true });
  if (!token) {
    token = randomBytes(24).toString('base64url');
    ctx.cookies.set(CSRF_COOKIE, token, { ...cookie, secure: ctx.secure });
  }
  return token;
}

/** Every POST of the pages: the form's token must match the signed cookie, and no cross-site post. */
export async function requireCsrf(ctx: Context, next: Next) {
  const expected = ctx.cookies.get(CSRF_COOKIE, { signed: true }) ?? '';
  const presented = field(ctx, 'csrf');
  const same = expected.length > 0 && presented.length === expected.length && timingSafeEqual(Buffer.from(presented), Buffer.from(expected));
  if (!same || ctx.get('Sec-Fetch-Site') === 'cross-site') {
    ctx.status = 403;
    return page(ctx, 'error', { title: 'This form has expired', description: 'The form was not sent from this site, or it is too old. Please go back, reload the page and try again.' });
  }
  return next();
}

export type Flash = { type: 'ok' | 'error'; text: string };

export function redirectWithFlash(ctx: Context, to: string, flash: Flash): void {
  ctx.cookies.set(FLASH_COOKIE, Buffer.from(JSON.stringify(flash)).toString('base64url'), { ...cookie, secure: ctx.secure });
  ctx.status = 303;
  ctx.redirect(to);
}

function takeFlash(ctx: Context): Flash | undefined {
  const raw = ctx.cookies.get(FLASH_COOKIE, { signed: true });
  if (!raw) return undefined;
  ctx.cookies.set(FLASH_COOKIE, null, { ...cookie, secure: ctx.secure });
  try {
    const flash = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Flash;
    return typeof flash.text === 'string' ? flash : undefined;
  } catch {
    return undefined;
  }
}

/** Renders a page of the web application with the layout's data: user, CSRF token, flash. */
export async function page(ctx: Context, view: string, data: Record<string, unknown>): Promise<void> {
  ctx.type = 'html';
  ctx.set('Cache-Control', 'no-store');
  ctx.body = await renderPage(view, { user: ctx.state.user, csrf: csrfToken(ctx), flash: takeFlash(ctx), currentPath: ctx.path, ...data });
}
