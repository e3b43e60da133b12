// The delivery worker: takes jobs from the queue (any instance may; pg-boss hands each job to one),
// posts the event signed with the client's own secrets, records the attempt for the developer page
// and counts it. The record says what went wrong in our words, never what answered (a status code
// at most): an error text could otherwise tell a developer what listens at an address. A failure is
// thrown back to pg-boss, which retries with exponential back-off; 24 hours after the event the
// worker gives up (and completes the job, so the client's later events are not held back).
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Job } from 'pg-boss';
import type { Db } from '../storage/db.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../http/metrics.ts';
import { allowedAddresses, checkedLookup, type AddressPolicy } from './address-policy.ts';
import { InputError } from '../errors.ts';
import type { DataCipher } from '../storage/data-encryption.ts';
import { signatureHeaders } from './signing.ts';
import { signingSecretsOf } from './secrets.ts';
import { webhookUrlOf, type DeliveryJob } from './outbox.ts';
import { RETRY_WINDOW_SECONDS, WEBHOOK_QUEUE, type WebhookQueue } from './queue.ts';
import { POLICY } from '../settings.ts';

export const ATTEMPT_TIMEOUT_MS = POLICY.ATTEMPT_TIMEOUT_MS.value;
/** Worker slots per instance; one owner's deliveries take at most OWNER_CONCURRENCY of them (outbox.ts groups jobs by owner). */
export const WORKER_SLOTS = POLICY.WORKER_SLOTS.value;
export const OWNER_CONCURRENCY = POLICY.OWNER_CONCURRENCY.value;
/** Attempts kept per client for the developer page. */
const KEPT_ATTEMPTS = POLICY.KEPT_ATTEMPTS.value;
// Enough of an answer to know it was read; the rest is not our business.
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface AttemptOutcome {
  statusCode?: number;
  error?: string;
}

/**
 * One POST of a signed body. Redirects are not followed (a 3xx is a failure: the URL is the one the
 * owner set and checked), and the whole attempt has ATTEMPT_TIMEOUT_MS.
 */
export async function postWebhook(url: URL, headers: Record<string, string>, body: string, policy: AddressPolicy): Promise<AttemptOutcome> {
  // A literal address gets no lookup from Node: check it here. Names are checked by the lookup itself.
  if (net.isIP(url.hostname.replace(/^\[(.*)\]$/, '$1'))) await allowedAddresses(url.hostname, policy);
  const request = url.protocol === 'https:' ? https.request : http.request;
  return new Promise<AttemptOutcome>((resolve) => {
    const req = request(url, {
      method: 'POST',
      agent: false,
      lookup: checkedLookup(policy),
      headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'scheduling-platform-webhooks/1' },
    });
    const deadline = setTimeout(() => req.destroy(Object.assign(new Error('timeout'), { code: TIMED_OUT })), ATTEMPT_TIMEOUT_MS);
    req.on('response', (res) => {
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_RESPONSE_BYTES) res.destroy();
      });
      const done = () => {
        clearTimeout(deadline);
        resolve({ statusCode: res.statusCode ?? 0 });
      };
      res.on('end', done);
      res.on('close', done);
      res.on('error', done);
    });
    req.on('error', (err: Error & { code?: string }) => {
      clearTimeout(deadline);
      resolve({ error: failureText(err) });
    });
    req.end(body);
  });
}

const TIMED_OUT = 'WEBHOOK_TIMED_OUT';
const TLS_FAILURE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|EPROTO$)/;

/**
 * What went wrong, in our words. Node's messages can carry what answered (a parser error quoting
 * the bytes received, a certificate's names), so only our own refusals keep theirs.
 */
export function failureText(err: Error & { code?: string }): string {
  const code = err.code ?? '';
  if (err instanceof InputError) return err.message;
  if (code === TIMED_OUT) return `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`;
  if (code.startsWith('HPE_')) return 'the answer was not a valid HTTP response';
  if (TLS_FAILURE.test(code)) return 'the TLS connection failed (certificate or protocol)';
  if (code === 'ECONNREFUSED') return 'the connection was refused';
  if (code === 'ECONNRESET' || err.message === 'socket hang up') return 'the connection was closed before an answer';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'the address is unreachable';
  return 'the connection failed';
}

