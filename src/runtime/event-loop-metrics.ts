/**
 * The event loop's lag as prom-client's nodejs_eventloop_lag_* families (its default-metric
 * collector: perf_hooks' monitorEventLoopDelay, sampled every 10 ms as collectDefaultMetrics does),
 * for the speaker: a stalled event loop is what issue #15's flood bound is about
 * (test/integration/memberlist-flood.test.ts reads nodejs_eventloop_lag_max_seconds). A module of its
 * own so that the controller, which exports the process_* families only (runtime/metrics-client.ts),
 * does not load node:perf_hooks (about 0.35 MiB resident; README, Performance).
 */
import eventLoopLag from 'prom-client/lib/metrics/eventLoopLag.js';
import type { Registry } from './metrics-client.ts';

/** The metric families collectEventLoopLag registers (prom-client's names, in order). */
export const EVENT_LOOP_METRIC_NAMES: readonly string[] = eventLoopLag.metricNames;

/** Registers the nodejs_eventloop_lag_* gauges on `registry`; the monitor runs from now on, read at each scrape. */
export function collectEventLoopLag(registry: Registry): void {
  eventLoopLag(registry, { eventLoopMonitoringPrecision: 10 });
}
