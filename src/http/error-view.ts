// What an error says to whoever asked, whoever raised it (oidc-provider, Koa, a store, us): its
// status, code and words. The envelope (envelope.ts) shapes it per route family; the error page
// (error-pages.ts) renders it where the answer is HTML.
import { isStorageUnavailable } from '../storage/unavailable.ts';
import { PageRefusal } from '../errors.ts';

export interface ErrorView {
  status: number;
  code: string;
  message: string;
  retryAfter?: number;
  /** A 405's `Allow` header: the methods the path takes. */
  allow?: string;
  /** The error's class name (oidc-provider's or ours): tells causes with one code apart on the page. */
  kind?: string;
  /** A page's refusal in its own words (PageRefusal): the error page's title and what to do. */
  words?: { title: string; whatToDo?: string | undefined };
}

const RETRY_AFTER_SECONDS = 5;
export const UNAVAILABLE: ErrorView = {
  status: 503,
  code: 'temporarily_unavailable',
  message: 'The service is briefly unavailable. Please try again in a few seconds.',
  retryAfter: RETRY_AFTER_SECONDS,
};

type ErrorLike = { allow?: unknown; name?: unknown; status?: unknown; statusCode?: unknown; expose?: unknown; code?: unknown; error?: unknown; error_description?: unknown; message?: unknown };

/** What to tell the client about an error, whoever raised it. */
export function describeError(err: unknown): ErrorView {
  if (isStorageUnavailable(err)) return UNAVAILABLE;
  const e = (err ?? {}) as ErrorLike;
  const status = typeof e.statusCode === 'number' ? e.statusCode : typeof e.status === 'number' ? e.status : 500;
  // A page's own words for a service it depends on being down (an upstream provider: 502), said as written.
  if (err instanceof PageRefusal && (status === 502 || status === 503)) return { status, code: err.code, message: err.message, kind: err.name, words: { title: err.title, whatToDo: err.whatToDo } };
  if (status >= 500 || status < 400) return { status: 500, code: 'server_error', message: 'Something went wrong on our side. Please try again.' };
  // oidc-provider: `error` and `error_description`; ours: `code` and the message; Koa's HttpError: the message when exposed.
  const code = typeof e.error === 'string' ? e.error : typeof e.code === 'string' && /^[a-z_]+$/.test(e.code) ? e.code : 'invalid_request';
  const message = typeof e.error_description === 'string' ? e.error_description : e.expose !== false && typeof e.message === 'string' ? e.message : code;
  const words = err instanceof PageRefusal ? { words: { title: err.title, whatToDo: err.whatToDo } } : {};
  return { status, code, message, ...(status === 405 && typeof e.allow === 'string' ? { allow: e.allow } : {}), ...(typeof e.name === 'string' ? { kind: e.name } : {}), ...words };
}

