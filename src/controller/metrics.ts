/**
 * The controller's Prometheus metrics with MetalLB v0.16.1's names (internal/allocator/stats.go,
 * internal/k8s/controllers/stats.go, and the controller-runtime reconcile/workqueue families it
 * inherits), and the HTTP server for `/metrics`, `/healthz` and `/readyz`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Registry, collectProcessMetrics } from '../runtime/metrics-client.ts';
import { setDateHeader } from '../runtime/utc-time.ts';
import { listenHost } from '../runtime/listen-host.ts';

/** Per-pool figures for the allocator gauges. Counts beyond 2^53 lose precision, as float64 does in MetalLB. */
export interface PoolStats {
  /** usable addresses (MetalLB's poolCount: total, IPv4, IPv6) */
  total: bigint;
  ipv4: bigint;
  ipv6: bigint;
  /** distinct addresses in use */
  inUseIPv4: bigint;
  inUseIPv6: bigint;
  /** services whose allocation is attributed to the pool */
  services: number;
}

/** The metric families the controller updates. */
export class ControllerMetrics {
  readonly registry = new Registry();
  private readonly addressesTotal: Gauge;
  private readonly ipv4AddressesTotal: Gauge;
  private readonly ipv6AddressesTotal: Gauge;
  private readonly inUse: Gauge;
  private readonly ipv4InUse: Gauge;
  private readonly ipv6InUse: Gauge;
  private readonly servicesAllocated: Gauge;
  /** metallb_k8s_client_updates_total: objects the reconcilers processed */
  readonly updates: Counter;
  /** metallb_k8s_client_update_errors_total: reconciles that failed */
  readonly updateErrors: Counter;
  /** metallb_k8s_client_config_loaded_bool */
  readonly configLoaded: Gauge;
  /** metallb_k8s_client_config_stale_bool */
  readonly configStale: Gauge;
  /** controller_runtime_reconcile_total{controller,result} */
  readonly reconcileTotal: Counter;
  /** controller_runtime_reconcile_errors_total{controller} */
  readonly reconcileErrors: Counter;
  /** workqueue_depth{name}, workqueue_adds_total{name}, workqueue_retries_total{name} */
  readonly queueDepth: Gauge;
  readonly queueAdds: Counter;
  readonly queueRetries: Counter;
  private readonly pools = new Set<string>();

  /** `processMetrics`: also export the process_* families (runtime/metrics-client.ts; default true). */
  constructor(opts: { processMetrics?: boolean } = {}) {
    const r = [this.registry];
    const g = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name, help, labelNames, registers: r });
    const c = (name: string, help: string, labelNames: string[] = []) => new Counter({ name, help, labelNames, registers: r });
    this.addressesTotal = g('metallb_allocator_addresses_total', 'Number of usable IP addresses, per pool', ['pool']);
    this.ipv4AddressesTotal = g('metallb_allocator_ipv4_addresses_total', 'Number of usable IPV4 addresses, per pool', ['pool']);
    this.ipv6AddressesTotal = g('metallb_allocator_ipv6_addresses_total', 'Number of usable IPV6 addresses, per pool', ['pool']);
    this.inUse = g('metallb_allocator_addresses_in_use_total', 'Number of IP addresses in use, per pool', ['pool']);
    this.ipv4InUse = g('metallb_allocator_ipv4_addresses_in_use_total', 'Number of IPV4 addresses in use, per pool', ['pool']);
    this.ipv6InUse = g('metallb_allocator_ipv6_addresses_in_use_total', 'Number of IPV6 addresses in use, per pool', ['pool']);
    this.servicesAllocated = g('metallb_allocator_services_allocated_total', 'Number of services allocated, per pool', ['pool']);
    this.updates = c('metallb_k8s_client_updates_total', 'Number of k8s object updates that have been processed.');
    this.updateErrors = c('metallb_k8s_client_update_errors_total', 'Number of k8s object updates that failed for some reason.');
    this.configLoaded = g('metallb_k8s_client_config_loaded_bool', '1 if the MetalLB configuration was successfully loaded at least once.');
    this.configStale = g('metallb_k8s_client_config_stale_bool', '1 if running on a stale configuration, because the latest config failed to load.');
    this.reconcileTotal = c('controller_runtime_reconcile_total', 'Total number of reconciliations per controller', ['controller', 'result']);
    this.reconcileErrors = c('controller_runtime_reconcile_errors_total', 'Total number of reconciliation errors per controller', ['controller']);
    this.queueDepth = g('workqueue_depth', 'Current depth of workqueue', ['name']);
    this.queueAdds = c('workqueue_adds_total', 'Total number of adds handled by workqueue', ['name']);
    this.queueRetries = c('workqueue_retries_total', 'Total number of retries handled by workqueue', ['name']);
    this.configLoaded.set(0);
    this.configStale.set(0);
    if (opts.processMetrics ?? true) collectProcessMetrics(this.registry);
  }

  /** Sets the allocator gauges of `pool` (MetalLB's updatePoolStats). */
  setPool(pool: string, s: PoolStats): void {
    this.pools.add(pool);
    this.addressesTotal.set({ pool }, Number(s.total));
    this.ipv4AddressesTotal.set({ pool }, Number(s.ipv4));
    this.ipv6AddressesTotal.set({ pool }, Number(s.ipv6));
    this.inUse.set({ pool }, Number(s.inUseIPv4 + s.inUseIPv6));
    this.ipv4InUse.set({ pool }, Number(s.inUseIPv4));
    this.ipv6InUse.set({ pool }, Number(s.inUseIPv6));
    this.servicesAllocated.set({ pool }, s.services);
  }

  /** Drops every series of a pool that is no longer configured (MetalLB's deleteStatsFor). */
  deletePool(pool: string): void {
    if (!this.pools.delete(pool)) return;
    for (const m of [this.addressesTotal, this.ipv4AddressesTotal, this.ipv6AddressesTotal, this.inUse, this.ipv4InUse, this.ipv6InUse, this.servicesAllocated]) {
      m.remove({ pool });
    }
  }

  /** Pools that currently have series. */
  get poolNames(): string[] {
    return [...this.pools];
  }
}

/** Options of startHttpServer. */
export interface HttpServerOptions {
  /** address to bind (MetalLB binds every address; the command's default is 0.0.0.0) */
  host: string;
  /** port; 0 picks a free one */
  port: number;
  /** whether /readyz answers 200 */
  ready: () => boolean;
}

/** The running server and the port it listens on. */
export interface RunningHttpServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (Prometheus text format), `/healthz` (200 `ok` while the process runs) and
 * `/readyz` (200 `ok` once `ready()`, else 503 with the reason). Rejects when the address cannot
 * be bound (EADDRINUSE, EACCES).
 */
export function startHttpServer(metrics: ControllerMetrics, opts: HttpServerOptions): Promise<RunningHttpServer> {
  const server = http.createServer((req, res) => {
    setDateHeader(res);
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'Content-Type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    if (path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType }).end(text),
        (err: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${err.message}\n`),
      );
      return;
    }
    if (path === '/healthz' || path === '/livez') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      return;
    }
    if (path === '/readyz') {
      if (opts.ready()) res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      else res.writeHead(503, { 'Content-Type': 'text/plain' }).end('not ready: waiting for the cache sync and the first configuration\n');
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
  });
  server.keepAliveTimeout = 5000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, listenHost(opts.host), () => {
      server.off('error', reject);
      const port = (server.address() as AddressInfo).port;
      resolve({
        port,
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    });
  });
}
