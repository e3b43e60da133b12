// Form plumbing of the web application pages: body parsing, CSRF (src/http/csrf.ts, bound to the
// web session or the visitor), flash messages after redirects, and page rendering with the layout data.
import type { Context, Next } from 'koa';
import { koaBody } from 'koa-body';
import { renderPage } from '../views.ts';
import { PageRefusal } from '../errors.ts';
import { csrfToken, csrfValid } from '../http/csrf.ts';
import { cookieName, cookieOptions } from '../http/cookies.ts';
import { csrfBinding } from './session.ts';

export const formBody = koaBody({ multipart: false, json: false, urlencoded: true, formLimit: '32kb' });
const FLASH_COOKIE = 'web_flash';

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

/** Every POST of the pages: the form's token must be this session's (or visitor's), from this site. */
export async function requireCsrf(ctx: Context, next: Next) {
  if (!csrfValid(ctx, csrfBinding(ctx), field(ctx, 'csrf'))) {
    throw new PageRefusal(403, 'invalid_request', { title: 'This form has expired', happened: 'The form was not sent from this site, or it is too old. Please go back, reload the page and try again.' });
  }
  return next();
}

/** `about`: the item a message concerns (a client id), so the page can show it on that item too. */
export type Flash = { type: 'ok' | 'error'; text: string; about?: string };

export function redirectWithFlash(ctx: Context, to: string, flash: Flash): void {
  ctx.cookies.set(cookieName(ctx, FLASH_COOKIE), Buffer.from(JSON.stringify(flash)).toString('base64url'), cookieOptions(ctx));
  ctx.status = 303;
  ctx.redirect(to);
}

/** The flash message of this request (page() reads it too: the cookie stays readable until the response). */
export function takeFlash(ctx: Context): Flash | undefined {
  const raw = ctx.cookies.get(cookieName(ctx, FLASH_COOKIE), { signed: true });
  if (!raw) return undefined;
  ctx.cookies.set(cookieName(ctx, FLASH_COOKIE), null, cookieOptions(ctx));
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
  ctx.body = await renderPage(view, { platformName: ctx.state.platformName, user: ctx.state.user, csrf: csrfToken(ctx, csrfBinding(ctx)), flash: takeFlash(ctx), currentPath: ctx.path, ...data });
}
