/**
 * The speaker's Prometheus metrics, named as MetalLB v0.16.1 names them: the announced gauge
 * (`speaker/main.go`) and the k8s client counters and gauges (`internal/k8s/controllers/stats.go`),
 * on their own prom-client registry so several speakers can live in one process (tests).
 * The data planes (issue #4's `metallb_layer2_*` counters) register on `registry` too.
 */
import { collectEventLoopLag } from '../runtime/event-loop-metrics.ts';
import { Counter, Gauge, Registry, collectProcessMetrics } from '../runtime/metrics-client.ts';

/** The speaker's metric objects. */
export interface SpeakerMetrics {
  readonly registry: Registry;
  /** `metallb_speaker_announced{service,protocol,node,ip}`: 1 while this node announces the IP. */
  readonly announced: Gauge<'service' | 'protocol' | 'node' | 'ip'>;
  /**
   * `metallb_speaker_unannounced{service,ip}` (metallb-ts's addition): 1 while no node announces
   * the IP the service holds; set by the one speaker that reports it (src/speaker/unannounced.ts).
   */
  readonly unannounced: Gauge<'service' | 'ip'>;
  /** `metallb_k8s_client_updates_total`: object updates processed. */
  readonly updates: Counter;
  /** `metallb_k8s_client_update_errors_total`: updates whose handling failed. */
  readonly updateErrors: Counter;
  /** `metallb_k8s_client_config_loaded_bool`: 1 once a configuration loaded. */
  readonly configLoaded: Gauge;
  /** `metallb_k8s_client_config_stale_bool`: 1 while running on a stale configuration. */
  readonly configStale: Gauge;
  /** MetalLB's `internal/layer2/stats.go` counters, fed by RawL2Announcer. */
  readonly layer2: Layer2Metrics;
}

/**
 * MetalLB v0.16.1 `internal/layer2/stats.go`: `metallb_layer2_requests_received{ip}` (an ARP request
 * or NS for an announced IP on an allowed interface), `metallb_layer2_responses_sent{ip}` (the reply
 * written), `metallb_layer2_gratuitous_sent{ip}` (ARP: per frame, request and reply; NDP: per
 * unsolicited NA).
 */
export interface Layer2Metrics {
  readonly requestsReceived: Counter<'ip'>;
  readonly responsesSent: Counter<'ip'>;
  readonly gratuitousSent: Counter<'ip'>;
}

/** Registers the layer2 counters on `registry`. */
export function layer2Metrics(registry: Registry): Layer2Metrics {
  const registers = [registry];
  const labelNames = ['ip'] as const;
  return {
    requestsReceived: new Counter({ name: 'metallb_layer2_requests_received', help: 'Number of layer2 requests received for owned IPs', labelNames, registers }),
    responsesSent: new Counter({ name: 'metallb_layer2_responses_sent', help: 'Number of layer2 responses sent for owned IPs in response to requests', labelNames, registers }),
    gratuitousSent: new Counter({ name: 'metallb_layer2_gratuitous_sent', help: 'Number of gratuitous layer2 packets sent for owned IPs as a result of failovers', labelNames, registers }),
  };
}

/** Creates the metrics on a fresh registry; `processMetrics` adds the process_* families and nodejs_eventloop_lag_* (src/runtime/). */
export function speakerMetrics(opts: { processMetrics?: boolean } = {}): SpeakerMetrics {
  const registry = new Registry();
  if (opts.processMetrics) {
    collectProcessMetrics(registry);
    collectEventLoopLag(registry);
  }
  const registers = [registry];
  return {
    registry,
    announced: new Gauge({
      name: 'metallb_speaker_announced',
      help: 'Services being announced from this node. This is desired state, it does not guarantee that the routing protocols have converged.',
      labelNames: ['service', 'protocol', 'node', 'ip'] as const,
      registers,
    }),
    unannounced: new Gauge({
      name: 'metallb_speaker_unannounced',
      help: 'Services holding an IP that no node announces (1 per service and IP), from the one speaker that reports them (the first live speaker in name order).',
      labelNames: ['service', 'ip'] as const,
      registers,
    }),
    updates: new Counter({ name: 'metallb_k8s_client_updates_total', help: 'Number of k8s object updates that have been processed.', registers }),
    updateErrors: new Counter({ name: 'metallb_k8s_client_update_errors_total', help: 'Number of k8s object updates that failed for some reason.', registers }),
    configLoaded: new Gauge({ name: 'metallb_k8s_client_config_loaded_bool', help: '1 if the MetalLB configuration was successfully loaded at least once.', registers }),
    configStale: new Gauge({ name: 'metallb_k8s_client_config_stale_bool', help: '1 if running on a stale configuration, because the latest config failed to load.', registers }),
    layer2: layer2Metrics(registry),
  };
}
