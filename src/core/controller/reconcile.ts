/**
 * The controller's per-service reconcile step (MetalLB v0.16.1 controller/main.go SetBalancer,
 * SetPools and controller/service.go convergeBalancer / allocateIPs), as a pure function over a
 * ControllerState: a Service goes in; the result, the status and annotations to write, and the
 * events to emit come out. No Kubernetes I/O: the live controller loop applies the outcome.
 * Semantics: the conformance cases test/conformance/controller.ts runs.
 */
import type { Pool } from '../config/types.ts';
import type { LoadBalancerIngress, Service } from '../kube.ts';
import { formatIP, parseIP, type IP } from '../ip.ts';
import { Allocator, AllocationError, quoteList, type AllocationFailure, type AllocationResult } from '../allocator/index.ts';
import { ANNOTATION_IP_ALLOCATED_FROM_POOL, DEPRECATED_ANNOTATION_PREFIX, allocRequest, familyOfAddresses, ipFamilyPolicy, requestedIPs, requestedPool, serviceFamily, statusIPs } from './service.ts';

/**
 * What the caller should do after a reconcile (MetalLB's `SyncState`): `success`; `errorNoRetry`
 * (failed, wait for another change); `reprocessAll` (something was freed or a shared allocation
 * changed: reconcile every service again); `error` (retry this one; not produced by the pure step).
 */
export type SyncResult = 'success' | 'errorNoRetry' | 'reprocessAll' | 'error';

/**
 * The reasons of the events the controller emits on a Service, spelled as MetalLB v0.16.1's
 * controller/service.go spells them (`not enough clusterips` included). `explain` reads the
 * dry run's events by reason (e.g. ClearAssignment, AdditionalAssignFailed), so renaming one fails
 * the type check instead of silently switching a finding off.
 */
export type ControllerEventReason =
  | 'IPAllocated'
  | 'AllocationFailed'
  | 'ClearAssignment'
  | 'AdditionalAssignFailed'
  | 'LoadBalancerFailed'
  | 'InternalError'
  | 'deprecatedAnnotation'
  | 'not enough clusterips'
  | 'nolbIPsIPFamily'
  | 'noclusterIPsIPFamily';

/** An event to emit on the Service: `Normal` (MetalLB's Infof) or `Warning` (Errorf). */
export interface ControllerEvent {
  readonly type: 'Normal' | 'Warning';
  /** The event's reason (the reconcile's are ControllerEventReason; the shell may record others). */
  readonly reason: string;
  readonly message: string;
  /**
   * The allocator's structured reason behind the message, when there is one: on AllocationFailed,
   * AdditionalAssignFailed and ClearAssignment (e.g. `poolLacksFamily` behind MetalLB's
   * `["<nil>"] is not allowed in config`). Not part of the Kubernetes Event.
   */
  readonly cause?: AllocationFailure;
}

/** An event the pure reconcile step emits: its reason is one of ControllerEventReason. */
export interface ReconcileEvent extends ControllerEvent {
  readonly reason: ControllerEventReason;
}

/** Why converging a service failed: the message MetalLB logs / puts in its event, and the allocator's structured reason when there is one. */
export interface ConvergeFailure {
  readonly message: string;
  readonly reason?: AllocationFailure;
}

/** Outcome of one reconcile. */
export interface ReconcileOutcome {
  readonly result: SyncResult;
  /** Whether the Service must be written back (status and/or annotations changed). */
  readonly updated: boolean;
  /** When updated: the input Service with the new `status` and `metadata.annotations`. */
  readonly service?: Service;
  /** When updated: the status to write. */
  readonly status?: NonNullable<Service['status']>;
  /** When updated: the annotations to write (including `metallb.io/ip-allocated-from-pool`). */
  readonly annotations?: Record<string, string>;
  /** Events emitted, in order. */
  readonly events: readonly ReconcileEvent[];
  /** Set when converging failed. */
  readonly failure?: ConvergeFailure;
  /** Set when this reconcile allocated addresses (pool chosen, pools tried, equally eligible pools). */
  readonly allocation?: AllocationResult;
}

/**
 * The controller's state: its allocator and the configuration it received (`null` until the
 * first configuration — MetalLB then ignores services).
 */
export interface ControllerState {
  readonly allocator: Allocator;
  pools: ReadonlyMap<string, Pool> | null;
}

