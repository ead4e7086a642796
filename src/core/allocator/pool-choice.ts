/**
 * Pool choice (MetalLB's `pinnedPoolsForService`, `sortPools`, `findBestPoolForService`): which
 * pools a service may get addresses from, in which order, and which pool MetalLB's loop picks.
 *
 * Where MetalLB walks a Go map (its per-namespace pool lists, the generic pools) the allocator
 * uses pool-name order; the Chooser answers "which pool would be picked" for any other order, so
 * that the allocator can report the pools some map order would have chosen. The pinned pools are
 * ordered by MetalLB's `sortPools` exactly as Go's sort.Slice moves them (gosort.ts).
 */
import { type IPFamily, formatIP } from '../ip.ts';
import { ipOf16 } from './addr16.ts';
import type { Candidates } from './address-index.ts';
import { policyOf, selectIPs } from './family-policy.ts';
import { goSortSlice, sortPoolsLess } from './gosort.ts';
import { type PoolEntry, poolCompatibility } from './pools.ts';
import type { AllocRequest, Family, PoolAttempt } from './types.ts';

/** Answers "which pool would findBestPoolForService pick" for any order of one phase's pools. */
export interface Chooser {
  /** 0: has what the family needs; 1/2: PreferDualStack fallback with the primary/secondary family; undefined: unusable. */
  tierOf(e: PoolEntry): 0 | 1 | 2 | undefined;
  /** The pool MetalLB's loop picks walking `order`. */
  first(order: readonly PoolEntry[]): PoolEntry | undefined;
  /** The pools it may pick when `pools` come in any order (Go map order). */
  anyOrder(pools: readonly PoolEntry[]): ReadonlySet<PoolEntry>;
  /** The addresses the service would get from pool `e` (canonical), [] if none. */
  selection(e: PoolEntry): string[];
  /** The pool's candidate addresses for the request (asked once per pool). */
  candidatesOf(e: PoolEntry): Candidates;
}

/** Beyond this many namespace pools for one Service, their 8!+ orders are not tried one by one. */
const MAX_PERMUTED_NAMESPACE_POOLS = 7;

/** A pool's serviceAllocation priority (0 when unset). */
function priorityOf(p: PoolEntry): number {
  return p.pool.serviceAllocation?.priority ?? 0;
}

/** MetalLB's `sortPools` on a copy: Go's sort.Slice with its comparator. */
export function sortPools(list: PoolEntry[]): PoolEntry[] {
  goSortSlice(list, (a, b) => sortPoolsLess(priorityOf(a), priorityOf(b)));
  return list;
}

/** Every permutation of `items` (Heap's algorithm), lazily. */
function* permutations<T>(items: readonly T[]): Generator<T[]> {
  const a = [...items];
  const c = a.map(() => 0);
  yield [...a];
  let i = 0;
  while (i < a.length) {
    if (c[i]! < i) {
      const j = i % 2 === 0 ? 0 : c[i]!;
      [a[j], a[i]] = [a[i]!, a[j]!];
      yield [...a];
      c[i]!++;
      i = 0;
    } else {
      c[i] = 0;
      i++;
    }
  }
}

/**
 * The Chooser for one request over one phase's pools: `candidates` gives a pool's candidate
 * addresses (asked once per pool). The first pool with the addresses the family needs (tier 0),
 * else with PreferDualStack the first with the primary family (1), else the first with the
 * secondary one (2).
 */
export function chooserFor(req: AllocRequest, family: Family, candidates: (e: PoolEntry) => Candidates): Chooser {
  const primary: IPFamily = req.ipFamilies?.[0] === 'IPv6' ? 'ipv6' : 'ipv4';
  const secondary: IPFamily = primary === 'ipv4' ? 'ipv6' : 'ipv4';
  const prefer = policyOf(req) === 'PreferDualStack' && family === 'dual';
  const direct = (c: Candidates): boolean => (family !== 'dual' && c[family] !== undefined) || (c.ipv4 !== undefined && c.ipv6 !== undefined);
  const candCache = new Map<PoolEntry, Candidates>();
  const candsOf = (e: PoolEntry): Candidates => {
    let c = candCache.get(e);
    if (!c) candCache.set(e, (c = candidates(e)));
    return c;
  };
  const tierOf = (e: PoolEntry): 0 | 1 | 2 | undefined => {
    const c = candsOf(e);
    if (direct(c)) return 0;
    if (!prefer) return undefined;
    if (c[primary] !== undefined) return 1;
    if (c[secondary] !== undefined) return 2;
    return undefined;
  };
  const first = (order: readonly PoolEntry[]): PoolEntry | undefined => {
    let best: PoolEntry | undefined;
    let bestTier = 3;
    for (const e of order) {
      const t = tierOf(e);
      if (t === 0) return e;
      if (t !== undefined && t < bestTier) {
        best = e;
        bestTier = t;
      }
    }
    return best;
  };
  const selection = (e: PoolEntry): string[] => {
    const sel = selectIPs(candsOf(e), family, policyOf(req), e.pool.name);
    return sel.ok ? sel.value.map((a) => formatIP(ipOf16(a))) : [];
  };
  const chooser: Chooser = {
    tierOf,
    first,
    selection,
    anyOrder: (pools) => {
      const out = new Set<PoolEntry>();
      let bestTier = 3;
      for (const e of pools) {
        const t = tierOf(e);
        if (t !== undefined && t < bestTier) bestTier = t;
      }
      for (const e of pools) if (tierOf(e) === bestTier) out.add(e);
      return out;
    },
    candidatesOf: candsOf,
  };
  return chooser;
}

