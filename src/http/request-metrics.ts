// HTTP requests by route, method and status, and their latency by route, for Prometheus. Counted
// in plain maps on the request path and turned into series only when scraped: prom-client's own
// metrics validate and hash their label set on every observation, which under load cost
// a large share of a gateway decision (docs/benchmark.md). The series are those prom-client's
// Counter and Histogram would write (registered through src/seams/prom-client.ts).
import type { Registry } from 'prom-client';
import { registerPlainMetric, type Series } from '../seams/prom-client.ts';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

interface Latency {
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  buckets: number[];
  sum: number;
  count: number;
}

export function requestMetrics(registry: Registry) {
  const counts = new Map<string, Series>();
  const latencies = new Map<string, Latency>();

  registerPlainMetric(registry, 'http_requests_total', 'HTTP requests by endpoint and status', 'counter', () => [...counts.values()]);
  registerPlainMetric(registry, 'http_request_duration_seconds', 'HTTP request latency by endpoint', 'histogram', () =>
    [...latencies].flatMap(([route, { buckets, sum, count }]) => {
      let cumulative = 0;
      const series: Series[] = buckets.map((n, i) => ({
        metricName: 'http_request_duration_seconds_bucket',
        labels: { le: i < BUCKETS.length ? BUCKETS[i]! : '+Inf', route },
        value: (cumulative += n),
      }));
      return [...series, { metricName: 'http_request_duration_seconds_sum', labels: { route }, value: sum }, { metricName: 'http_request_duration_seconds_count', labels: { route }, value: count }];
    }),
  );

  /** Counts and times one answered request. */
  return function recordRequest(route: string, method: string, status: number, seconds: number): void {
    const key = `${route} ${method} ${status}`;
    const count = counts.get(key);
    if (count) count.value += 1;
    else counts.set(key, { labels: { route, method, status: String(status) }, value: 1 });

    let latency = latencies.get(route);
    if (!latency) latencies.set(route, (latency = { buckets: new Array<number>(BUCKETS.length + 1).fill(0), sum: 0, count: 0 }));
    let bucket = 0;
    while (bucket < BUCKETS.length && seconds > BUCKETS[bucket]!) bucket += 1;
    latency.buckets[bucket]! += 1;
    latency.sum += seconds;
    latency.count += 1;
  };
}