/** A fresh controller: empty allocator, no configuration received. `onPoolChange` gets pool-change notifications. */
export function newController(onPoolChange?: (pool: string) => void): ControllerState {
  return { allocator: new Allocator(onPoolChange), pools: null };
}

/**
 * MetalLB's `SetPools`: `null` ("no MetalLB configuration in the cluster") -> `errorNoRetry`,
 * nothing changes. Otherwise the allocator takes the pools (no overlap check) and the result is
 * `reprocessAll`.
 */
export function setControllerPools(ctrl: ControllerState, pools: Iterable<Pool> | null): SyncResult {
  if (pools === null) return 'errorNoRetry';
  const list = [...pools];
  ctrl.allocator.setPools(list);
  ctrl.pools = new Map(list.map((p) => [p.name, p]));
  return 'reprocessAll';
}

/** The outcome of converging a Service: its value, or why MetalLB rejects the Service (an expected failure, not thrown). */
type Converged<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: ConvergeFailure };

/** A failed Converged. */
function failed(message: string, reason?: AllocationFailure): { readonly ok: false; readonly failure: ConvergeFailure } {
  return { ok: false, failure: reason ? { message, reason } : { message } };
}

/** Go's `%q` of a list of addresses. */
function q(ips: readonly IP[]): string {
  return quoteList(ips.map(formatIP));
}

/** Go's `%v` of a []string. */
function v(list: readonly string[] | undefined): string {
  return `[${(list ?? []).join(' ')}]`;
}

/**
 * Reconciles one Service (MetalLB's `SetBalancer`). `service` null means it was deleted.
 * Never throws for a service MetalLB would reject: the failure is in the outcome
 * (`errorNoRetry`, a Warning event, `failure`).
 */
export function reconcileService(ctrl: ControllerState, key: string, service: Service | null): ReconcileOutcome {
  const alloc = ctrl.allocator;
  if (service === null) {
    if (alloc.poolOf(key) !== null) {
      alloc.unassign(key);
      return { result: 'reprocessAll', updated: false, events: [] };
    }
    return { result: 'success', updated: false, events: [] };
  }
  if (ctrl.pools === null) return { result: 'success', updated: false, events: [] };

  // converge only replaces `status` and edits `metadata.annotations`: copy just those.
  const copy: Service = {
    ...service,
    metadata: { ...(service.metadata ?? {}), ...(service.metadata?.annotations ? { annotations: { ...service.metadata.annotations } } : {}) },
  };
  if (!service.metadata) delete copy.metadata;
  const events: ReconcileEvent[] = [];
  const prevIPs = alloc.ipsOf(key);
  const prevKey = alloc.allocationKey(key);
  let result: SyncResult = 'success';
  let failure: ConvergeFailure | undefined;
  let allocation: AllocationResult | undefined;
  const converged = converge(ctrl, key, copy, events);
  if (converged.ok) allocation = converged.value;
  else {
    failure = converged.failure;
    result = 'errorNoRetry';
  }
  if (alloc.allocationKey(key) !== prevKey) result = 'reprocessAll';
  const extra = { ...(failure ? { failure } : {}), ...(allocation ? { allocation } : {}) };
  if (sameWritable(service, copy)) return { result, updated: false, events, ...extra };

  for (const name of Object.keys(service.metadata?.annotations ?? {}).sort()) {
    if (name.startsWith(DEPRECATED_ANNOTATION_PREFIX)) {
      events.push({ type: 'Warning', reason: 'deprecatedAnnotation', message: `Service uses deprecated annotation ${name}` });
    }
  }
  if (prevIPs.length > 0 && alloc.poolOf(key) === null) {
    const prev = prevIPs.map((s) => parseIP(s)!);
    if (alloc.poolForIPs(prev) !== null) result = 'reprocessAll';
  }
  // `copy` already has fresh status and annotations; nothing else of `service` changed or is
  // shared mutably (reconcileService never mutates its input).
  const written: Service = { ...service, status: copy.status, metadata: { ...(service.metadata ?? {}) } };
  if (copy.metadata?.annotations !== undefined) written.metadata!.annotations = copy.metadata.annotations;
  return {
    result,
    updated: true,
    service: written,
    status: copy.status ?? {},
    annotations: { ...(copy.metadata?.annotations ?? {}) },
    events,
    ...extra,
  };
}

