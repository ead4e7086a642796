/**
 * One dry run's state (allocateAll's runs, allocate-all.ts): the controller, each Service's object
 * now, the outcomes and Events so far, the write history; the reconcile step that updates them;
 * and the copies of that state a run resumes from (Fork).
 */
import type { Config } from '../config/types.ts';
import type { Service } from '../kube.ts';
import { newController, reconcileService, setControllerPools, statusKept, type ControllerState, type ReconcileEvent, type ReconcileOutcome } from './reconcile.ts';
import { filteredByLoadBalancerClass, serviceKey, statusIPs } from './service.ts';
import { canonical, settled } from './settled.ts';
import { ingressEntries } from './order.ts';
import { WriteHistory, type WriteCycle } from './write-history.ts';

/** Service → its distinct Events so far (by `[type, reason, message]` JSON), each with its count. */
export type Emitted = Map<string, Map<string, ReconcileEvent & { count: number }>>;

/**
 * A name-order dry run's state at the start of one Service of its first pass: the first Service
 * of the first ingress-entry group (two Services or more) whose order may matter. Every group
 * before it is one Service, or Services that each kept exactly their status addresses (no
 * walk, no failure; none PreferDualStack, no address claimed by two statuses): each touched only
 * its own addresses, so any order within it ends in this same state. The other tie orders resume
 * from here instead of running the whole prefix again (allocateAll). Holds its own copies: a
 * resumed run copies them again.
 */
export interface Fork {
  /** processingOrder's result (name order within each count): the initial Service objects. */
  readonly base: readonly Service[];
  /** Index in `base` (and in every tieOrder of it) of the first Service to run: a group start. */
  readonly index: number;
  readonly initialKept: ReadonlyMap<string, boolean>;
  readonly ctrl: ControllerState;
  readonly current: ReadonlyMap<string, Service>;
  readonly wroteConverged: ReadonlyMap<string, Service>;
  readonly last: ReadonlyMap<string, ReconcileOutcome>;
  readonly firstOutcome: ReadonlyMap<string, ReconcileOutcome>;
  readonly emitted: ReadonlyMap<string, ReadonlyMap<string, ReconcileEvent & { count: number }>>;
  readonly history: WriteHistory;
  readonly cycles: ReadonlyMap<string, WriteCycle>;
  /** The first pass's writes and whether one of its reconciles asked to reprocess all, so far. */
  readonly written: ReadonlySet<string>;
  readonly again: boolean;
}

/**
 * Where a name-order run with `focus` would have taken its Fork, when the focused Service's
 * answer is final there (finalAt) and no reconcile before it had tied pools: allocateAll then
 * runs no other execution, and the state is not copied.
 */
export interface FinalPoint {
  readonly index: number;
  readonly focusFinal: true;
}

/** A copy of `emitted` (its events carry a count that later repeats increment). */
export function copyEmitted(emitted: ReadonlyMap<string, ReadonlyMap<string, ReconcileEvent & { count: number }>>): Emitted {
  const out: Emitted = new Map();
  for (const [key, mine] of emitted) out.set(key, new Map([...mine].map(([id, e]) => [id, { ...e }])));
  return out;
}

/**
 * The mutable state of one dry run (allocate-all.ts's allocateAllInOrder), keyed by
 * `namespace/name`. Only reconcileOnce changes it (and a run resuming from a Fork, at its start).
 */
