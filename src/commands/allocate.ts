/**
 * `metallb-ts allocate --dry-run`: what MetalLB's controller would assign to every LoadBalancer
 * service of the state (IP, pool, or why it stays pending), as after a controller restart, without
 * writing anything. Exit 1 when a shown service would stay without an address, 0 otherwise.
 */
import type { Command } from 'commander';
import { controllerConfig } from '../core/explain/index.ts';
import { allocateAll, statusIPs, type AllocateAllResult, type PoolOutcome, type ServiceAllocationOutcome } from '../core/controller/index.ts';
import type { ClusterState } from '../core/kube.ts';
import type { Config } from '../core/config/types.ts';
import { withAPIServerDefaults, type DefaultedService } from '../core/apiserver-defaults.ts';
import { EXIT_NO, EXIT_OK, UserError } from '../core/errors.ts';
import { palette } from '../render/color.ts';
import { writeResult } from '../render/output.ts';
import { PENDING, renderTable } from '../render/table.ts';
import { addFilenameOption, addNamespaceOption, addOutputOption, loadState, rejectedConfig, type OutputOptions, type StateOptions } from './options.ts';

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

function changeOf(before: readonly string[], after: readonly string[]): AllocationChange {
  if (after.length === 0) return before.length === 0 ? 'pending' : 'cleared';
  if (before.length === 0) return 'allocated';
  const same = before.length === after.length && [...before].sort().join() === [...after].sort().join();
  return same ? 'unchanged' : 'changed';
}

/** Exit status: 1 when a reported service ends without addresses, else 0. */
export function allocateExitCode(report: AllocateReport): number {
  return report.services.some((s) => s.ips.length === 0) ? EXIT_NO : EXIT_OK;
}

/** `[a] → [b, c] → [a] …`: the address lists MetalLB's controller alternates between. */
function cycleText(states: readonly (readonly string[])[]): string {
  return `${states.map((s) => `[${s.join(', ')}]`).join(' → ')} → [${states[0]!.join(', ')}] …`;
}

/**
 * The MESSAGE column: MetalLB's error (or, for a manifest the API server would refuse, `refused`
 * instead), or that the controller never settles on the Service (`oscillates`); empty otherwise.
 */
function messageOf(s: AllocateServiceReport, refused?: string): string | undefined {
  const parts: string[] = [];
  if (refused) parts.push(`the API server would refuse this Service: ${refused}`);
  else if (s.error) parts.push(s.error);
  if (s.oscillates) parts.push(`never settles: MetalLB writes ${cycleText(s.oscillates)} forever`);
  return parts.length ? parts.join('; ') : undefined;
}

/** Events as `kubectl describe` counts them: `IPAllocated`, `AllocationFailed (x3)`. */
function eventsText(s: AllocateServiceReport): string {
  return s.events.map((e) => (e.count > 1 ? `${e.reason} (x${e.count})` : e.reason)).join(',');
}

/**
 * Two tables for people: services (SERVICE EXTERNAL-IP POOL CHANGE MESSAGE), then pools; a last
 * line when the passes stopped at their limit.
 */
export function allocateTable(report: AllocateReport, wide: boolean, color = palette()): string {
  const change = (c: AllocationChange) => (c === 'pending' || c === 'cleared' ? color.red(c) : c === 'changed' ? color.yellow(c) : c === 'allocated' ? color.green(c) : c);
  const svcColumns = ['service', { header: 'external-ip', placeholder: PENDING }, 'pool', 'change', 'message', ...(wide ? ['current-ip', 'events', 'note'] : [])];
  const svcRows = report.services.map((s) => [
    s.service,
    s.ips.join(','),
    s.pool,
    change(s.change),
    messageOf(s, report.defaulted.find((d) => d.service === s.service)?.refused),
    ...(wide ? [s.currentIPs.join(','), eventsText(s), s.nondeterministic] : []),
  ]);
  const services = renderTable(svcColumns, svcRows, 'No LoadBalancer services found.');
  const pools = renderTable(
    ['pool', 'size', 'in-use', 'available-ipv4', 'available-ipv6'],
    report.pools.map((p) => [p.name, String(p.size), p.inUse, String(p.availableIPv4), String(p.availableIPv6)]),
    'No IPAddressPools.',
  );
  const limit = report.passLimitReached
    ? `\n${color.yellow('Stopped')} after ${report.passes} pass${report.passes === 1 ? '' : 'es'} while a Service still asked MetalLB to reprocess every Service: MetalLB's controller keeps going (with a growing backoff), so the addresses above are where the dry run stopped, not where MetalLB ends\n`
    : '';
  const defaults = report.defaulted
    .map((d) =>
      d.refused
        ? `${color.yellow('Not defaulted')}: ${d.service} has no cluster IPs and the API server would refuse it: ${d.refused}\n`
        : `${color.bold('Defaulted')} as the API server would: ${d.service} has no cluster IPs (a manifest not created yet): ipFamilyPolicy ${d.ipFamilyPolicy}, ipFamilies [${d.ipFamilies.join(', ')}], judged from ${d.basis}\n`,
    )
    .join('');
  return `${defaults}${defaults ? '\n' : ''}${services}\n${pools}${limit}`;
}

interface AllocateOptions extends StateOptions, OutputOptions {
  dryRun?: boolean;
}

/** Registers `allocate` on `program`. */
export function registerAllocate(program: Command): void {
  const cmd = program
    .command('allocate')
    .description("show the IP MetalLB's controller would give every LoadBalancer service, or why it stays pending")
    .option('--dry-run', 'compute only, change nothing (required: writing to the cluster is not supported)')
    .option('--lb-class <class>', "the controller's --lb-class: handle only Services with this spec.loadBalancerClass")
    .addHelpText('after', '\nExit status: 0 every service gets an address, 1 some would stay pending, 2 bad input.\n\nExample:\n  metallb-ts allocate --dry-run -f examples/cluster.yaml');
  addFilenameOption(cmd);
  addNamespaceOption(cmd, 'only show services of this namespace');
  addOutputOption(cmd);
  cmd.action(async (opts: AllocateOptions) => {
    if (!opts.dryRun) throw new UserError("allocate only runs with --dry-run (writing allocations to the cluster is the controller's job)");
    const state = await loadState(opts);
    const report = allocateDryRun(state, {
      ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
      ...(opts.lbClass !== undefined ? { loadBalancerClass: opts.lbClass } : {}),
      ...(opts.metallbNamespace !== undefined ? { metallbNamespace: opts.metallbNamespace } : {}),
    });
    writeResult(opts.output, report, (wide) => allocateTable(report, wide));
    process.exitCode = allocateExitCode(report);
  });
}
