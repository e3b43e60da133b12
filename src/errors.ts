// Errors our own code raises for bad input; HTTP handlers and the CLI turn them into a
// clear refusal (400 / exit code 2) instead of a crash.
export class InputError extends Error {
  override name = 'InputError';
}

export class NotFoundError extends Error {
  override name = 'NotFoundError';
}