export interface Run {
  readonly ctrl: ControllerState;
  /** Each handled Service's object now (the snapshot's, or the last one a reconcile wrote). */
  readonly current: Map<string, Service>;
  /** The snapshot's status addresses of each handled Service (as written, not canonical). */
  readonly initialIPs: ReadonlyMap<string, readonly string[]>;
  /** The restart-order class of each Service: its ingress entries (MetalLB's sort key). */
  readonly entries: ReadonlyMap<string, number>;
  /** The objects a reconcile wrote in this run, by key, while converged (see settled). */
  readonly wroteConverged: Map<string, Service>;
  /** settled's answer per Service, for the object it was asked about. */
  readonly settledMemo: Map<string, { readonly svc: Service; readonly value: boolean }>;
  /** statusKept's answers per Service object (the configuration's verdict), shared by the runs of one allocateAll. */
  readonly keptMemo: WeakMap<Service, boolean>;
  /** Each Service's last reconcile outcome, and its first. */
  readonly last: Map<string, ReconcileOutcome>;
  readonly firstOutcome: Map<string, ReconcileOutcome>;
  readonly emitted: Emitted;
  readonly history: WriteHistory;
  /** The Services whose writes came back to an earlier state (WriteHistory), with the cycle. */
  readonly cycles: Map<string, WriteCycle>;
  /** Service → every pool its allocations could have taken (chosen and tied), in the order seen. */
  readonly tiedOf: Map<string, string[]>;
}

function handled(svc: Service, lbClass: string): boolean {
  return svc.spec?.type === 'LoadBalancer' && !filteredByLoadBalancerClass(svc, lbClass);
}

/**
 * A run's state at its start: a fresh controller with `config.pools` and `prefer` as its
 * preferredPools, and the snapshot's Services of class `lbClass` (MetalLB's `--lb-class`, ""
 * for none); or, with `from`, a copy of the fork's controller with `prefer` instead (its
 * `current` is the snapshot's: the caller applies `from.current` once it has sorted them).
 */
export function startRun(config: Config, services: readonly Service[], lbClass: string, prefer: ReadonlyMap<string, string>, from: Fork | undefined, keptMemo: WeakMap<Service, boolean>): Run {
  let ctrl: ControllerState;
  if (from) {
    ctrl = { allocator: from.ctrl.allocator.clone(), pools: from.ctrl.pools };
    ctrl.allocator.preferredPools.clear();
    for (const [k, p] of prefer) ctrl.allocator.preferredPools.set(k, p);
  } else {
    ctrl = newController();
    for (const [k, p] of prefer) ctrl.allocator.preferredPools.set(k, p);
    setControllerPools(ctrl, config.pools.values());
  }
  const current = new Map<string, Service>();
  const initialIPs = new Map<string, string[]>();
  const entries = new Map<string, number>();
  for (const svc of services) {
    if (!handled(svc, lbClass)) continue;
    const key = serviceKey(svc);
    current.set(key, svc);
    initialIPs.set(key, statusIPs(svc));
    entries.set(key, ingressEntries(svc));
  }
  return {
    ctrl,
    current,
    initialIPs,
    entries,
    wroteConverged: new Map<string, Service>(from?.wroteConverged ?? []),
    // settled(ctrl, key, svc) reads `svc` and key's own allocation, which only a reconcile of key
    // changes (reconcileOnce forgets it then); statusKept reads `svc` and the configuration: both
    // are remembered per object, the re-sorts of later passes ask them again for every Service.
    settledMemo: new Map(),
    keptMemo,
    last: new Map<string, ReconcileOutcome>(from?.last ?? []),
    firstOutcome: new Map<string, ReconcileOutcome>(from?.firstOutcome ?? []),
    emitted: from ? copyEmitted(from.emitted) : new Map(),
    history: from ? from.history.clone() : new WriteHistory(),
    cycles: new Map<string, WriteCycle>(from?.cycles ?? []),
    tiedOf: new Map(),
  };
}

/** settled(run.ctrl, key, svc), remembered per object until key's next reconcile. */
export function isSettled(run: Run, key: string, svc: Service): boolean {
  const m = run.settledMemo.get(key);
  if (m && m.svc === svc) return m.value;
  const value = settled(run.ctrl, key, svc);
  run.settledMemo.set(key, { svc, value });
  return value;
}

