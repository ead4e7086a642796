/**
 * The order in which the dry run (allocateAll) and the live controller loop reconcile Services:
 * MetalLB's reprocess-all order made stable (processingOrder), and the other orders within one
 * ingress-entry count that allocateAll also runs (Ties, tieOrder).
 */
import type { Service } from '../kube.ts';
import { serviceKey } from './service.ts';

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The number of `status.loadBalancer.ingress` entries of a Service, hostname-only ones included:
 * the key MetalLB's reprocessAll sorts by (`service_controller_reload.go`
 * `len(…Status.LoadBalancer.Ingress)`).
 */
export function ingressEntries(svc: Service): number {
  return svc.status?.loadBalancer?.ingress?.length ?? 0;
}

/**
 * MetalLB's reprocess-all order, made stable. MetalLB sorts the Services by the number of
 * `status.loadBalancer.ingress` entries (hostname-only ones included: ingressEntries), most first;
 * within one count its order is the informer
 * cache's (Go map order, random). metallb-ts picks, within one count, the Services that keep their
 * status addresses first (`kept`, the configuration's verdict: see statusKept), then
 * `namespace/name` — an order MetalLB can take, and the one in which no Service whose address
 * left its pool takes, on a restart, an address another Service's status still holds. Services
 * without addresses come last, by `metadata.creationTimestamp` (oldest first, missing last), then
 * `namespace/name`. Returns a new array; the input is not modified. allocateAll and the live
 * controller loop (src/controller) both order their passes with it.
 */
export function processingOrder<S extends Service>(services: readonly S[], kept?: (svc: S) => boolean): S[] {
  const decorated = services.map((svc) => {
    const n = ingressEntries(svc);
    return { svc, key: serviceKey(svc), n, keeps: n > 0 && kept ? kept(svc) : true, ts: svc.metadata?.creationTimestamp ?? '\uffff' };
  });
  decorated.sort((a, b) => {
    if (a.n !== b.n) return b.n - a.n;
    if (a.n === 0) return cmp(a.ts, b.ts) || cmp(a.key, b.key);
    if (a.keeps !== b.keeps) return a.keeps ? -1 : 1;
    return cmp(a.key, b.key);
  });
  return decorated.map((d) => d.svc);
}

/** How a run orders the Services of one ingress-entry group (see tieOrder). */
export type TieKind = 'name' | 'reverse' | 'rotate' | 'moversFirst';

/**
 * A run's order within each ingress-entry group: `byCount` for the groups of those counts,
 * `others` for the rest. `movers`: the Services moversFirst puts first.
 */
export interface Ties {
  readonly byCount?: ReadonlyMap<number, TieKind>;
  readonly others: TieKind;
  readonly movers?: ReadonlySet<string>;
}

/** processingOrder's own order in every group. */
export const NAME: Ties = { others: 'name' };

/** Whether `t` keeps processingOrder's own order in every group. */
export function isNameOrder(t: Ties): boolean {
  return t.others === 'name' && (t.byCount === undefined || [...t.byCount.values()].every((k) => k === 'name'));
}

/**
 * `sorted` (processingOrder's result) with each run of Services of one ingress-entry count
 * reordered as `ties` says for it: `name` keeps it, `reverse` reverses it, `rotate` moves its
 * first Service last, `moversFirst` moves `ties.movers` before the others (each part in order).
 */
export function tieOrder<S extends Service>(sorted: S[], ties: Ties): S[] {
  if (isNameOrder(ties)) return sorted;
  const out: S[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    const n = ingressEntries(sorted[i]!);
    while (j < sorted.length && ingressEntries(sorted[j]!) === n) j++;
    const group = sorted.slice(i, j);
    const kind = ties.byCount?.get(n) ?? ties.others;
    if (kind === 'reverse') out.push(...group.reverse());
    else if (kind === 'rotate') out.push(...group.slice(1), ...group.slice(0, 1));
    else if (kind === 'moversFirst') {
      const first = group.filter((svc) => ties.movers?.has(serviceKey(svc)));
      out.push(...first, ...group.filter((svc) => !ties.movers?.has(serviceKey(svc))));
    } else out.push(...group);
    i = j;
  }
  return out;
}
