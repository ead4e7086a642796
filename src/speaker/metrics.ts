/**
 * The speaker's Prometheus metrics, named as MetalLB v0.16.1 names them: the announced gauge
 * (`speaker/main.go`) and the k8s client counters and gauges (`internal/k8s/controllers/stats.go`),
 * on their own prom-client registry so several speakers can live in one process (tests).
 * The data planes (issue #4's `metallb_layer2_*` counters) register on `registry` too.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

/** The speaker's metric objects. */
export interface SpeakerMetrics {
  readonly registry: Registry;
  /** `metallb_speaker_announced{service,protocol,node,ip}`: 1 while this node announces the IP. */
  readonly announced: Gauge<'service' | 'protocol' | 'node' | 'ip'>;
  /** `metallb_k8s_client_updates_total`: object updates processed. */
  readonly updates: Counter;
  /** `metallb_k8s_client_update_errors_total`: updates whose handling failed. */
  readonly updateErrors: Counter;
  /** `metallb_k8s_client_config_loaded_bool`: 1 once a configuration loaded. */
  readonly configLoaded: Gauge;
  /** `metallb_k8s_client_config_stale_bool`: 1 while running on a stale configuration. */
  readonly configStale: Gauge;
}

/** Creates the metrics on a fresh registry; `processMetrics` adds prom-client's process/Node.js defaults. */
export function speakerMetrics(opts: { processMetrics?: boolean } = {}): SpeakerMetrics {
  const registry = new Registry();
  if (opts.processMetrics) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    announced: new Gauge({
      name: 'metallb_speaker_announced',
      help: 'Services being announced from this node. This is desired state, it does not guarantee that the routing protocols have converged.',
      labelNames: ['service', 'protocol', 'node', 'ip'] as const,
      registers,
    }),
    updates: new Counter({ name: 'metallb_k8s_client_updates_total', help: 'Number of k8s object updates that have been processed.', registers }),
    updateErrors: new Counter({ name: 'metallb_k8s_client_update_errors_total', help: 'Number of k8s object updates that failed for some reason.', registers }),
    configLoaded: new Gauge({ name: 'metallb_k8s_client_config_loaded_bool', help: '1 if the MetalLB configuration was successfully loaded at least once.', registers }),
    configStale: new Gauge({ name: 'metallb_k8s_client_config_stale_bool', help: '1 if running on a stale configuration, because the latest config failed to load.', registers }),
  };
}