/** convergeBalancer on the working copy: the allocation made (undefined: none), or the failure. */
function converge(ctrl: ControllerState, key: string, svc: Service, events: ReconcileEvent[]): Converged<AllocationResult | undefined> {
  const alloc = ctrl.allocator;
  const warn = (reason: ControllerEventReason, message: string, cause?: AllocationFailure): void => {
    events.push({ type: 'Warning', reason, message, ...(cause ? { cause } : {}) });
  };
  const info = (reason: ControllerEventReason, message: string, cause?: AllocationFailure): void => {
    events.push({ type: 'Normal', reason, message, ...(cause ? { cause } : {}) });
  };
  const clear = (): void => {
    alloc.unassign(key);
    if (svc.metadata?.annotations) delete svc.metadata.annotations[ANNOTATION_IP_ALLOCATED_FROM_POOL];
    svc.status = { ...(svc.status ?? {}), loadBalancer: {} };
  };

  if (svc.spec?.type !== 'LoadBalancer') {
    clear();
    return { ok: true, value: undefined };
  }
  if (ctrl.pools!.size === 0) {
    clear();
    return failed('pools are empty');
  }
  const clusterIPs = svc.spec.clusterIPs ?? [];
  if (clusterIPs.length === 0 && !svc.spec.clusterIP) {
    clear();
    return failed('No ClusterIPs');
  }
  const req = allocRequest(key, svc);
  let current: string[] = statusIPs(svc);
  const policy = ipFamilyPolicy(svc);
  if (policy === 'RequireDualStack' && clusterIPs.length < 2) {
    warn('not enough clusterips', `Service requires dual stack but not enough clusterips ${v(clusterIPs)}`);
    clear();
    return failed('requires dual stack but clusterips are not dual stack');
  }
  if (current.length === 0) clear();
  else {
    const lbFamily = familyOfAddresses(current);
    if (lbFamily === 'unknown') {
      warn('nolbIPsIPFamily', `Failed to retrieve LBIPs IPFamily for ${quoteList(current)}: invalid addresses`);
    }
    const svcFamily = serviceFamily(svc);
    if (svcFamily === 'unknown') {
      warn('noclusterIPsIPFamily', `Failed to retrieve ClusterIPs IPFamily for ${JSON.stringify(v(clusterIPs))} ${svc.spec.clusterIP ?? ''}: invalid addresses`);
      return failed('Failed to retrieve clusterIPs family');
    }
    if (lbFamily === 'unknown' || (lbFamily !== svcFamily && !(svcFamily === 'dual' && policy === 'PreferDualStack'))) {
      clear();
      current = [];
    }
  }

  let ips: IP[] = current.map((s) => parseIP(s)!);
  if (ips.length > 0) {
    try {
      alloc.assign(req, ips);
    } catch (err) {
      if (!(err instanceof AllocationError)) throw err;
      info('ClearAssignment', `current IP for ${JSON.stringify(key)} not allowed by config, will attempt for new IP assignment: ${err.message}`, err.reason);
      clear();
      ips = [];
    }
    const desiredPool = requestedPool(svc);
    if (ips.length > 0 && desiredPool !== '' && alloc.poolOf(key) !== desiredPool) {
      clear();
      ips = [];
    }
    const desired = requestedIPs(svc);
    if (!desired.ok) {
      warn('LoadBalancerFailed', `invalid requested loadbalancer IPs: ${desired.error}`);
      return failed(desired.error);
    }
    if (desired.ok && desired.ips.length > 0) {
      const byText = (a: IP, b: IP): number => (formatIP(a) < formatIP(b) ? -1 : formatIP(a) > formatIP(b) ? 1 : 0);
      ips.sort(byText);
      const want = [...desired.ips].sort(byText);
      if (ips.length !== want.length || ips.some((ip, i) => formatIP(ip) !== formatIP(want[i]))) {
        clear();
        ips = [];
      }
    }
  }

  if (ips.length === 1 && policy === 'PreferDualStack') {
    try {
      const added = alloc.allocateAdditionalFamily(req, ips[0], alloc.poolOf(key) ?? '');
      ips.push(parseIP(added)!);
      info('IPAllocated', `Assigned additional IP ${JSON.stringify(added)}`);
    } catch (err) {
      if (!(err instanceof AllocationError)) throw err;
      info('AdditionalAssignFailed', `cannot assign additional IP in PreferDualStack: ${err.message}`, err.reason);
    }
  }

  let allocation: AllocationResult | undefined;
  if (ips.length === 0) {
    const allocated = allocateIPs(ctrl, key, svc);
    if (!allocated.ok) {
      warn('AllocationFailed', `Failed to allocate IP for ${JSON.stringify(key)}: ${allocated.failure.message}`, allocated.failure.reason);
      return allocated;
    }
    allocation = allocated.value;
    ips = allocation.ips.map((s) => parseIP(s)!);
    info('IPAllocated', `Assigned IP ${q(ips)}`);
  }
  if (ips.length === 0) {
    warn('InternalError', "didn't allocate an IP but also did not fail");
    clear();
    return failed("didn't allocate an IP but also did not fail");
  }
  const pool = alloc.poolOf(key);
  if (pool === null || !ctrl.pools!.has(pool)) {
    warn('InternalError', 'allocated an IP that has no pool');
    clear();
    return failed('allocated an IP that has no pool');
  }
  svc.status = { ...(svc.status ?? {}), loadBalancer: { ingress: ips.map((ip) => ({ ip: formatIP(ip) })) } };
  svc.metadata = svc.metadata ?? {};
  svc.metadata.annotations = { ...(svc.metadata.annotations ?? {}), [ANNOTATION_IP_ALLOCATED_FROM_POOL]: pool };
  return { ok: true, value: allocation };
}

