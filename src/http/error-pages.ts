// The error page: what an error looks like where the answer is HTML (the route families' other
// shapes, and which family a path is, are the envelope's: envelope.ts). Also the provider's
// renderError.
import { renderPage } from '../views.ts';
import { causeOf, type WayOn } from './error-causes.ts';
import type { ErrorView } from './error-view.ts';

// Our own errors (src/errors.ts) carry messages written for users; the library's are for developers.
const OWN_ERRORS = new Set(['InputError', 'NotFoundError', 'ForbiddenError', 'ConflictError']);

const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}${/[.!?]$/.test(text) ? '' : '.'}`;

export interface ErrorPageOptions {
  /** Where "Try again" leads (the same address, for a GET that may work in a moment). */
  retryUrl?: string | undefined;
  /** The pages' layout data for a signed-in user (the sign-out form's CSRF token, the current path): src/web/forms.ts. */
  layout?: PageLayout | undefined;
}

export type PageLayout = Record<string, unknown>;

declare module 'koa' {
  interface DefaultState {
    /** The pages' layout data for this request's error page, set by the pages for a signed-in user (src/web/session.ts). */
    errorPageLayout?: () => PageLayout;
    /** PLATFORM_NAME, the brand line of every page (set by the app's common steps, src/app.ts). */
    platformName?: string;
  }
}

/** The error page's HTML for a view (also the provider's renderError): plain words, then the technical detail folded. */
export function errorPageHtml(view: ErrorView, user?: unknown, { retryUrl, layout }: ErrorPageOptions = {}): Promise<string> {
  // A page's refusal in its own words: no cause row, no technical fold, the default way on.
  if (view.words) return renderPage('error', { ...layout, user, title: view.words.title, happened: view.message, whatToDo: view.words.whatToDo });
  const cause = causeOf(view);
  const wayOn: WayOn[] = [...(cause.retry && retryUrl ? [{ href: retryUrl, text: 'Try again' }] : []), ...cause.wayOn];
  return renderPage('error', {
    ...layout,
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
