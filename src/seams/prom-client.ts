// The seam to prom-client's registry: a metric of our own (counted in plain maps on the request
// path, turned into series only when scraped: src/http/request-metrics.ts) registered beside its
// own, written as they are. Its Metric type is a class with private members, so ours is an object
// of the shape the registry reads: name, help, type, aggregator, get() and reset().
import type { Metric, Registry } from 'prom-client';
import type { UpstreamFile } from './upstream.ts';

export const UPSTREAM: readonly UpstreamFile[] = [
  { file: 'prom-client/lib/registry.js', sha256: 'b87bebffcfdd1e82ea8d78b5b0d5577cf0ed4b6ff743b2685d894a72a0830b1e', what: "registerMetric keeps any object by its name; metrics() and getMetricsAsString write what its get() returns (name, help, type, values with metricName and labels) and read its aggregator" },
];

export interface Series {
  metricName?: string;
  labels: Record<string, string | number>;
  value: number;
}

/** A metric the registry writes like its own: name, help, type and what get() returns. */
export function registerPlainMetric(registry: Registry, name: string, help: string, type: 'counter' | 'histogram', values: () => Series[]): void {
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum',
    get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
    reset: () => {},
  };
  registry.registerMetric(metric as unknown as Metric);
}
