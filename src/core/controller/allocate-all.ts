/**
 * Whole-snapshot dry run (`metallb-ts allocate --dry-run`): what MetalLB's controller would
 * write for every LoadBalancer Service after a restart with this configuration.
 */
import type { Config } from '../config/types.ts';
import type { Service } from '../kube.ts';
import { canonicalIP, parseIP } from '../ip.ts';
import type { AllocationFailure } from '../allocator/index.ts';
import { newController, reconcileService, setControllerPools, type ControllerEvent, type ControllerState, type ReconcileOutcome } from './reconcile.ts';
import { ANNOTATION_IP_ALLOCATED_FROM_POOL, serviceKey, statusIPs } from './service.ts';

/** A count that may exceed 2^53: a number when it is a safe integer, else its decimal string. */
export type Count = number | string;

/** Options of allocateAll. */
export interface AllocateAllOptions {
  /**
   * MetalLB's `--lb-class`. Default "" (MetalLB's default): only Services without
   * `spec.loadBalancerClass` are handled. Otherwise only Services with exactly this class.
   */
  readonly loadBalancerClass?: string;
  /** Maximum number of reprocess-all passes (default 10); MetalLB retries until nothing asks for one. */
  readonly maxPasses?: number;
}

/** The dry-run outcome for one Service. */
export interface ServiceAllocationOutcome {
  /** `namespace/name`. */
  readonly service: string;
  /** Addresses MetalLB would write to `status.loadBalancer.ingress` (canonical), [] if none. */
  readonly ips: readonly string[];
  /** Pool the addresses are attributed to (`metallb.io/ip-allocated-from-pool`), or null. */
  readonly pool: string | null;
  /** When the Service ends without addresses, or its last reconcile failed: MetalLB's error text; else null. */
  readonly error: string | null;
  /** The allocator's structured reason for `error`, when the allocator produced it. */
  readonly reason?: AllocationFailure;
  /** Events of the Service's last reconcile that emitted any (type, reason, message). */
  readonly events: readonly ControllerEvent[];
  /** Set when MetalLB's own result could differ (random map order, unstable processing order); says why. */
  readonly nondeterministic?: string;
}

/** Per-pool figures after the dry run. Counts are numbers, or strings when beyond 2^53. */
export interface PoolOutcome {
  readonly name: string;
  /** Capacity (MetalLB's poolCount; 2^63-1 for huge IPv6 blocks). */
  readonly size: Count;
  /** Distinct addresses in use (IPv4 + IPv6). */
  readonly inUse: number;
  readonly assignedIPv4: number;
  readonly assignedIPv6: number;
  readonly availableIPv4: Count;
  readonly availableIPv6: Count;
}

/** Result of allocateAll. */
export interface AllocateAllResult {
  /** One entry per handled LoadBalancer Service, in processing order (see allocateAll). */
  readonly services: readonly ServiceAllocationOutcome[];
  /** Every configured pool, in configuration order. */
  readonly pools: readonly PoolOutcome[];
  /** Number of reprocess-all passes run. */
  readonly passes: number;
}

function count(v: bigint): Count {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
}