/** Whether `svc` keeps its status addresses (statusKept, or settled as this run wrote it): processingOrder's `kept`. */
export function keptIn(run: Run, svc: Service): boolean {
  const key = serviceKey(svc);
  if (run.wroteConverged.get(key) === svc && isSettled(run, key, svc)) return true;
  let value = run.keptMemo.get(svc);
  if (value === undefined) run.keptMemo.set(svc, (value = statusKept(run.ctrl, key, svc)));
  return value;
}

/** What a run observes of each reconcile it runs: the object reconciled, key's addresses before, the outcome. */
export type ReconcileObserver = (key: string, input: Service, prevIPs: readonly string[], out: ReconcileOutcome) => void;

const noop: ReconcileOutcome = { result: 'success', updated: false, events: [] };

/**
 * Reconciles `key`'s current object once (MetalLB's convergence: reconcileService) and records
 * the outcome: a write replaces the object and is added to `written` (and to the write history,
 * which notes a cycle), the Events are counted, tied pools remembered, and `observe` called. A
 * Service whose object is the one its last reconcile wrote, settled, is skipped (success, no
 * write, no Event: reconciling it would change nothing).
 */
export function reconcileOnce(run: Run, key: string, written: Set<string>, observe?: ReconcileObserver): ReconcileOutcome {
  const input = run.current.get(key)!;
  if (run.wroteConverged.get(key) === input && isSettled(run, key, input)) {
    run.last.set(key, noop);
    return noop;
  }
  const prevIPs = run.ctrl.allocator.ipsOf(key);
  run.settledMemo.delete(key);
  const out = reconcileService(run.ctrl, key, input);
  run.wroteConverged.delete(key);
  if (out.updated && out.service) {
    run.current.set(key, out.service);
    written.add(key);
    // Within one dry run nobody else edits a Service: its inputs stay the same.
    const cycle = run.history.record(key, out.service, '');
    if (cycle) run.cycles.set(key, cycle);
    if (!out.failure) run.wroteConverged.set(key, out.service);
  }
  run.last.set(key, out);
  for (const e of out.events) {
    let mine = run.emitted.get(key);
    if (!mine) run.emitted.set(key, (mine = new Map()));
    const id = JSON.stringify([e.type, e.reason, e.message]);
    const seen = mine.get(id);
    if (seen) seen.count++;
    else mine.set(id, { ...e, count: 1 });
  }
  if (!run.firstOutcome.has(key)) run.firstOutcome.set(key, out);
  const a = out.allocation;
  if (a && a.tiedPools.length > 0) {
    const seen = run.tiedOf.get(key) ?? [];
    for (const p of [a.pool, ...a.tiedPools]) if (!seen.includes(p)) seen.push(p);
    run.tiedOf.set(key, seen);
  }
  if (observe) observe(key, input, prevIPs, out);
  return out;
}

/** Whether `out`, `key`'s reconcile, kept exactly its status addresses: no walk, no failure. */
export function keptOwn(run: Run, key: string, out: ReconcileOutcome): boolean {
  if (out.allocation || out.failure) return false;
  const held = run.ctrl.allocator.ipsOf(key);
  const had = run.initialIPs.get(key)!;
  return had.length > 0 && held.length === had.length && had.every((ip) => held.includes(canonical(ip)));
}

/** `run`'s state now, at index `index` of the first pass (see Fork), copied. */
export function snapshot(run: Run, base: readonly Service[], initialKept: ReadonlyMap<string, boolean>, index: number, written: ReadonlySet<string>, again: boolean): Fork {
  return {
    base,
    index,
    initialKept,
    ctrl: { allocator: run.ctrl.allocator.clone(), pools: run.ctrl.pools },
    current: new Map(run.current),
    wroteConverged: new Map(run.wroteConverged),
    last: new Map(run.last),
    firstOutcome: new Map(run.firstOutcome),
    emitted: copyEmitted(run.emitted),
    history: run.history.clone(),
    cycles: new Map(run.cycles),
    written: new Set(written),
    again,
  };
}
