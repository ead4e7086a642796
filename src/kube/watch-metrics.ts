/**
 * How current a daemon's view of the cluster is, as a Prometheus gauge (metallb-ts's addition:
 * MetalLB v0.16.1 exports only metallb_k8s_client_config_loaded_bool and
 * metallb_k8s_client_config_stale_bool, which say nothing while its watches fail).
 *
 * `metallb_k8s_client_sync_age_seconds`: seconds since the daemon's list/watches of the API server
 * last all worked: 0 while they do, growing during an outage (from its first failed list or watch
 * until every one works again). Alert on it staying above a minute or so.
 */
import { Gauge, type Registry } from '../runtime/metrics-client.ts';

/** Registers `metallb_k8s_client_sync_age_seconds` on `registry`, read from `watcher` at each scrape. */
export function registerSyncMetrics(registry: Registry, watcher: { syncAgeSeconds(): number }): void {
  new Gauge({
    name: 'metallb_k8s_client_sync_age_seconds',
    help: 'Seconds since the list/watches of the Kubernetes API server last all worked (0 while they do).',
    registers: [registry],
    collect() {
      this.set(watcher.syncAgeSeconds());
    },
  });
}
