// Our errors carry their HTTP meaning — a status, a machine-readable code, and whether the message
// may be shown to the client — as oidc-provider's OIDCProviderError and Koa's HttpError do. One
// responder (src/http/envelope.ts) shapes any of them for the route family that failed;
// the operator scripts print the message and exit 1.
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly expose: boolean = true;

  constructor(message: string, status: number, code: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Bad input: a clear refusal that changes nothing. */
export class InputError extends AppError {
  override name = 'InputError';
  constructor(message: string) {
    super(message, 400, 'invalid_request');
  }
}

export class NotFoundError extends AppError {
  override name = 'NotFoundError';
  constructor(message: string) {
    super(message, 404, 'not_found');
  }
}

/** A method the path does not take (RFC 9110 15.5.6): the answer names the ones it does in `Allow`. */
export class MethodNotAllowedError extends AppError {
  override name = 'MethodNotAllowedError';
  readonly allow: string;
  constructor(message: string, allowed: readonly string[]) {
    super(message, 405, 'invalid_request');
    this.allow = allowed.join(', ');
  }
}

/** Not for this user (an administrator's page, a form from another site, an unreviewed app). */
export class ForbiddenError extends AppError {
  override name = 'ForbiddenError';
  constructor(message: string, code = 'access_denied') {
    super(message, 403, code);
  }
}

/** The thing changed under the request (a stale form): nothing was done. */
export class ConflictError extends AppError {
  override name = 'ConflictError';
  constructor(message: string) {
    super(message, 409, 'conflict');
  }
}

/** A limit on how much or how often (test events, clients per owner): nothing was done; later or less may work. */
export class LimitError extends AppError {
  override name = 'LimitError';
  constructor(message: string) {
    super(message, 429, 'limit_reached');
  }
}

/**
 * A refusal of our pages in their own words: the error page (rendered by the envelope, like every
 * error) shows its title, its message as what happened, and what to do, instead of its cause's row.
 */
export class PageRefusal extends AppError {
  override name = 'PageRefusal';
  readonly title: string;
  readonly whatToDo: string | undefined;
  constructor(status: number, code: string, words: { title: string; happened: string; whatToDo?: string }) {
    super(words.happened, status, code);
    this.title = words.title;
    this.whatToDo = words.whatToDo;
  }
}
