/**
 * `allocate --dry-run`: what MetalLB's controller would assign to every LoadBalancer Service of a
 * state (addresses, pool, or why it stays pending), as after a controller restart, each compared
 * with the Service's current status. Pure: the command (src/commands/allocate.ts) reads the state
 * and renders the report (src/render/allocate.ts).
 */
import { withAPIServerDefaults, type DefaultedService } from '../apiserver-defaults.ts';
import type { Config } from '../config/types.ts';
import { allocateAll, statusIPs, type AllocateAllResult, type PoolOutcome, type ServiceAllocationOutcome } from '../controller/index.ts';
import { EXIT_NO, EXIT_OK } from '../errors.ts';
import type { ClusterState } from '../kube.ts';
import { controllerConfig } from './context.ts';
import { rejectedConfig } from './rejected.ts';

/** What `allocate` asks the core. */
export interface AllocateRequest {
  /** Only report services of this namespace (all services are still allocated, in order). */
  namespace?: string;
  /** MetalLB's `--lb-class`; default: Services without `spec.loadBalancerClass`. */
  loadBalancerClass?: string;
  /** The namespace MetalLB reads its CRs from (default metallb-system). */
  metallbNamespace?: string;
  /** The dry run's pass limit (allocateAll's `maxPasses`, default 100). */
  maxPasses?: number;
}

/**
 * How the dry run's addresses compare with the Service's current `status.loadBalancer.ingress`:
 * `unchanged`, `allocated` (had none, gets some), `changed` (had others), `pending` (ends with none),
 * `cleared` (had some, ends with none).
 */
export type AllocationChange = 'unchanged' | 'allocated' | 'changed' | 'pending' | 'cleared';

/** One service of the `allocate --dry-run -o json|yaml` output. */
export interface AllocateServiceReport extends ServiceAllocationOutcome {
  namespace: string;
  name: string;
  /** Addresses in the snapshot's status before the dry run. */
  currentIPs: string[];
  change: AllocationChange;
}

/**
 * `allocate --dry-run -o json|yaml` output (documented schema): `services` in processing order
 * (allocateAll's fields plus namespace, name, currentIPs, change), `pools` (size, in use,
 * available per family), `passes`.
 */
export interface AllocateReport {
  services: AllocateServiceReport[];
  pools: PoolOutcome[];
  passes: number;
  /** Present (true) when the dry run stopped at its pass limit while a Service still asked MetalLB to reprocess every Service. */
  passLimitReached?: true;
  /**
   * LoadBalancer Services of the input without spec.clusterIP/clusterIPs (manifests of Services not
   * created yet), defaulted as the API server would before the dry run (families, policy, stand-in
   * cluster IPs, and on what the cluster's families were judged), or left as written when it would
   * refuse them (`refused`). Empty when every Service has cluster IPs.
   */
  defaulted: DefaultedService[];
}

/**
 * Runs the controller's allocation over the state with the controller's own configuration
 * (controllerConfig: the IPAddressPools and Communities of MetalLB's namespace — a broken
 * BGPAdvertisement, BGPPeer or L2Advertisement never stops allocation), then allocateAll on every
 * LoadBalancer Service — those without cluster IPs (new manifests) defaulted as the API server
 * would (withAPIServerDefaults, listed in `defaulted`) — and reports the services of
 * `req.namespace` (all when absent).
 * @throws UserError (exit 2) when the controller rejects its configuration (it keeps the last one it accepted).
 */
export function allocateDryRun(state: ClusterState, req: AllocateRequest = {}): AllocateReport {
  let config: Config;
  try {
    config = controllerConfig(state, req.metallbNamespace);
  } catch (err) {
    throw rejectedConfig(err);
  }
  // Manifests of new Services have no cluster IPs yet: default them as the API server would, or
  // MetalLB's controller would clear them ("No ClusterIPs").
  const { services: input, defaulted } = withAPIServerDefaults(state.services);
  const result: AllocateAllResult = allocateAll(config, input, {
    ...(req.loadBalancerClass !== undefined ? { loadBalancerClass: req.loadBalancerClass } : {}),
    ...(req.maxPasses !== undefined ? { maxPasses: req.maxPasses } : {}),
  });
  const byKey = new Map(state.services.map((s) => [`${s.metadata?.namespace ?? 'default'}/${s.metadata?.name ?? ''}`, s]));
  const services = result.services
    .map((o): AllocateServiceReport => {
      const slash = o.service.indexOf('/');
      const svc = byKey.get(o.service);
      const currentIPs = svc ? statusIPs(svc) : [];
      return { ...o, namespace: o.service.slice(0, slash), name: o.service.slice(slash + 1), currentIPs, change: changeOf(currentIPs, o.ips) };
    })
    .filter((s) => req.namespace === undefined || s.namespace === req.namespace);
  const shown = new Set(services.map((x) => x.service));
  return {
    services,
    pools: [...result.pools],
    passes: result.passes,
    ...(result.passLimitReached ? { passLimitReached: true as const } : {}),
    defaulted: defaulted.filter((d) => shown.has(d.service)),
  };
}

/**
 * How a Service's addresses change: `before` its status.loadBalancer.ingress addresses, `after` the
 * addresses the controller gives it (order ignored). `pending`: none before or after; `cleared`:
 * some before, none after; `allocated`: none before, some after; `unchanged`: the same set;
 * `changed`: another set.
 */
export function changeOf(before: readonly string[], after: readonly string[]): AllocationChange {
  if (after.length === 0) return before.length === 0 ? 'pending' : 'cleared';
  if (before.length === 0) return 'allocated';
  const same = before.length === after.length && [...before].sort().join() === [...after].sort().join();
  return same ? 'unchanged' : 'changed';
}

/** Exit status: 1 when a reported service ends without addresses, else 0. */
export function allocateExitCode(report: AllocateReport): number {
  return report.services.some((s) => s.ips.length === 0) ? EXIT_NO : EXIT_OK;
}
