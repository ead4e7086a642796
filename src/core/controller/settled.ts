/**
 * When a dry-run reconcile may be skipped (settled), the canonical address texts allocateAll
 * compares, and when a Service's answer can no longer change (finalAt), for allocate-all.ts.
 */
import type { Service } from '../kube.ts';
import { canonicalIP, formatIP } from '../ip.ts';
import type { ControllerState, ReconcileOutcome } from './reconcile.ts';
import { ANNOTATION_IP_ALLOCATED_FROM_POOL, familyOfAddresses, ipFamilyPolicy, requestedIPs, requestedPool, serviceFamily, statusIPs } from './service.ts';

/**
 * Whether reconciling `svc` — the object the previous reconcile of `key` wrote, without failing —
 * again is certain to change nothing, so that the dry run may skip it: the allocator holds exactly
 * its status addresses, of exactly the Service's family (no PreferDualStack, whose reconcile may
 * add or drop a family), and it asks for no address or pool it does not have (requested addresses
 * sit in the status in text order, as MetalLB's isEqualIPs leaves them). Reconciling such an
 * object re-assigns its own addresses (idempotent) and writes the same status and annotation.
 */
export function settled(ctrl: ControllerState, key: string, svc: Service): boolean {
  if (ipFamilyPolicy(svc) === 'PreferDualStack') return false;
  const status = statusIPs(svc);
  const held = ctrl.allocator.ipsOf(key);
  if (status.length === 0 || status.length !== held.length || status.some((s, i) => canonical(s) !== held[i])) return false;
  if (svc.metadata?.annotations?.[ANNOTATION_IP_ALLOCATED_FROM_POOL] !== ctrl.allocator.poolOf(key)) return false;
  const family = serviceFamily(svc);
  if (family === 'unknown' || familyOfAddresses(status) !== family) return false;
  const pool = requestedPool(svc);
  if (pool !== '' && pool !== ctrl.allocator.poolOf(key)) return false;
  const desired = requestedIPs(svc);
  if (!desired.ok) return false;
  if (desired.ips.length > 0) {
    const want = desired.ips.map(formatIP).sort();
    const have = [...held].sort();
    if (want.length !== have.length || want.some((x, i) => x !== have[i])) return false;
    // MetalLB's isEqualIPs sorts the status addresses in place by their text and convergeBalancer
    // writes them back (controller/service.go): a status not in that order is rewritten sorted
    // on the next reconcile.
    if (status.some((s, i) => i > 0 && canonical(status[i - 1]!) > canonical(s))) return false;
  }
  return true;
}

/** Canonical texts already computed (a dry run asks for the same few thousand again and again). */
const canonicalMemo = new Map<string, string>();

/** The canonical form of an address text (canonicalIP), or the text itself when it is not one. */
export function canonical(s: string): string {
  let c = canonicalMemo.get(s);
  if (c === undefined) {
    if (canonicalMemo.size >= 100_000) canonicalMemo.clear();
    canonicalMemo.set(s, (c = canonicalIP(s) ?? s));
  }
  return c;
}

/** What finalAt reads of a dry run's state (run-state.ts's Run, or its Fork at one point of its first pass). */
export interface RunState {
  readonly ctrl: ControllerState;
  /** Each Service's object now (the snapshot's, or the last one a reconcile wrote). */
  readonly current: ReadonlyMap<string, Service>;
  /** The objects the last reconcile of each Service wrote without failing (run-state.ts's Run `wroteConverged`). */
  readonly wroteConverged: ReadonlyMap<string, Service>;
  /** Each Service's last reconcile outcome (run-state.ts's Run `last`). */
  readonly last: ReadonlyMap<string, ReconcileOutcome>;
}

/**
 * Whether `key`'s answer (addresses, annotation, events, settling) is final in every dry run
 * resumed from `state`, whatever order the other Services take from there: its object is
 * settled, and either its last reconcile wrote that object without failing (a run skips every
 * later reconcile of such a Service: it emits nothing, writes nothing), or its last reconcile
 * left the object as it was without an Event, a failure or an allocation (the Service already
 * held its addresses with its pool's annotation: a later reconcile of the same object finds its
 * own addresses held by it and does exactly that again). Only a reconcile of `key` changes its
 * object, its allocation or its events, so that stays true to the end.
 */
export function finalAt(state: RunState, key: string): boolean {
  const svc = state.current.get(key);
  if (svc === undefined) return false;
  if (state.wroteConverged.get(key) !== svc) {
    const out = state.last.get(key);
    if (out === undefined || out.updated || out.failure || out.allocation || out.events.length > 0) return false;
  }
  return settled(state.ctrl, key, svc);
}