/**
 * Whether converging `service` would keep the addresses of its status, as far as the
 * configuration decides it (convergeBalancer's checks: a LoadBalancer with cluster IPs, the
 * family, a pool owning the addresses that accepts the Service, the requested pool and addresses);
 * conflicts with other Services' addresses are not looked at. Restart order uses it: among
 * Services with as many status addresses, those that keep theirs are processed first.
 */
export function statusKept(ctrl: ControllerState, key: string, svc: Service): boolean {
  if (ctrl.pools === null || ctrl.pools.size === 0 || svc.spec?.type !== 'LoadBalancer') return false;
  const clusterIPs = svc.spec.clusterIPs ?? [];
  if (clusterIPs.length === 0 && !svc.spec.clusterIP) return false;
  const policy = ipFamilyPolicy(svc);
  if (policy === 'RequireDualStack' && clusterIPs.length < 2) return false;
  const current = statusIPs(svc);
  if (current.length === 0) return false;
  const lbFamily = familyOfAddresses(current);
  const svcFamily = serviceFamily(svc);
  if (lbFamily === 'unknown' || svcFamily === 'unknown') return false;
  if (lbFamily !== svcFamily && !(svcFamily === 'dual' && policy === 'PreferDualStack')) return false;
  const ips = current.map((s) => parseIP(s)!);
  if (ctrl.allocator.configAllows(allocRequest(key, svc), ips)) return false;
  const desiredPool = requestedPool(svc);
  if (desiredPool !== '' && ctrl.allocator.poolForIPs(ips) !== desiredPool) return false;
  const desired = requestedIPs(svc);
  if (!desired.ok) return false;
  if (desired.ips.length > 0) {
    const a = [...current.map((s) => formatIP(parseIP(s)!))].sort();
    const b = desired.ips.map(formatIP).sort();
    if (a.length !== b.length || a.some((x, i) => x !== b[i])) return false;
  }
  return true;
}

/** MetalLB's `allocateIPs`: requested addresses, else the requested pool, else any pool; or the failure. */
function allocateIPs(ctrl: ControllerState, key: string, svc: Service): Converged<AllocationResult> {
  const alloc = ctrl.allocator;
  const req = allocRequest(key, svc);
  const family = serviceFamily(svc);
  if (family === 'unknown') {
    return failed(`invalid ClusterIPs ${v(svc.spec?.clusterIPs)} ${svc.spec?.clusterIP ?? ''}, can't determine family`);
  }
  const desired = requestedIPs(svc);
  if (!desired.ok) return failed(desired.error);
  const desiredPool = requestedPool(svc);
  // The allocator throws AllocationError at its edge; here it becomes a value.
  const wrap = (f: () => AllocationResult): Converged<AllocationResult> => {
    try {
      return { ok: true, value: f() };
    } catch (err) {
      if (!(err instanceof AllocationError)) throw err;
      return failed(err.message, err.reason);
    }
  };
  if (desired.ips.length > 0) {
    if (desired.family !== family) {
      return failed(`requested loadBalancer IP(s) ${q(desired.ips)} does not match the ipFamily of the service`);
    }
    const r = wrap(() => alloc.assign(req, desired.ips));
    if (!r.ok) return r;
    if (desiredPool !== '' && alloc.poolOf(key) !== desiredPool) {
      alloc.unassign(key);
      return failed(`requested loadBalancer IP(s) ${q(desired.ips)} is not compatible with requested address pool ${desiredPool}`);
    }
    return r;
  }
  if (desiredPool !== '') return wrap(() => alloc.allocateFromPool(req, family, desiredPool));
  return wrap(() => alloc.allocate(req, family));
}

