// The request metrics are written as prom-client's own Counter and Histogram would write them.
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { requestMetrics } from '../../src/http/request-metrics.ts';

describe('request metrics', () => {
  it('expose the same series as a prom-client Counter and Histogram fed the same requests', async () => {
    const theirs = new Registry();
    const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests by endpoint and status', labelNames: ['route', 'method', 'status'], registers: [theirs] });
    const duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency by endpoint',
      labelNames: ['route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [theirs],
    });
    const ours = new Registry();
    const record = requestMetrics(ours);

    const seen: Array<[string, string, number, number]> = [
      ['gateway_check', 'GET', 200, 0.0004],
      ['gateway_check', 'GET', 200, 0.001],
      ['gateway_check', 'HEAD', 401, 0.0031],
      ['token', 'POST', 200, 0.2],
      ['token', 'POST', 429, 3],
      ['me', 'GET', 200, 2.5],
    ];
    for (const [route, method, status, seconds] of seen) {
      record(route, method, status, seconds);
      requests.inc({ route, method, status: String(status) });
      duration.observe({ route }, seconds);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).toMatch(/http_request_duration_seconds_bucket\{le="0.001",route="gateway_check"\} 2/);
  });
});
