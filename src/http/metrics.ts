// Prometheus metrics (prom-client): requests and latency per endpoint, tokens issued,
// authentication failures, rate-limit refusals, webhook deliveries, and the process's own metrics. Served at
// GET /metrics only by metricsListener, on its own port (METRICS_PORT), never on the public one.
import http from 'node:http';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { requestMetrics } from './request-metrics.ts';
import { registerPlainMetric, type Series } from '../seams/prom-client.ts';
import { APP_AUTHORIZE_PATH, CHECK_PATH, INTERACTION_PATH, INTROSPECTION_PATH, ME_PATH, PAR_PATH, PROTECTED_RESOURCE_PATH, PROVIDER_PATH, REVOCATION_PATH, RFC8414_PATH, TOKEN_PATH } from './paths.ts';

// Low-cardinality endpoint names: never a raw path (ids, uids and tokens would explode the series).
const EXACT = new Map<string, string>([
  [TOKEN_PATH, 'token'],
  [REVOCATION_PATH, 'revocation'],
  [INTROSPECTION_PATH, 'introspection'],
  [PAR_PATH, 'pushed_authorization_request'],
  [`${PROVIDER_PATH}/authorize`, 'authorization'],
  [APP_AUTHORIZE_PATH, 'authorization'],
  [`${PROVIDER_PATH}/jwks`, 'jwks'],
  [RFC8414_PATH, 'discovery'],
  [`${PROVIDER_PATH}/.well-known/openid-configuration`, 'discovery'],
  [PROTECTED_RESOURCE_PATH, 'discovery'], // RFC 9728, the platform API's
  [CHECK_PATH, 'gateway_check'],
  [ME_PATH, 'me'],
  ['/health', 'operations'],
  ['/ready', 'operations'],
]);

export function routeName(path: string): string {
  const exact = EXACT.get(path);
  if (exact) return exact;
  if (path.startsWith(`${CHECK_PATH}/`)) return 'gateway_check'; // Envoy's form: the call's path appended
  if (path.startsWith(`${INTERACTION_PATH}/`)) return path.endsWith('/login') ? 'sign_in' : /\/(confirm|abort|switch-account)$/.test(path) ? 'consent' : 'interaction_page';
  if (path.startsWith(`${APP_AUTHORIZE_PATH}/`) || path.startsWith(`${PROVIDER_PATH}/authorize/`)) return 'authorization_resume';
  return 'other';
}

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const recordRequest = requestMetrics(registry);
  const tokensIssued = new Counter({ name: 'oauth_tokens_issued_total', help: 'Token responses by grant type', labelNames: ['grant_type'] as const, registers: [registry] });
  const authFailures = new Counter({
    name: 'oauth_auth_failures_total',
    help: 'Failed authentications: client (secret) or user (password)',
    labelNames: ['kind'] as const,
    registers: [registry],
  });
  const securityEvents = new Counter({ name: 'oauth_security_events_total', help: 'Code replays, refresh token reuse, rate-limit refusals', labelNames: ['event'] as const, registers: [registry] });
  // Webhooks to apps (src/webhooks/delivery.ts): every attempt, delivered or failed; given_up once per event after 24 hours.
  const webhookDeliveries = new Counter({ name: 'webhook_deliveries_total', help: 'Webhook delivery attempts by outcome (delivered, failed, given_up)', labelNames: ['outcome'] as const, registers: [registry] });

  // Whether each memory cache serves (1) or is bypassed (0: its change channel is lost or missed
  // its heartbeat, src/storage/heartbeat.ts), read when scraped.
  const memoryCaches = new Map<string, () => boolean>();
  new Gauge({
    name: 'oauth_memory_cache_serving',
    help: 'Whether a memory cache (records, tokens) serves (1) or every read goes to the store (0)',
    labelNames: ['cache'] as const,
    registers: [registry],
    collect() {
      for (const [cache, serving] of memoryCaches) this.set({ cache }, serving() ? 1 : 0);
    },
  });
  const heartbeatsMissed = new Counter({
    name: 'oauth_channel_heartbeats_missed_total',
    help: 'Change channels (record_changes, revocations) that heard no heartbeat within the deadline and were replaced',
    labelNames: ['channel'] as const,
    registers: [registry],
  });

  // Whether the fast path (src/fast/) answers (1) or was switched off at start (0: FAST_PATHS=off
  // or an assumption that did not hold; the log says which).
  const fastPathOn = new Gauge({ name: 'oauth_fast_path_on', help: 'Whether the fast path answers (1) or every request goes through the app and the provider (0)', registers: [registry] });

  // How each request the fast path took ended (src/fast/dispatch.ts): served there, handed over
  // to the app and the provider (with why), or failed there (logged; then handed over too).
  // Counted in plain maps like the request series (request-metrics.ts): it is on every hot request,
  // and prom-client's Counter hashes and validates its labels on every inc.
  const fastPathCounts = new Map<string, Map<string, Series>>(); // route → outcome[ reason] → series
  registerPlainMetric(registry, 'oauth_fast_path_requests_total', 'Requests the fast path took, by route and outcome (served, handed_over with its reason, failed)', 'counter', () =>
    [...fastPathCounts.values()].flatMap((byOutcome) => [...byOutcome.values()]),
  );
  /** Counts one fast-path outcome; no allocation once the route and outcome were seen. */
  function fastPathOutcome(route: string, outcome: 'served' | 'handed_over' | 'failed', reason = ''): void {
    let byOutcome = fastPathCounts.get(route);
    if (!byOutcome) fastPathCounts.set(route, (byOutcome = new Map()));
    const key = reason ? `${outcome} ${reason}` : outcome;
    const series = byOutcome.get(key);
    if (series) series.value += 1;
    else byOutcome.set(key, { labels: { route, outcome, reason }, value: 1 });
  }

  /** Counts and times one answered request (the envelope, src/http/envelope.ts, for both transports). */
  function record(route: string, method: string, status: number, seconds: number): void {
    recordRequest(route, method, status, seconds);
    if (status === 429) securityEvents.inc({ event: 'rate_limited' });
  }

  return {
    registry,
    record,
    tokensIssued,
    authFailures,
    securityEvents,
    webhookDeliveries,
    heartbeatsMissed,
    fastPathOn,
    fastPathOutcome,
    /** Reports a memory cache in oauth_memory_cache_serving. */
    watchMemoryCache(cache: string, serving: () => boolean): void {
      memoryCaches.set(cache, serving);
    },
  };
}

/**
 * The metrics server (not yet listening): GET /metrics, 404 for anything else. Plain node:http,
 * apart from the public app, so that no public route, proxy or middleware can ever reach it.
 */
export function metricsListener(metrics: Pick<Metrics, 'registry'>): http.Server {
  return http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found\n');
      return;
    }
    metrics.registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
}
