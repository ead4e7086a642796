/**
 * The parts of prom-client the daemons use, each loaded from its own module rather than from
 * prom-client's index, which also loads its Histogram, Summary, Pushgateway (node:zlib) and cluster
 * aggregation: Registry, Counter, Gauge, and the process metrics (collectProcessMetrics), without
 * prom-client's nodejs_* collectors: about 0.7 MiB of each daemon's resident memory.
 * Issue #14; README, Performance.
 */
import Counter from 'prom-client/lib/counter.js';
import Gauge from 'prom-client/lib/gauge.js';
import osMemoryHeap from 'prom-client/lib/metrics/osMemoryHeap.js';
import processCpuTotal from 'prom-client/lib/metrics/processCpuTotal.js';
import processMaxFileDescriptors from 'prom-client/lib/metrics/processMaxFileDescriptors.js';
import processOpenFileDescriptors from 'prom-client/lib/metrics/processOpenFileDescriptors.js';
import processStartTime from 'prom-client/lib/metrics/processStartTime.js';
import Registry from 'prom-client/lib/registry.js';

export { Counter, Gauge, Registry };

/**
 * prom-client's default-metric collectors of the process_* families MetalLB's daemons export from
 * Go's process collector (process_cpu_seconds_total, process_start_time_seconds,
 * process_resident_memory_bytes, process_virtual_memory_bytes, process_open_fds, process_max_fds;
 * prom-client adds process_cpu_user/system_seconds_total and process_heap_bytes). Not the nodejs_*
 * families of prom-client's collectDefaultMetrics (heap spaces through node:v8, a
 * garbage-collection histogram through a PerformanceObserver, active handles, requests and
 * resources, the version, the event loop's lag: the counterpart of Go's go_* runtime metrics);
 * the speaker adds the event loop's lag (runtime/event-loop-metrics.ts).
 */
const PROCESS_COLLECTORS = [processCpuTotal, processStartTime, osMemoryHeap, processOpenFileDescriptors, processMaxFileDescriptors];

/** The metric families collectProcessMetrics registers (prom-client's names, in order). */
export const PROCESS_METRIC_NAMES: readonly string[] = PROCESS_COLLECTORS.flatMap((c) => c.metricNames);

/** Registers prom-client's process collectors (PROCESS_COLLECTORS) on `registry`, read at each scrape. */
export function collectProcessMetrics(registry: Registry): void {
  for (const collector of PROCESS_COLLECTORS) collector(registry);
}