/** Go-like normal form of what the controller may change: status (nil vs empty ingress kept apart) and annotations. */
function writable(svc: Service): unknown {
  const status = { ...(svc.status ?? {}) } as Record<string, unknown>;
  const lb = svc.status?.loadBalancer;
  const ingress = lb?.ingress;
  status.loadBalancer = {
    ingress: ingress === undefined || ingress === null ? null : ingress.map(normIngress),
  };
  for (const k of Object.keys(status)) if (status[k] === undefined || status[k] === null) delete status[k];
  return { status, annotations: svc.metadata?.annotations ?? null };
}

function normIngress(i: LoadBalancerIngress): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (i.ip) out.ip = i.ip;
  if (i.hostname) out.hostname = i.hostname;
  if (i.ipMode !== undefined && i.ipMode !== null) out.ipMode = i.ipMode;
  if (i.ports !== undefined && i.ports !== null) out.ports = i.ports;
  for (const [k, val] of Object.entries(i)) if (!(k in out) && !['ip', 'hostname', 'ipMode', 'ports'].includes(k)) out[k] = val;
  return out;
}

function sameWritable(a: Service, b: Service): boolean {
  // The common case without building both normal forms: the same annotations, ingress entries
  // of `ip` (and `ipMode`) only, and nothing else in the status.
  const quick = sameSimpleWritable(a, b);
  return quick ?? deepEqual(writable(a), writable(b));
}

/** sameWritable when both statuses hold only `loadBalancer.ingress` entries of `ip`/`ipMode` strings; undefined otherwise. */
function sameSimpleWritable(a: Service, b: Service): boolean | undefined {
  const ia = simpleIngress(a);
  const ib = simpleIngress(b);
  if (ia === undefined || ib === undefined) return undefined;
  if (!deepEqual(a.metadata?.annotations ?? null, b.metadata?.annotations ?? null)) return false;
  if (ia === null || ib === null) return ia === ib;
  if (ia.length !== ib.length) return false;
  for (let i = 0; i < ia.length; i++) {
    if ((ia[i]!.ip || undefined) !== (ib[i]!.ip || undefined) || (ia[i]!.ipMode ?? undefined) !== (ib[i]!.ipMode ?? undefined)) return false;
  }
  return true;
}

/**
 * The ingress list of a status made of `loadBalancer` only (no other `loadBalancer` field kept
 * by writable either), whose entries have only string `ip` and `ipMode`; null when the status or
 * the list is absent; undefined for anything else.
 */
function simpleIngress(svc: Service): readonly LoadBalancerIngress[] | null | undefined {
  const status = svc.status as Record<string, unknown> | undefined | null;
  if (status === undefined || status === null) return null;
  for (const k in status) if (k !== 'loadBalancer' && status[k] !== undefined && status[k] !== null) return undefined;
  const ingress = svc.status?.loadBalancer?.ingress;
  if (ingress === undefined || ingress === null) return null;
  for (const i of ingress) {
    for (const k in i) {
      const val: unknown = i[k as keyof LoadBalancerIngress];
      if ((k !== 'ip' && k !== 'ipMode') || (val !== undefined && val !== null && typeof val !== 'string')) return undefined;
    }
  }
  return ingress;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => deepEqual(x, bb[i]));
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const ka = Object.keys(ra).filter((k) => ra[k] !== undefined);
  const kb = Object.keys(rb).filter((k) => rb[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.hasOwn(rb, k) && deepEqual(ra[k], rb[k]));
}