export const succeeded = (outcome: AttemptOutcome) => outcome.statusCode !== undefined && outcome.statusCode >= 200 && outcome.statusCode < 300;

async function recordAttempt(db: Db, job: DeliveryJob, attempt: number, outcome: AttemptOutcome): Promise<void> {
  await db('webhook_deliveries').insert({
    client_id: job.clientId,
    event_id: job.eventId,
    event_type: job.type,
    attempt,
    status_code: outcome.statusCode ?? null,
    error: outcome.error?.slice(0, 300) ?? null,
    succeeded: succeeded(outcome),
  });
  const oldestKept = await db('webhook_deliveries').where('client_id', job.clientId).orderBy('id', 'desc').offset(KEPT_ATTEMPTS - 1).first('id');
  if (oldestKept) await db('webhook_deliveries').where('client_id', job.clientId).where('id', '<', oldestKept.id).delete();
}

export interface WorkerDeps {
  db: Db;
  queue: WebhookQueue;
  cipher: DataCipher;
  policy: AddressPolicy;
  metrics: Metrics;
  log: Logger;
  /** How often an idle worker asks the queue for a job (default 1 s, pg-boss's floor 0.5 s); tests shorten it. */
  pollingSeconds?: number;
}

/** Handles one job: one attempt. Throws to have pg-boss retry it later. */
export async function deliverJob({ db, cipher, policy, metrics, log }: WorkerDeps, job: DeliveryJob, attempt: number): Promise<void> {
  const target = await webhookUrlOf(db, job.clientId);
  // A URL set before secrets were per client has none until its owner generates one: retried until then.
  const secrets = target ? await signingSecretsOf(db, job.clientId, cipher) : [];
  let outcome: AttemptOutcome;
  if (!target) outcome = { error: 'not sent: the client has no webhook URL (any more)' };
  else if (secrets.length === 0) outcome = { error: 'not sent: the client has no signing secret yet (generate one on its page)' };
  else {
    try {
      outcome = await postWebhook(new URL(target), signatureHeaders(secrets, job.eventId, job.body), job.body, policy);
    } catch (err) {
      outcome = { error: failureText(err as Error) };
    }
  }
  await recordAttempt(db, job, attempt, outcome);
  if (succeeded(outcome)) {
    metrics.webhookDeliveries.inc({ outcome: 'delivered' });
    return;
  }
  metrics.webhookDeliveries.inc({ outcome: 'failed' });
  // No URL: nothing to retry. Past the window: give up, so later events of the client can go.
  if (!target) return;
  if (Date.now() - job.occurredAt >= RETRY_WINDOW_SECONDS * 1000) {
    metrics.webhookDeliveries.inc({ outcome: 'given_up' });
    log.warn({ clientId: job.clientId, eventId: job.eventId, type: job.type, attempt }, 'webhook given up after 24 hours of failed attempts');
    return;
  }
  throw new Error(outcome.error ?? `the app answered HTTP ${outcome.statusCode}`);
}

/** Starts taking jobs; pg-boss's stop() ends it (waiting for attempts in flight). */
export async function startWebhookWorker(deps: WorkerDeps): Promise<void> {
  // Jobs are grouped by owner (outbox.ts): one owner gets at most OWNER_CONCURRENCY of this
  // instance's slots, so one developer's slow endpoints cannot take every slot from everyone else's
  // events. Counted in memory (exact: a job fetched past the limit goes back to the queue untouched);
  // pg-boss's database-wide groupConcurrency is not used: slots fetching at the same moment all
  // passed its count (three attempts of one owner at once, in test/webhook-fairness.test.ts).
  const perOwner = { localGroupConcurrency: OWNER_CONCURRENCY };
  await deps.queue.work<DeliveryJob>(WEBHOOK_QUEUE, { pollingIntervalSeconds: deps.pollingSeconds ?? 1, batchSize: 1, localConcurrency: WORKER_SLOTS, ...perOwner }, async (jobs: Job<DeliveryJob>[]) => {
    for (const job of jobs) await deliverJob(deps, job.data, job.retryCount + 1);
  });
}
