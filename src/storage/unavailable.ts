// Recognises "the database or Redis cannot be reached right now", which is answered with 503 and
// a retry hint, unlike a bug (500).
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', '57P01', '57P03', '08006', '08001', '08003']);
const CONNECTION_MESSAGES = [
  /Connection is closed/i,
  /Reached the max retries per request/i,
  /Timeout acquiring a connection/i,
  /Connection terminated/i,
  /connect ECONNREFUSED/i,
  /Stream isn't writeable/i,
  /enableOfflineQueue options is false/i, // a Cluster that is not ready (see failFastOnceConnected)
  /CLUSTERDOWN/,
  /Failed to refresh slots cache/i,
  /TRYAGAIN/,
  /All sentinels are unreachable/i,
];
const CONNECTION_ERROR_NAMES = new Set(['MaxRetriesPerRequestError', 'KnexTimeoutError', 'ClusterAllFailedError']);

type ErrorLike = { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; previousErrors?: unknown };

export function isStorageUnavailable(err: unknown, seen = new Set<unknown>()): boolean {
  if (!err || typeof err !== 'object' || seen.has(err) || seen.size > 20) return false;
  seen.add(err);
  const e = err as ErrorLike;
  if (typeof e.code === 'string' && CONNECTION_CODES.has(e.code)) return true;
  if (typeof e.name === 'string' && CONNECTION_ERROR_NAMES.has(e.name)) return true;
  if (typeof e.message === 'string' && CONNECTION_MESSAGES.some((re) => re.test(e.message as string))) return true;
  // A Redis transaction aborted by the errors of its queued commands (e.g. CLUSTERDOWN).
  if (Array.isArray(e.previousErrors) && e.previousErrors.some((p) => isStorageUnavailable(p, seen))) return true;
  return isStorageUnavailable(e.cause, seen);
}

/** Rejects with a storage-unavailable error when `promise` takes longer than `ms`. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${ms} ms`), { code: 'ETIMEDOUT' })), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
