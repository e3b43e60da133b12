// The one place errors become answers. Whatever failed — our code, a library, the provider, a
// storage outage — the answer has the shape of its route family: RFC 6749 JSON on the token,
// revocation and introspection endpoints, the /v2 error JSON on the /v2 API, an HTML page
// elsewhere. A storage outage is 503 with Retry-After; anything unexpected is a 500 that says
// nothing about our insides (it is logged).
import type { Context } from 'koa';
import { isStorageUnavailable } from '../storage/unavailable.ts';
import { renderPage } from '../views.ts';
import type { Logger } from '../log.ts';
import { OAUTH_ENDPOINTS } from './paths.ts';
import { causeOf, type WayOn } from './error-causes.ts';

export interface ErrorView {
  status: number;
  code: string;
  message: string;
  retryAfter?: number;
  /** The error's class name (oidc-provider's or ours): tells causes with one code apart on the page. */
  kind?: string;
}

const RETRY_AFTER_SECONDS = 5;
export const UNAVAILABLE: ErrorView = {
  status: 503,
  code: 'temporarily_unavailable',
  message: 'The service is briefly unavailable. Please try again in a few seconds.',
  retryAfter: RETRY_AFTER_SECONDS,
};

type ErrorLike = { name?: unknown; status?: unknown; statusCode?: unknown; expose?: unknown; code?: unknown; error?: unknown; error_description?: unknown; message?: unknown };

/** What to tell the client about an error, whoever raised it. */
export function describeError(err: unknown): ErrorView {
  if (isStorageUnavailable(err)) return UNAVAILABLE;
  const e = (err ?? {}) as ErrorLike;
  const status = typeof e.statusCode === 'number' ? e.statusCode : typeof e.status === 'number' ? e.status : 500;
  if (status >= 500 || status < 400) return { status: 500, code: 'server_error', message: 'Something went wrong on our side. Please try again.' };
  // oidc-provider: `error` and `error_description`; ours: `code` and the message; Koa's HttpError: the message when exposed.
  const code = typeof e.error === 'string' ? e.error : typeof e.code === 'string' && /^[a-z_]+$/.test(e.code) ? e.code : 'invalid_request';
  const message = typeof e.error_description === 'string' ? e.error_description : e.expose !== false && typeof e.message === 'string' ? e.message : code;
  return { status, code, message, ...(typeof e.name === 'string' ? { kind: e.name } : {}) };
}

// Our own errors (src/errors.ts) carry messages written for users; the library's are for developers.
const OWN_ERRORS = new Set(['InputError', 'NotFoundError', 'ForbiddenError', 'ConflictError']);

const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}${/[.!?]$/.test(text) ? '' : '.'}`;

export interface ErrorPageOptions {
  /** Where "Try again" leads (the same address, for a GET that may work in a moment). */
  retryUrl?: string | undefined;
}

/** The error page's HTML for a view (also the provider's renderError): plain words, then the technical detail folded. */
export function errorPageHtml(view: ErrorView, user?: unknown, { retryUrl }: ErrorPageOptions = {}): Promise<string> {
  const cause = causeOf(view);
  const wayOn: WayOn[] = [...(cause.retry && retryUrl ? [{ href: retryUrl, text: 'Try again' }] : []), ...cause.wayOn];
  return renderPage('error', {
    user,
    title: cause.title,
    happened: cause.ownMessage && OWN_ERRORS.has(view.kind ?? '') ? sentence(view.message) : cause.happened,
    whatToDo: cause.whatToDo,
    wayOn,
    status: view.status,
    error: view.code,
    technical: view.message,
  });
}

/** A path of this site to link to, never `//host/…` (which a browser reads as another site). */
export const sameSitePath = (url: string) => (url.startsWith('/') && !/^\/[/\\]/.test(url) ? url : undefined);

/** Answers the request with the error, in its route family's shape. */
export async function respondWithError(ctx: Context, view: ErrorView): Promise<void> {
  ctx.status = view.status;
  if (view.retryAfter) ctx.set('Retry-After', String(view.retryAfter));
  if (OAUTH_ENDPOINTS.has(ctx.path)) {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { error: view.code, error_description: view.message };
  } else if (ctx.path.startsWith('/v2/')) {
    ctx.body = { status: 'error', error: { code: view.code, message: view.message } };
  } else {
    ctx.type = 'html';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await errorPageHtml(view, ctx.state.user, { retryUrl: ctx.method === 'GET' ? sameSitePath(ctx.originalUrl) : undefined });
  }
}

/** Koa middleware: every error thrown below it is answered here, and 5xx are logged. */
export function handleErrors(log: Logger) {
  return async function errorResponses(ctx: Context, next: () => Promise<unknown>) {
    try {
      await next();
    } catch (caught) {
      const view = describeError(caught);
      if (view.status >= 500) log.error({ err: caught, path: ctx.path }, view.status === 503 ? 'storage unavailable' : 'request failed');
      await respondWithError(ctx, view);
    }
  };
}