function handled(svc: Service, lbClass: string): boolean {
  if (svc.spec?.type !== 'LoadBalancer') return false;
  const cls = svc.spec.loadBalancerClass;
  if (cls === undefined || cls === null || cls === '') return lbClass === '';
  return cls === lbClass;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * MetalLB's reprocess-all order, made stable: Services with addresses in
 * `status.loadBalancer.ingress` first — more entries first, then by `namespace/name` — so every
 * address already in a status is re-registered before anything new is allocated; then Services
 * without addresses by `metadata.creationTimestamp` (oldest first, missing last), then by
 * `namespace/name`. Returns a new array; the input is not modified. allocateAll and the live
 * controller loop (src/controller) both order their passes with it.
 */
export function processingOrder<S extends Service>(services: readonly S[]): S[] {
  const decorated = services.map((svc) => ({ svc, key: serviceKey(svc), n: statusIPs(svc).length, ts: svc.metadata?.creationTimestamp ?? '\uffff' }));
  decorated.sort((a, b) => {
    if (a.n !== b.n) return b.n - a.n;
    if (a.n === 0) return cmp(a.ts, b.ts) || cmp(a.key, b.key);
    return cmp(a.key, b.key);
  });
  return decorated.map((d) => d.svc);
}

/**
 * Runs MetalLB's controller convergence over every LoadBalancer Service of a snapshot, as after
 * a controller restart, on a fresh allocator configured with `config.pools` (no I/O).
 *
 * Processing order (MetalLB's reprocessAll sorts by number of status ingress entries, most first,
 * with an unstable sort over API list order; metallb-ts makes it stable):
 * 1. Services that already have addresses in `status.loadBalancer.ingress` — more entries first,
 *    then by `namespace/name` — so every address already in a status is re-registered (kept)
 *    before anything new is allocated (restart safety).
 * 2. Services without addresses, by `metadata.creationTimestamp` (oldest first; missing
 *    timestamps last), then by `namespace/name`.
 * Each Service is reconciled with reconcileService; a written Service replaces the snapshot's
 * object. While a pass returns `reprocessAll` for some Service, another pass runs (same order,
 * re-sorted by current ingress count), up to `maxPasses` — but not after a pass in which every
 * Service converged (the next one would change nothing).
 *
 * Services of another `loadBalancerClass` (see options) and non-LoadBalancer Services are left
 * out. Where MetalLB's result could differ — several equally eligible pools at the same priority
 * (Go map order; metallb-ts takes pool-name order), an address lying in overlapping pools,
 * pending Services competing for the same last free addresses, or two statuses claiming one
 * address — the outcome carries a `nondeterministic` note.
 */
export function allocateAll(config: Config, services: readonly Service[], opts: AllocateAllOptions = {}): AllocateAllResult {
  const lbClass = opts.loadBalancerClass ?? '';
  const maxPasses = opts.maxPasses ?? 10;
  const ctrl: ControllerState = newController();
  setControllerPools(ctrl, config.pools.values());

  const current = new Map<string, Service>();
  const initialIPs = new Map<string, string[]>();
  for (const svc of services) {
    if (!handled(svc, lbClass)) continue;
    const key = serviceKey(svc);
    current.set(key, svc);
    initialIPs.set(key, statusIPs(svc));
  }
  const keys = [...current.keys()];
  const sorted = processingOrder([...current.values()]).map(serviceKey);
  const withIPs = sorted.filter((k) => initialIPs.get(k)!.length > 0);
  const pending = sorted.filter((k) => initialIPs.get(k)!.length === 0);
  const rank = new Map([...withIPs, ...pending].map((k, i) => [k, i]));
  const pendingSet = new Set(pending);

  const last = new Map<string, ReconcileOutcome>();
  const lastWithEvents = new Map<string, ReconcileOutcome>();
  const firstOutcome = new Map<string, ReconcileOutcome>();
  const notes = new Map<string, string[]>();
  const note = (key: string, text: string): void => {
    const list = notes.get(key) ?? [];
    if (!list.includes(text)) list.push(text);
    notes.set(key, list);
  };

  let order = [...withIPs, ...pending];
  let passes = 0;
  for (;;) {
    passes++;
    let again = false;
    let failed = false;
    for (const key of order) {
      const out = reconcileService(ctrl, key, current.get(key)!);
      if (out.updated && out.service) current.set(key, out.service);
      last.set(key, out);
      if (out.events.length > 0) lastWithEvents.set(key, out);
      if (!firstOutcome.has(key)) firstOutcome.set(key, out);
      if (out.allocation && out.allocation.tiedPools.length > 0) {
        note(key, `pools ${[out.allocation.pool, ...out.allocation.tiedPools].join(', ')} were equally eligible; MetalLB picks among them in random (Go map) order, metallb-ts took ${out.allocation.pool}`);
      }
      if (out.result === 'reprocessAll') again = true;
      if (out.failure) failed = true;
    }
    // A pass in which every Service converged is a fixed point: reconciling them again with what
    // was just written changes nothing, so MetalLB's "reprocess all" would end there too.
    if (!again || !failed || passes >= maxPasses) break;
    order = [...order].sort((a, b) => statusIPs(current.get(b)!).length - statusIPs(current.get(a)!).length || rank.get(a)! - rank.get(b)!);
  }

  const alloc = ctrl.allocator;
  // Overlapping pools: the attribution is Go map order in MetalLB.
  for (const key of keys) {
    const ips = alloc.ipsOf(key).map((s) => parseIP(s)!);
    if (ips.length === 0) continue;
    const owners = alloc.poolsForIPs(ips);
    if (owners.length > 1) note(key, `the addresses lie in overlapping pools ${owners.join(', ')}; MetalLB attributes them to any one of them`);
  }
  // Two statuses claiming one address: whichever MetalLB processes first keeps it.
  for (const key of withIPs) {
    const before = initialIPs.get(key)!;
    const now = statusIPs(current.get(key)!);
    if (before.every((ip) => now.includes(ip))) continue;
    for (const other of withIPs) {
      if (other === key) continue;
      const held = alloc.ipsOf(other);
      if (before.some((ip) => held.includes(canonical(ip)))) {
        note(key, `its status address is also claimed by ${other}'s status; MetalLB keeps it for whichever it processes first (unspecified order)`);
        note(other, `its status address is also claimed by ${key}'s status; MetalLB keeps it for whichever it processes first (unspecified order)`);
      }
    }
  }
  // Pending services competing for the same pools: MetalLB's order among them is unspecified.
  const pendingOrder = pending;
  for (const [i, key] of pendingOrder.entries()) {
    if (alloc.ipsOf(key).length > 0) continue;
    const failure = firstOutcome.get(key)?.failure ?? last.get(key)?.failure;
    const reason = failure?.reason;
    if (reason?.kind === 'sharingConflict') {
      for (const other of reason.sharing.services) {
        if (!pendingSet.has(other) || (rank.get(other) ?? Infinity) > (rank.get(key) ?? 0)) continue;
        note(key, `its requested address is taken by ${other}, also pending; MetalLB processes pending services in unspecified order`);
        note(other, `${key} requested the same address and is also pending; MetalLB processes pending services in unspecified order`);
      }
    }
    const usable = usablePools(reason);
    if (usable.size === 0) continue;
    for (const earlier of pendingOrder.slice(0, i)) {
      const pool = alloc.poolOf(earlier);
      if (pool === null || !usable.has(pool) || !pendingSet.has(earlier)) continue;
      note(key, `pending services competed for pool ${pool}; MetalLB processes them in unspecified order, so ${key} might have received ${earlier}'s address`);
      note(earlier, `pending services competed for pool ${pool}; MetalLB processes them in unspecified order, so ${key} might have received this address instead`);
    }
  }

  const outcomes: ServiceAllocationOutcome[] = order.map((key) => {
    const svc = current.get(key)!;
    const out = last.get(key)!;
    const ips = statusIPs(svc);
    const poolAnn = svc.metadata?.annotations?.[ANNOTATION_IP_ALLOCATED_FROM_POOL];
    const failure = out.failure ?? (ips.length === 0 ? firstOutcome.get(key)?.failure : undefined);
    const n = notes.get(key);
    return {
      service: key,
      ips: ips.map(canonical),
      pool: ips.length > 0 ? (poolAnn ?? alloc.poolOf(key)) : null,
      error: failure ? failure.message : null,
      ...(failure?.reason ? { reason: failure.reason } : {}),
      events: (lastWithEvents.get(key) ?? out).events,
      ...(n ? { nondeterministic: n.join('; ') } : {}),
    };
  });
  outcomes.sort((a, b) => rank.get(a.service)! - rank.get(b.service)!);

  const pools: PoolOutcome[] = [...config.pools.keys()].map((name) => {
    const cap = alloc.capacity(name)!;
    const c = alloc.counters(name);
    return {
      name,
      size: count(cap.total),
      inUse: Number(c.assignedIPv4 + c.assignedIPv6),
      assignedIPv4: Number(c.assignedIPv4),
      assignedIPv6: Number(c.assignedIPv6),
      availableIPv4: count(c.availableIPv4),
      availableIPv6: count(c.availableIPv6),
    };
  });
  return { services: outcomes, pools, passes };
}

function canonical(s: string): string {
  return canonicalIP(s) ?? s;
}

/** Pools a failed allocation could have used, had an address been free. */
function usablePools(reason: AllocationFailure | undefined): Set<string> {
  const out = new Set<string>();
  if (!reason) return out;
  if (reason.kind === 'noAvailableIPs') out.add(reason.pool);
  if (reason.kind === 'noPoolAvailable') {
    for (const a of reason.attempts) {
      if (a.outcome === 'chosen' || a.refusal?.reason === 'noAvailableIPs' || a.refusal?.reason === 'wrongFamily') out.add(a.pool);
    }
  }
  return out;
}
