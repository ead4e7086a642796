/**
 * Detects Services that MetalLB's controller would rewrite forever.
 *
 * MetalLB reconciles a Service again on every update event, including the one its own status
 * write causes. A Service whose reconcile does not reach a fixed point therefore flips between
 * states without end, each write triggering the next — e.g. a PreferDualStack Service whose
 * clusterIPs are IPv4 only, in a pool with both families: [v4] gets an IPv6 address added
 * (AllocateFromPoolForAdditionalFamily), the dual pair no longer matches the clusterIPs
 * (serviceFamilyChanged) so the next reconcile clears it and allocates [v4] again, and so on.
 * There is no backoff on that path (each reconcile succeeds). metallb-ts caps it: the writes of
 * one Service are remembered while its inputs (spec, labels, the annotations the controller does
 * not write) stay the same; a write that restores an earlier state — not the last one — closes a
 * cycle. The controller loop then writes that state, logs, and stops reacting to its own writes
 * of that Service until the Service changes; allocateAll does the same in the dry run.
 */
import type { Service } from '../kube.ts';
import { ANNOTATION_IP_ALLOCATED_FROM_POOL, statusIPs } from './service.ts';

/** What of a Service the controller does not write (a change here is a change by someone else). */
export function serviceInputs(svc: Service): string {
  const annotations = { ...(svc.metadata?.annotations ?? {}) };
  delete annotations[ANNOTATION_IP_ALLOCATED_FROM_POOL];
  const sorted = Object.fromEntries(Object.entries(annotations).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return JSON.stringify([svc.spec ?? null, svc.metadata?.labels ?? null, sorted]);
}

/** What the controller writes: the status addresses and the pool annotation. */
function writtenState(svc: Service): { key: string; ips: string[] } {
  const ips = statusIPs(svc);
  return { key: JSON.stringify([ips, svc.metadata?.annotations?.[ANNOTATION_IP_ALLOCATED_FROM_POOL] ?? null]), ips };
}

/** A cycle found by WriteHistory: the address lists the Service alternates between, oldest first. */
export interface WriteCycle {
  readonly states: readonly (readonly string[])[];
}

const MAX_STATES = 16;

/** Per Service key, the states written since its inputs last changed (see the module comment). */
export class WriteHistory {
  private readonly byKey = new Map<string, { inputs: string; states: Array<{ key: string; ips: string[] }> }>();

  /**
   * Records a write of `desired` for `key`. Returns the cycle when this write restores a state
   * written earlier (other than the last one) with the same inputs, else undefined. `inputs`:
   * serviceInputs(desired), when the caller knows it (the dry run: they never change).
   */
  record(key: string, desired: Service, inputs: string = serviceInputs(desired)): WriteCycle | undefined {
    let h = this.byKey.get(key);
    if (!h || h.inputs !== inputs) this.byKey.set(key, (h = { inputs, states: [] }));
    const st = writtenState(desired);
    const at = h.states.findIndex((s) => s.key === st.key);
    const isLast = at >= 0 && at === h.states.length - 1;
    if (!isLast) h.states.push(st);
    if (h.states.length > MAX_STATES) h.states.shift();
    if (at < 0 || isLast) return undefined;
    return { states: h.states.slice(at, -1).map((s) => s.ips) };
  }

  /** An independent copy (the dry run forks its state: see allocateAll). */
  clone(): WriteHistory {
    const c = new WriteHistory();
    for (const [k, h] of this.byKey) c.byKey.set(k, { inputs: h.inputs, states: [...h.states] });
    return c;
  }

  /** Forgets `key` (its inputs changed, it was deleted), or every key. */
  reset(key?: string): void {
    if (key === undefined) this.byKey.clear();
    else this.byKey.delete(key);
  }
}