/** The pinned and generic pools of a request, in pool order; refusals of the others go to `attempts`. */
export interface PoolLists {
  /** MetalLB's `ByNamespace[namespace]` (autoAssign, compatible). */
  readonly byNamespace: PoolEntry[];
  /** MetalLB's `ByServiceSelector` (autoAssign, compatible). */
  readonly bySelector: PoolEntry[];
  /** autoAssign pools without serviceAllocation. */
  readonly generic: PoolEntry[];
}

/**
 * Sorts the configured pools (`order`) for a request: pools pinned to its namespace, pools with
 * service selectors (a pool can be in both), generic pools. Each pool left out gets a refused
 * attempt in `attempts` (autoAssign disabled, reserved for other services, incompatible).
 */
export function poolListsFor(order: readonly PoolEntry[], req: AllocRequest, attempts: PoolAttempt[]): PoolLists {
  const byNamespace: PoolEntry[] = [];
  const bySelector: PoolEntry[] = [];
  const generic: PoolEntry[] = [];
  for (const p of order) {
    const sa = p.pool.serviceAllocation;
    if (!sa) {
      if (!p.pool.autoAssign) attempts.push({ pool: p.pool.name, phase: 'generic', outcome: 'refused', refusal: { reason: 'autoAssignDisabled' } });
      else generic.push(p);
      continue;
    }
    const selected = sa.namespaces.has(req.namespace) || sa.serviceSelectors.length > 0;
    if (!selected) {
      const refusal = poolCompatibility(p.pool, req) ?? { reason: 'reservedByServiceAllocation' as const };
      attempts.push({ pool: p.pool.name, phase: 'pinned', outcome: 'refused', refusal });
      continue;
    }
    if (!p.pool.autoAssign) {
      attempts.push({ pool: p.pool.name, phase: 'pinned', outcome: 'refused', refusal: { reason: 'autoAssignDisabled' } });
      continue;
    }
    const refusal = poolCompatibility(p.pool, req);
    if (refusal) {
      attempts.push({ pool: p.pool.name, phase: 'pinned', outcome: 'refused', refusal });
      continue;
    }
    if (sa.namespaces.has(req.namespace)) byNamespace.push(p);
    if (sa.serviceSelectors.length > 0) bySelector.push(p);
  }
  return { byNamespace, bySelector, generic };
}

/**
 * The pools some order of the namespace list (Go map order) makes `choose` pick in the pinned
 * phase. `orderCache` keeps sortedOrders' results per priority signature (the caller clears it
 * when the pools change).
 */
export function pinnedChoices(byNamespace: readonly PoolEntry[], bySelector: readonly PoolEntry[], choose: Chooser, orderCache: Map<string, readonly (readonly number[])[]>): ReadonlySet<PoolEntry> {
  const out = new Set<PoolEntry>();
  if (byNamespace.length <= 1) {
    const c = choose.first(sortPools([...byNamespace, ...bySelector]));
    if (c) out.add(c);
    return out;
  }
  const all = [...byNamespace, ...bySelector];
  if (byNamespace.length > MAX_PERMUTED_NAMESPACE_POOLS) {
    // Too many orders to try: every usable pinned pool counts as possible (an over-approximation).
    for (const p of all) if (choose.tierOf(p) !== undefined) out.add(p);
    const c = choose.first(sortPools(all));
    if (c) out.add(c);
    return out;
  }
  const prios = all.map(priorityOf);
  for (const order of sortedOrders(prios, byNamespace.length, orderCache)) {
    const c = choose.first(order.map((i) => all[i]!));
    if (c) out.add(c);
  }
  return out;
}

/**
 * The distinct results of sortPools over every permutation of the first `k` entries (the
 * namespace list) followed by the rest, as index arrays into the name-ordered input. Depends only
 * on the priorities, so it is cached per priority signature.
 */
function sortedOrders(prios: readonly number[], k: number, orderCache: Map<string, readonly (readonly number[])[]>): readonly (readonly number[])[] {
  const sig = `${k}|${prios.join(',')}`;
  const hit = orderCache.get(sig);
  if (hit) return hit;
  const seen = new Set<string>();
  const out: number[][] = [];
  const rest = prios.map((_, i) => i).slice(k);
  for (const perm of permutations(prios.map((_, i) => i).slice(0, k))) {
    const idx = [...perm, ...rest];
    goSortSlice(idx, (a, b) => sortPoolsLess(prios[a]!, prios[b]!));
    const id = idx.join(',');
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(idx);
  }
  orderCache.set(sig, out);
  return out;
}

/** Attempts in phase order (pinned, then generic), keeping the order within a phase. */
export function sortAttempts(a: PoolAttempt[]): PoolAttempt[] {
  const rank = { requested: 0, pinned: 1, generic: 2 } as const;
  return a
    .map((x, i) => [x, i] as const)
    .sort((p, q) => rank[p[0].phase] - rank[q[0].phase] || p[1] - q[1])
    .map((p) => p[0]);
}
