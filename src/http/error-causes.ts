// What an error page says, per cause, in the user's words: one table from what failed (the error
// code, and where one code covers several causes, the error's class — oidc-provider's, or ours in
// src/errors.ts — or its status) to a title, what happened and what to do. Matched exactly, most
// specific row first; the library's own description only ever goes in the page's technical fold.
import { CONNECTED_APPS_PATH, DEVELOPER_CLIENTS_PATH } from './paths.ts';

export interface WayOn {
  href: string;
  text: string;
}

export interface ErrorCause {
  title: string;
  /** What happened; for our own errors (`ownMessage`) their message says it instead. */
  happened: string;
  whatToDo: string;
  /** Links on, best first (the page may put a "start again" or "try again" before them). */
  wayOn: WayOn[];
  /** The error's message was written for users (src/errors.ts): show it as what happened. */
  ownMessage?: boolean;
  /** Offer to load the same address again (it may work in a moment). */
  retry?: boolean;
}

const APPS_WITH_ACCESS: WayOn = { href: CONNECTED_APPS_PATH, text: 'Go to your apps with access' };
const DEVELOPER_SETTINGS: WayOn = { href: DEVELOPER_CLIENTS_PATH, text: 'Developer settings' };

const APP_NOT_AVAILABLE: ErrorCause = {
  title: 'This app is not available',
  happened: 'The app that sent you here is not known to us, or it may not be used at the moment (it may be waiting for review, suspended or removed). Nothing was shared with it.',
  whatToDo: 'Go back to the app and let its makers know. Your account is not affected.',
  wayOn: [APPS_WITH_ACCESS],
};

const APP_SET_UP_INCORRECTLY: ErrorCause = {
  title: 'This app is set up incorrectly',
  happened: 'The app asked us to send you back to an address it has not registered with us, so we stopped here. Nothing was shared with it.',
  whatToDo: "Go back to the app and let its makers know. If you are its developer, register the exact redirect URI in your developer settings.",
  wayOn: [APPS_WITH_ACCESS, DEVELOPER_SETTINGS],
};

const SIGN_IN_EXPIRED: ErrorCause = {
  title: 'This sign-in has expired',
  happened: 'This sign-in took too long or was opened in another browser, so we could not continue it. Nothing was shared with the app.',
  whatToDo: 'Go back to the app and start again from there, in this browser.',
  wayOn: [APPS_WITH_ACCESS],
};

const FORM_EXPIRED: ErrorCause = {
  title: 'This form has expired',
  happened: 'The form was not sent from this site, or it is too old. Nothing was changed or shared.',
  whatToDo: 'Go back to the app and start again from there.',
  wayOn: [APPS_WITH_ACCESS],
};

const INVALID_REQUEST: ErrorCause = {
  title: 'Something is wrong with this link',
  happened: 'The app sent you here with a request that is incomplete or that we do not accept. Nothing was shared with it.',
  whatToDo: 'Go back to the app and try again. If it happens again, let its makers know.',
  wayOn: [APPS_WITH_ACCESS],
};

// A pushed authorization request (RFC 9126, docs/par.md) lives a minute and works once.
const REQUEST_EXPIRED: ErrorCause = {
  title: 'This request has expired',
  happened: 'The app prepared this request for you in advance, and it has expired or was already used: each one works once, for a short time. Nothing was shared with the app.',
  whatToDo: 'Go back to the app and start again from there.',
  wayOn: [APPS_WITH_ACCESS],
};

const SCOPE_NOT_ALLOWED: ErrorCause = {
  title: 'This app asked for more than it may',
  happened: 'The app asked for access it is not allowed to ask for. Nothing was shared with it.',
  whatToDo: 'Go back to the app and let its makers know.',
  wayOn: [APPS_WITH_ACCESS, DEVELOPER_SETTINGS],
};

const NOT_ALLOWED: ErrorCause = {
  title: 'You cannot continue here',
  happened: 'You do not have access to this.',
  whatToDo: 'If you think you should, ask the person who manages it.',
  wayOn: [APPS_WITH_ACCESS],
  ownMessage: true,
};

const CHANGED_MEANWHILE: ErrorCause = {
  title: 'Something changed while the page was open',
  happened: 'Something changed while the page was open, so nothing was done.',
  whatToDo: 'Start again from where you came from.',
  wayOn: [APPS_WITH_ACCESS],
  ownMessage: true,
};

const NOT_FOUND: ErrorCause = {
  title: 'Page not found',
  happened: 'There is nothing at this address.',
  whatToDo: 'Check the address, or go on to your account.',
  wayOn: [APPS_WITH_ACCESS],
};

const BUSY: ErrorCause = {
  title: 'We are briefly unavailable',
  happened: 'The service is busy or restarting and could not answer just now. Nothing was lost.',
  whatToDo: 'Please try again in a few seconds.',
  wayOn: [APPS_WITH_ACCESS],
  retry: true,
};

const OUR_FAULT: ErrorCause = {
  title: 'Something went wrong on our side',
  happened: 'We could not finish this request. It was not your fault, and we have been told about it.',
  whatToDo: 'Please try again in a moment.',
  wayOn: [APPS_WITH_ACCESS],
  retry: true,
};

interface Row {
  code?: string;
  /** The error's class name: oidc-provider's (e.g. SessionNotFound) or ours (src/errors.ts). */
  kind?: string;
  status?: number;
  cause: ErrorCause;
}

// First match wins: specific rows before the per-code and per-status ones.
const CAUSES: Row[] = [
  { code: 'invalid_client', cause: APP_NOT_AVAILABLE },
  { code: 'invalid_redirect_uri', cause: APP_SET_UP_INCORRECTLY },
  // The sign-in step's record or its cookie is gone: expired, finished, or another browser.
  { code: 'invalid_request', kind: 'SessionNotFound', cause: SIGN_IN_EXPIRED },
  { code: 'invalid_request', kind: 'ForbiddenError', status: 403, cause: FORM_EXPIRED },
  { code: 'invalid_request', kind: 'InputError', cause: { ...INVALID_REQUEST, title: 'This request cannot be completed', ownMessage: true } },
  { code: 'invalid_request_uri', cause: REQUEST_EXPIRED },
  { code: 'invalid_scope', cause: SCOPE_NOT_ALLOWED },
  { code: 'access_denied', cause: NOT_ALLOWED },
  { code: 'conflict', cause: CHANGED_MEANWHILE },
  { code: 'not_found', cause: NOT_FOUND },
  { code: 'temporarily_unavailable', cause: BUSY },
  { status: 503, cause: BUSY },
  { code: 'server_error', cause: OUR_FAULT },
  { status: 500, cause: OUR_FAULT },
  { status: 403, cause: NOT_ALLOWED },
  { status: 404, cause: NOT_FOUND },
];

export interface ErrorFacts {
  status: number;
  code: string;
  kind?: string | undefined;
}

/** The cause of an error as the error page tells it; anything else is an unusable request. */
export function causeOf({ status, code, kind }: ErrorFacts): ErrorCause {
  const row = CAUSES.find((r) => (r.code === undefined || r.code === code) && (r.kind === undefined || r.kind === kind) && (r.status === undefined || r.status === status));
  return row?.cause ?? INVALID_REQUEST;
}
