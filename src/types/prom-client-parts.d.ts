/**
 * Types of the prom-client modules src/runtime/metrics-client.ts loads one by one (prom-client
 * ships types for its index only): the classes are the index's exports of the same name; each
 * default-metric module is a function registering its collectors on a registry, with the names of
 * the families it registers as `metricNames`.
 */
declare module 'prom-client/lib/registry.js' {
  import { Registry } from 'prom-client';
  export = Registry;
}
declare module 'prom-client/lib/counter.js' {
  import { Counter } from 'prom-client';
  export = Counter;
}
declare module 'prom-client/lib/gauge.js' {
  import { Gauge } from 'prom-client';
  export = Gauge;
}
declare module 'prom-client/lib/metrics/*.js' {
  import type { DefaultMetricsCollectorConfiguration, Registry } from 'prom-client';
  const register: ((registry: Registry, config?: Omit<DefaultMetricsCollectorConfiguration<'text/plain; version=0.0.4; charset=utf-8'>, 'register'>) => void) & { readonly metricNames: readonly string[] };
  export = register;
}
