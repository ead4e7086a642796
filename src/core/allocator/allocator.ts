/**
 * The IP allocator: MetalLB v0.16.1's `internal/allocator` semantics (see
 * the conformance cases test/conformance/allocator.ts runs), with an address index so that finding "the first
 * address of a range that passes the sharing check" never walks the range.
 *
 * Index (all addresses as 128-bit `to16` values, so IPv4 and IPv6 share one key space):
 * - `occupied`: the addresses that have recorded keys, as an IntervalSet of maximal runs. The
 *   first free address >= x is x, or the end of x's run + 1 (O(log runs)); avoidBuggyIPs only
 *   adds a hop over `.255`/`.0`.
 * - `shared`: per (sharing key, backend key) the sorted addresses whose recorded keys are exactly
 *   those (non-empty sharing key only): the only occupied addresses whose key check can pass for
 *   a different service. Walking it stops at the first address passing the port check.
 * - the requesting service's own addresses (at most two), which pass the key check when it is
 *   their only holder.
 * The first passing address of a range is the minimum of the three, which is exactly the address
 * MetalLB's linear walk returns.
 *
 * Where MetalLB walks a Go map (the pool owning an address, its per-namespace pool lists, the
 * generic pools) this allocator uses pool-name order, and reports the other pools some map order
 * would have chosen in `AllocationResult.tiedPools`. The pinned pools are ordered by MetalLB's
 * `sortPools` exactly as Go's sort.Slice moves them (gosort.ts), which is deterministic.
 */
import type { Pool } from '../config/types.ts';
import { type IP, type IPFamily, formatIP, parseIP, to16, cidrLast } from '../ip.ts';
import { OrderedMap, IntervalSet } from './ordered.ts';
import { goSortSlice, sortPoolsLess } from './gosort.ts';
import { AllocationError } from './errors.ts';
import type { AllocRequest, AllocationFailure, AllocationResult, Capacity, Family, Port, PoolAttempt, PoolCounters, PoolRefusal, SharingConflict } from './types.ts';

/** How Go prints a nil net.IP (`%q` of `[]net.IP{nil}` is `["<nil>"]`). */
export const NIL_IP = '<nil>';

/** math.MaxInt64: MetalLB's capacity for an IPv6 block of 2^62 addresses or more. */
export const MAX_INT64 = 9223372036854775807n;

interface Keys {
  readonly sharing: string;
  readonly backend: string;
}

interface AddrState {
  /** Recorded keys (null once dropped). */
  keys: Keys | null;
  /** port key -> service key. */
  readonly ports: Map<string, string>;
  /** Services whose allocation contains the address. */
  readonly holders: Set<string>;
}

interface Alloc {
  pool: string;
  readonly ips: readonly IP[];
  /** Canonical texts of `ips`. */
  readonly texts: readonly string[];
  readonly addrs: readonly bigint[];
  readonly ports: readonly Port[];
  readonly keys: Keys;
}

interface Block {
  readonly family: IPFamily;
  readonly lo: bigint;
  readonly hi: bigint;
}

interface PoolEntry {
  readonly pool: Pool;
  readonly blocks: readonly Block[];
  readonly capacity: Capacity;
}

interface Candidates {
  ipv4?: bigint;
  ipv6?: bigint;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; failure: AllocationFailure };

/** Answers "which pool would findBestPoolForService pick" for any order of one phase's pools. */
interface Chooser {
  /** 0: has what the family needs; 1/2: PreferDualStack fallback with the primary/secondary family; undefined: unusable. */
  tierOf(e: PoolEntry): 0 | 1 | 2 | undefined;
  /** The pool MetalLB's loop picks walking `order`. */
  first(order: readonly PoolEntry[]): PoolEntry | undefined;
  /** The pools it may pick when `pools` come in any order (Go map order). */
  anyOrder(pools: readonly PoolEntry[]): ReadonlySet<PoolEntry>;
  /** The addresses the service would get from pool `e` (canonical), [] if none. */
  selection(e: PoolEntry): string[];
}

/** Beyond this many namespace pools for one Service, their 8!+ orders are not tried one by one. */
const MAX_PERMUTED_NAMESPACE_POOLS = 7;

function priorityOf(p: PoolEntry): number {
  return p.pool.serviceAllocation?.priority ?? 0;
}

/** MetalLB's `sortPools` on a copy: Go's sort.Slice with its comparator. */
function sortPools(list: PoolEntry[]): PoolEntry[] {
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

const V4_MAPPED = 0xffffn << 32n;

function familyOf16(v: bigint): IPFamily {
  return v >> 32n === 0xffffn ? 'ipv4' : 'ipv6';
}

function ipOf16(v: bigint): IP {
  return familyOf16(v) === 'ipv4' ? { family: 'ipv4', value: v & 0xffffffffn } : { family: 'ipv6', value: v };
}

function isBuggy16(v: bigint): boolean {
  if (familyOf16(v) !== 'ipv4') return false;
  const last = v & 255n;
  return last === 0n || last === 255n;
}

function portKey(p: Port): string {
  return `${p.port}\u0000${p.protocol}`;
}

function keysId(k: Keys): string {
  return `${k.sharing}\u0000${k.backend}`;
}

/** MetalLB's `sharingOK`: undefined when the keys allow sharing, else its message. */
function sharingProblem(existing: Keys, requested: Keys): string | undefined {
  if (existing.sharing === '') return 'existing service does not allow sharing';
  if (requested.sharing === '') return 'new service does not allow sharing';
  if (existing.sharing !== requested.sharing) {
    return `sharing key ${JSON.stringify(requested.sharing)} does not match existing sharing key ${JSON.stringify(existing.sharing)}`;
  }
  if (existing.backend !== requested.backend) {
    return `backend key ${JSON.stringify(requested.backend)} does not match existing sharing key ${JSON.stringify(existing.backend)}`;
  }
  return undefined;
}

/**
 * Family of a list of addresses (MetalLB's `ipfamily.ForAddresses`): one address -> its family,
 * two of different families -> `dual`, anything else -> `unknown`.
 */
export function familyOfIPs(ips: readonly IP[]): Family | 'unknown' {
  if (ips.length === 1) return ips[0].family;
  if (ips.length === 2 && ips[0].family !== ips[1].family) return 'dual';
  return 'unknown';
}

/**
 * Pool capacity as MetalLB's `poolCount` computes it: per CIDR block, 2^hostbits (minus the
 * `.0`/`.255` addresses when avoidBuggyIPs); a block with >= 62 host bits sets the IPv6 count and
 * the total to 2^63-1. Sums saturate at 2^63-1 (MetalLB would overflow).
 */
export function poolCapacity(pool: Pool): Capacity {
  let total = 0n;
  let ipv4 = 0n;
  let ipv6 = 0n;
  const sat = (a: bigint, b: bigint): bigint => (a + b > MAX_INT64 ? MAX_INT64 : a + b);
  for (const c of pool.cidrs) {
    const bits = c.family === 'ipv4' ? 32 : 128;
    const h = bits - c.prefix;
    if (h >= 62) {
      total = MAX_INT64;
      ipv6 = MAX_INT64;
      continue;
    }
    let size = 1n << BigInt(h);
    if (pool.avoidBuggyIPs && c.family === 'ipv4') {
      if (c.prefix <= 24) size -= 2n * (1n << BigInt(24 - c.prefix));
      else {
        const last = cidrLast(c);
        if ((c.base & 255n) === 0n || (c.base & 255n) === 255n) size--;
        if ((last & 255n) === 0n || (last & 255n) === 255n) size--;
      }
    }
    total = sat(total, size);
    if (c.family === 'ipv4') ipv4 = sat(ipv4, size);
    else ipv6 = sat(ipv6, size);
  }
  return { total, ipv4, ipv6 };
}

/**
 * Whether a pool accepts a service (MetalLB's `isPoolCompatibleWithService`): undefined when
 * compatible, else the refusal (namespace not in the pool's set, or no service selector matches).
 */
export function poolCompatibility(pool: Pool, svc: Pick<AllocRequest, 'namespace' | 'labels'>): PoolRefusal | undefined {
  const sa = pool.serviceAllocation;
  if (!sa) return undefined;
  if (sa.namespaces.size > 0 && !sa.namespaces.has(svc.namespace)) {
    return { reason: 'namespaceNotAllowed', namespace: svc.namespace, namespaces: [...sa.namespaces].sort() };
  }
  if (sa.serviceSelectors.length > 0) {
    if (sa.serviceSelectors.some((s) => s.matches(svc.labels ?? {}))) return undefined;
    return { reason: 'serviceSelectorMismatch', selectors: sa.serviceSelectors.map((s) => s.text) };
  }
  return undefined;
}

function policyOf(req: AllocRequest): string {
  return req.ipFamilyPolicy || 'SingleStack';
}

/**
 * A deterministic, I/O-free IP allocator with MetalLB's semantics.
 *
 * Operations that can fail throw {@link AllocationError} (MetalLB's message, structured `reason`)
 * and leave the state unchanged. Every pool-change notification calls `onPoolChange(poolName)`
 * (MetalLB's counters callback) and increments `notificationCount`.
 */
export class Allocator {
  private pools = new Map<string, PoolEntry>();
  /** Configured pools in name order (the deterministic stand-in for Go map order). */
  private poolOrder: PoolEntry[] = [];
  private readonly allocs = new Map<string, Alloc>();
  private readonly addrs = new Map<bigint, AddrState>();
  private occupied = new IntervalSet();
  private readonly shared = new Map<string, OrderedMap<true>>();
  /** pool -> address -> number of allocations (attributed to the pool) holding it. */
  private readonly inUse = new Map<string, Map<bigint, number>>();
  private notifications = 0;
  /** sortedOrders results per priority signature (cleared by setPools). */
  private readonly orderCache = new Map<string, readonly (readonly number[])[]>();
  private readonly onPoolChange: ((pool: string) => void) | undefined;

  /**
   * Service key → a pool some Go map order could choose for it (one of an allocation's
   * `tiedPools`): allocate takes that pool instead of name order's choice whenever it is one of
   * the tied ones. Empty by default; the dry run sets it to follow MetalLB's random choices down
   * another branch (a PreferDualStack Service that settles only in one of its tied pools).
   */
  readonly preferredPools = new Map<string, string>();

  /** `onPoolChange` is called with a pool name for every pool-change notification. */
  constructor(onPoolChange?: (pool: string) => void) {
    this.onPoolChange = onPoolChange;
  }

  /**
   * An independent copy of this allocator: configuration, allocations, sharing state, counters
   * and preferredPools; later operations on either leave the other alone. The copy notifies the
   * same `onPoolChange`. The dry run forks its state with it (allocateAll's other restart orders
   * start from the state the name order reached before the first Services whose order matters).
   */
  clone(): Allocator {
    const c = new Allocator(this.onPoolChange);
    c.pools = new Map(this.pools);
    c.poolOrder = [...this.poolOrder];
    for (const [k, a] of this.allocs) c.allocs.set(k, a);
    for (const [addr, st] of this.addrs) c.addrs.set(addr, { keys: st.keys, ports: new Map(st.ports), holders: new Set(st.holders) });
    c.occupied = this.occupied.clone();
    for (const [id, idx] of this.shared) c.shared.set(id, idx.clone());
    for (const [pool, counts] of this.inUse) c.inUse.set(pool, new Map(counts));
    c.notifications = this.notifications;
    for (const [k, v] of this.orderCache) c.orderCache.set(k, v);
    for (const [k, v] of this.preferredPools) c.preferredPools.set(k, v);
    return c;
  }

  /** How many pool-change notifications were emitted since creation. */
  get notificationCount(): number {
    return this.notifications;
  }

  /** Names of the configured pools, in name order. */
  get poolNames(): string[] {
    return this.poolOrder.map((p) => p.pool.name);
  }

  /** The configured pool named `name`. */
  pool(name: string): Pool | undefined {
    return this.pools.get(name)?.pool;
  }

  private notify(pool: string): void {
    this.notifications++;
    this.onPoolChange?.(pool);
  }

  // ---------------------------------------------------------------- configuration

  /**
   * Replaces the configuration (MetalLB's `SetPools`); pools are not checked for overlaps.
   * Existing allocations whose addresses no pool owns are released; those owned by another pool
   * are re-attributed to it. Notifies every removed pool and every configured pool.
   */
  setPools(pools: Iterable<Pool>): void {
    const next = new Map<string, PoolEntry>();
    for (const pool of pools) {
      const blocks = pool.cidrs.map((c) => {
        const lo = c.family === 'ipv4' ? V4_MAPPED | c.base : c.base;
        const hi = c.family === 'ipv4' ? V4_MAPPED | cidrLast(c) : cidrLast(c);
        return { family: c.family, lo, hi };
      });
      next.set(pool.name, { pool, blocks, capacity: poolCapacity(pool) });
    }
    const removed = [...this.pools.keys()].filter((n) => !next.has(n));
    this.pools = next;
    this.orderCache.clear();
    this.poolOrder = [...next.values()].sort((a, b) => (a.pool.name < b.pool.name ? -1 : a.pool.name > b.pool.name ? 1 : 0));
    for (const key of [...this.allocs.keys()].sort()) {
      const alloc = this.allocs.get(key)!;
      const owner = this.ownerOf(alloc.addrs);
      if (!owner) {
        this.release(key);
        continue;
      }
      if (owner.pool.name !== alloc.pool) {
        this.release(key);
        this.record(key, { ...alloc, pool: owner.pool.name });
      }
    }
    for (const name of removed) this.notify(name);
    for (const p of this.poolOrder) this.notify(p.pool.name);
  }

  // ---------------------------------------------------------------- queries

  /** Pool the service's allocation is attributed to, or null (MetalLB's `Pool`, "" -> null). */
  poolOf(key: string): string | null {
    return this.allocs.get(key)?.pool ?? null;
  }

  /** Addresses held by the service, in recorded order (canonical strings); [] when none. */
  ipsOf(key: string): string[] {
    return [...(this.allocs.get(key)?.texts ?? [])];
  }

  /** MetalLB's `AllocationKey`: backendKey + sharingKey of the allocation, "" when none. */
  allocationKey(key: string): string {
    const a = this.allocs.get(key);
    return a ? a.keys.backend + a.keys.sharing : '';
  }

  /** Name of the configured pool owning all of `ips` (MetalLB's `PoolForIP`), or null. */
  poolForIPs(ips: readonly IP[]): string | null {
    return this.ownerOf(ips.map(to16))?.pool.name ?? null;
  }

  /** Every configured pool owning all of `ips` (several only with overlapping pools). */
  poolsForIPs(ips: readonly IP[]): string[] {
    const addrs = ips.map(to16);
    return this.poolOrder.filter((p) => this.owns(p, addrs)).map((p) => p.pool.name);
  }

  /** Capacity of a configured pool, or undefined for an unknown pool. */
  capacity(pool: string): Capacity | undefined {
    return this.pools.get(pool)?.capacity;
  }

  /** MetalLB's `CountersForPool`; all zero for a pool that is not configured. */
  counters(pool: string): PoolCounters {
    const entry = this.pools.get(pool);
    if (!entry) return { availableIPv4: 0n, availableIPv6: 0n, assignedIPv4: 0n, assignedIPv6: 0n };
    let v4 = 0n;
    let v6 = 0n;
    for (const addr of this.inUse.get(pool)?.keys() ?? []) {
      if (familyOf16(addr) === 'ipv4') v4++;
      else v6++;
    }
    return {
      assignedIPv4: v4,
      assignedIPv6: v6,
      availableIPv4: entry.capacity.ipv4 - v4,
      availableIPv6: entry.capacity.ipv6 - v6,
    };
  }

  /** Service keys holding an allocation, sorted. */
  allocatedServices(): string[] {
    return [...this.allocs.keys()].sort();
  }

  // ---------------------------------------------------------------- mutations

  /** Releases the service's allocation (MetalLB's `Unassign`); no-op when it has none. */
  unassign(key: string): void {
    this.release(key);
  }

  /**
   * Gives the service exactly `ips` (MetalLB's `Assign`), replacing its previous allocation.
   * Fails (AllocationError) when no pool owns the addresses, the owner is not compatible with the
   * service, more than two addresses / two of one family are given, or the sharing check fails.
   */
  assign(req: AllocRequest, ips: readonly IP[]): AllocationResult {
    const r = this.tryAssign(req, ips.map(to16));
    if (!r.ok) throw new AllocationError(r.failure);
    return { ips: this.ipsOf(req.key), pool: r.value, attempts: [], tiedPools: [], tiedChoices: [] };
  }

  /**
   * The checks of `assign` that depend on the configuration only (a pool owns the addresses, it
   * accepts the service, at most two addresses of different families): undefined when they pass.
   * The sharing check against other services' allocations is left out.
   */
  configAllows(req: AllocRequest, ips: readonly IP[]): AllocationFailure | undefined {
    const addrs = ips.map(to16);
    const owner = this.ownerOf(addrs);
    if (!owner) return { kind: 'notAllowedInConfig', ips: ips.map(formatIP) };
    const refusal = poolCompatibility(owner.pool, req);
    if (refusal) return { kind: 'poolIncompatible', pool: owner.pool.name, refusal };
    if (addrs.length > 2) return { kind: 'tooManyAddresses', ips: ips.map(formatIP) };
    if (addrs.length === 2 && familyOf16(addrs[0]!) === familyOf16(addrs[1]!)) return { kind: 'sameFamily', ips: ips.map(formatIP) };
    return undefined;
  }

  /**
   * Allocates from the named pool (MetalLB's `AllocateFromPool`). A service already holding an
   * allocation gets it again (after a family check unless PreferDualStack).
   */
  allocateFromPool(req: AllocRequest, family: Family, poolName: string): AllocationResult {
    const existing = this.allocs.get(req.key);
    if (existing) {
      const held = familyOfIPs(existing.ips);
      if (held === 'unknown') throw new AllocationError({ kind: 'wrongFamilyAllocated', allocated: held, requested: family });
      if (policyOf(req) !== 'PreferDualStack' && held !== family) {
        throw new AllocationError({ kind: 'wrongFamilyAllocated', allocated: held, requested: family });
      }
      return this.assign(req, existing.ips);
    }
    const entry = this.pools.get(poolName);
    if (!entry) throw new AllocationError({ kind: 'unknownPool', pool: poolName });
    const cands = this.candidates(entry, req);
    if (cands.ipv4 === undefined && cands.ipv6 === undefined) {
      throw new AllocationError({ kind: 'noAvailableIPs', pool: poolName, refusal: this.noIPsRefusal(poolName) });
    }
    const attempts: PoolAttempt[] = [{ pool: poolName, phase: 'requested', outcome: 'chosen', candidates: candText(cands) }];
    const sel = selectIPs(cands, family, policyOf(req), poolName);
    if (!sel.ok) throw new AllocationError(sel.failure);
    const r = this.tryAssign(req, sel.value);
    if (!r.ok) throw new AllocationError(r.failure);
    return { ips: this.ipsOf(req.key), pool: r.value, attempts, tiedPools: [], tiedChoices: [] };
  }

  /**
   * PreferDualStack with one address: adds an address of the other family from `poolName`,
   * keeping `existing` first (MetalLB's `AllocateFromPoolForAdditionalFamily`). Returns the new
   * address (canonical).
   */
  allocateAdditionalFamily(req: AllocRequest, existing: IP, poolName: string): string {
    const additional: IPFamily = existing.family === 'ipv4' ? 'ipv6' : 'ipv4';
    const entry = this.pools.get(poolName);
    if (!entry) throw new AllocationError({ kind: 'unknownPool', pool: poolName });
    const cands = this.candidates(entry, req);
    if (cands.ipv4 === undefined && cands.ipv6 === undefined) {
      throw new AllocationError({ kind: 'noAvailableIPs', pool: poolName, refusal: this.noIPsRefusal(poolName) });
    }
    const sel = selectIPs(cands, additional, 'SingleStack', poolName);
    if (!sel.ok) {
      // MetalLB assigns [existing, nil]: poolFor finds no pool owning both.
      const f = sel.failure;
      if (f.kind === 'poolLacksFamily') throw new AllocationError({ ...f, ips: [formatIP(existing), NIL_IP] });
      throw new AllocationError(f);
    }
    const r = this.tryAssign(req, [to16(existing), sel.value[0]]);
    if (!r.ok) throw new AllocationError(r.failure);
    return formatIP(ipOf16(sel.value[0]));
  }

  /**
   * Allocates from any suitable pool (MetalLB's `Allocate`): the service's existing allocation if
   * it has one; else the pinned pools — MetalLB's `ByNamespace[namespace]` list then its
   * `ByServiceSelector` list (a pool in both appears twice), each filtered to autoAssign and
   * compatible pools, ordered by MetalLB's `sortPools` exactly as Go's `sort.Slice` moves them
   * (ties and negative priorities come out in the algorithm's order, see gosort.ts) — else the
   * generic pools (autoAssign, no serviceAllocation). On failure the reason lists every pool
   * considered and why it refused.
   *
   * Go map order: MetalLB builds `ByNamespace` and walks the generic pools by iterating a map, so
   * their order is random. metallb-ts takes name order and reports in `tiedPools`/`tiedChoices`
   * every other pool some map order would have chosen (each order is tried: all permutations of
   * the namespace pools through the sort, up to 7 of them; beyond, every usable pinned pool).
   * `ByServiceSelector` is sorted by name in MetalLB: no randomness there.
   */
  allocate(req: AllocRequest, family: Family): AllocationResult {
    const existing = this.allocs.get(req.key);
    if (existing) return this.assign(req, existing.ips);
    const attempts: PoolAttempt[] = [];
    const byNamespace: PoolEntry[] = [];
    const bySelector: PoolEntry[] = [];
    const generic: PoolEntry[] = [];
    for (const p of this.poolOrder) {
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
    const pinned = sortPools([...byNamespace, ...bySelector]);
    let cause: AllocationFailure | undefined;
    const tied = new Map<string, readonly string[]>();
    const phases: Array<['pinned' | 'generic', PoolEntry[], (choose: Chooser) => ReadonlySet<PoolEntry>]> = [
      ['pinned', pinned, (choose) => this.pinnedChoices(byNamespace, bySelector, choose)],
      ['generic', generic, (choose) => choose.anyOrder(generic)],
    ];
    for (const [phase, list, possible] of phases) {
      const r = this.allocateFromList(req, family, list, phase, attempts);
      // Every pool some Go map order would have chosen in this phase (the phase was reached in any case).
      if (r.chooser) {
        for (const entry of possible(r.chooser)) {
          if (entry === r.chosen || tied.has(entry.pool.name)) continue;
          tied.set(entry.pool.name, r.chooser.selection(entry));
        }
      }
      if (r.ok) {
        tied.delete(r.value.pool);
        const want = this.preferredPools.get(req.key);
        const other = want !== undefined ? tied.get(want) : undefined;
        if (other) {
          // Take the preferred tied pool's addresses instead (what that map order gives).
          const taken = r.value.ips;
          this.release(req.key);
          const a = this.assign(
            req,
            other.map((t) => parseIP(t)!),
          );
          tied.delete(want!);
          tied.set(r.value.pool, taken);
          const tiedChoices = [...tied].map(([pool, ips]) => ({ pool, ips }));
          return { ...a, pool: want!, attempts: sortAttempts(attempts), tiedPools: tiedChoices.map((t) => t.pool), tiedChoices };
        }
        const tiedChoices = [...tied].map(([pool, ips]) => ({ pool, ips }));
        return { ...r.value, attempts: sortAttempts(attempts), tiedPools: tiedChoices.map((t) => t.pool), tiedChoices };
      }
      if (r.failure) cause = r.failure;
    }
    throw new AllocationError({ kind: 'noPoolAvailable', family, attempts: sortAttempts(attempts), ...(cause ? { cause } : {}) });
  }

  // ---------------------------------------------------------------- internals

  /** The pools some order of the namespace list (Go map order) makes `choose` pick in the pinned phase. */
  private pinnedChoices(byNamespace: readonly PoolEntry[], bySelector: readonly PoolEntry[], choose: Chooser): ReadonlySet<PoolEntry> {
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
    for (const order of this.sortedOrders(prios, byNamespace.length)) {
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
  private sortedOrders(prios: readonly number[], k: number): readonly (readonly number[])[] {
    const sig = `${k}|${prios.join(',')}`;
    const hit = this.orderCache.get(sig);
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
    this.orderCache.set(sig, out);
    return out;
  }

  /**
   * MetalLB's `allocateFromPools` + `findBestPoolForService` over an ordered list: the first pool
   * with the addresses the family needs, else (PreferDualStack) the first with the primary family,
   * else the first with the secondary one. Also returns a Chooser that answers the same question
   * for any other order of these pools (for the Go map order analysis).
   */
  private allocateFromList(
    req: AllocRequest,
    family: Family,
    list: readonly PoolEntry[],
    phase: 'pinned' | 'generic',
    attempts: PoolAttempt[],
  ): ({ ok: true; value: AllocationResult } | { ok: false; failure?: AllocationFailure }) & { chooser?: Chooser; chosen?: PoolEntry } {
    const primary: IPFamily = req.ipFamilies?.[0] === 'IPv6' ? 'ipv6' : 'ipv4';
    const secondary: IPFamily = primary === 'ipv4' ? 'ipv6' : 'ipv4';
    const prefer = policyOf(req) === 'PreferDualStack' && family === 'dual';
    const direct = (c: Candidates): boolean => (family !== 'dual' && c[family] !== undefined) || (c.ipv4 !== undefined && c.ipv6 !== undefined);
    const candCache = new Map<PoolEntry, Candidates>();
    const candsOf = (e: PoolEntry): Candidates => {
      let c = candCache.get(e);
      if (!c) candCache.set(e, (c = this.candidates(e, req)));
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
    };

    // The walk itself, as MetalLB's loop: pools after the first direct one are not looked at.
    const walked = new Set<PoolEntry>();
    let chosen: PoolEntry | undefined;
    for (const entry of list) {
      if (walked.has(entry)) continue;
      walked.add(entry);
      const cands = candsOf(entry);
      const name = entry.pool.name;
      if (cands.ipv4 === undefined && cands.ipv6 === undefined) {
        attempts.push({ pool: name, phase, outcome: 'refused', refusal: this.noIPsRefusal(name) });
        continue;
      }
      if (tierOf(entry) === 0) {
        chosen = entry;
        break;
      }
      const available = (['ipv4', 'ipv6'] as const).filter((f) => cands[f] !== undefined);
      attempts.push({ pool: name, phase, outcome: 'refused', refusal: { reason: 'wrongFamily', needed: family, available }, candidates: candText(cands) });
    }
    chosen ??= first(list);
    if (!chosen) return { ok: false, chooser };
    const name = chosen.pool.name;
    const prevIdx = attempts.findIndex((a) => a.pool === name && a.phase === phase);
    const chosenAttempt: PoolAttempt = { pool: name, phase, outcome: 'chosen', candidates: candText(candsOf(chosen)) };
    if (prevIdx >= 0) attempts[prevIdx] = chosenAttempt;
    else attempts.push(chosenAttempt);
    const sel = selectIPs(candsOf(chosen), family, policyOf(req), name);
    if (!sel.ok) return { ok: false, failure: sel.failure, chooser, chosen };
    const r = this.tryAssign(req, sel.value);
    if (!r.ok) return { ok: false, failure: r.failure, chooser, chosen };
    return { ok: true, value: { ips: this.ipsOf(req.key), pool: r.value, attempts: [], tiedPools: [], tiedChoices: [] }, chooser, chosen };
  }

  private noIPsRefusal(pool: string): PoolRefusal {
    return { reason: 'noAvailableIPs', inUse: this.inUse.get(pool)?.size ?? 0 };
  }

  /** Whether pool `p` owns every address (avoidBuggyIPs excludes `.0`/`.255`). */
  private owns(p: PoolEntry, addrs: readonly bigint[]): boolean {
    for (const a of addrs) {
      if (p.pool.avoidBuggyIPs && isBuggy16(a)) return false;
      if (!p.blocks.some((b) => a >= b.lo && a <= b.hi)) return false;
    }
    return true;
  }

  /** MetalLB's `poolFor`: first owning pool (name order here, Go map order there). */
  private ownerOf(addrs: readonly bigint[]): PoolEntry | undefined {
    return this.poolOrder.find((p) => this.owns(p, addrs));
  }

  /** Assign with failure as a value; on success returns the pool name. */
  private tryAssign(req: AllocRequest, addrs: readonly bigint[]): Outcome<string> {
    const texts = (): string[] => addrs.map((a) => formatIP(ipOf16(a)));
    const owner = this.ownerOf(addrs);
    if (!owner) return { ok: false, failure: { kind: 'notAllowedInConfig', ips: texts() } };
    const refusal = poolCompatibility(owner.pool, req);
    if (refusal) return { ok: false, failure: { kind: 'poolIncompatible', pool: owner.pool.name, refusal } };
    if (addrs.length > 2) return { ok: false, failure: { kind: 'tooManyAddresses', ips: texts() } };
    if (addrs.length === 2 && familyOf16(addrs[0]) === familyOf16(addrs[1])) {
      return { ok: false, failure: { kind: 'sameFamily', ips: texts() } };
    }
    const keys: Keys = { sharing: req.sharingKey ?? '', backend: req.backendKey ?? '' };
    const ports = req.ports ?? [];
    for (const a of addrs) {
      const c = this.checkSharing(req.key, a, ports, keys);
      if (c) return { ok: false, failure: { kind: 'sharingConflict', sharing: c } };
    }
    this.record(req.key, {
      pool: owner.pool.name,
      ips: addrs.map(ipOf16),
      texts: texts(),
      addrs: [...addrs],
      ports: ports.map((p) => ({ protocol: p.protocol, port: p.port })),
      keys,
    });
    return { ok: true, value: owner.pool.name };
  }

  /** MetalLB's `checkSharing`: undefined when `key` may use `addr` with these ports and keys. */
  private checkSharing(key: string, addr: bigint, ports: readonly Port[], keys: Keys): SharingConflict | undefined {
    const st = this.addrs.get(addr);
    if (!st?.keys) return undefined;
    const existing = { sharingKey: st.keys.sharing, backendKey: st.keys.backend };
    const requested = { sharingKey: keys.sharing, backendKey: keys.backend };
    const problem = sharingProblem(st.keys, keys);
    if (problem) {
      const others = [...st.holders].filter((s) => s !== key).sort();
      if (others.length > 0) {
        return { ip: formatIP(ipOf16(addr)), requestedBy: key, conflict: 'keys', services: others, existing, requested, keyProblem: problem };
      }
    }
    for (const p of ports) {
      const cur = st.ports.get(portKey(p));
      if (cur !== undefined && cur !== key) {
        return { ip: formatIP(ipOf16(addr)), requestedBy: key, conflict: 'port', services: [cur], existing, requested, port: `${p.protocol}/${p.port}` };
      }
    }
    return undefined;
  }

  private setKeys(addr: bigint, st: AddrState, keys: Keys | null): void {
    const old = st.keys;
    if (old && keys && old.sharing === keys.sharing && old.backend === keys.backend) {
      st.keys = keys;
      return;
    }
    if (old && old.sharing !== '') {
      const id = keysId(old);
      const idx = this.shared.get(id);
      if (idx) {
        idx.delete(addr);
        if (idx.size === 0) this.shared.delete(id);
      }
    }
    st.keys = keys;
    if (keys) {
      this.occupied.add(addr);
      if (keys.sharing !== '') {
        const id = keysId(keys);
        let idx = this.shared.get(id);
        if (!idx) this.shared.set(id, (idx = new OrderedMap<true>()));
        idx.set(addr, true);
      }
    } else this.occupied.delete(addr);
  }

  /** MetalLB's internal `assign`: releases the previous allocation, records this one, notifies. */
  private record(key: string, alloc: Alloc): void {
    this.release(key);
    this.allocs.set(key, alloc);
    let counts = this.inUse.get(alloc.pool);
    if (!counts) this.inUse.set(alloc.pool, (counts = new Map()));
    for (const addr of alloc.addrs) {
      let st = this.addrs.get(addr);
      if (!st) this.addrs.set(addr, (st = { keys: null, ports: new Map(), holders: new Set() }));
      this.setKeys(addr, st, alloc.keys);
      for (const p of alloc.ports) st.ports.set(portKey(p), key);
      st.holders.add(key);
      counts.set(addr, (counts.get(addr) ?? 0) + 1);
    }
    this.notify(alloc.pool);
  }

  /** MetalLB's `Unassign`. */
  private release(key: string): void {
    const alloc = this.allocs.get(key);
    if (!alloc) return;
    this.allocs.delete(key);
    const counts = this.inUse.get(alloc.pool);
    for (const addr of alloc.addrs) {
      const st = this.addrs.get(addr);
      if (st) {
        for (const p of alloc.ports) {
          const pk = portKey(p);
          if (st.ports.get(pk) === key) st.ports.delete(pk);
        }
        st.holders.delete(key);
        if (st.ports.size === 0) this.setKeys(addr, st, null);
        if (!st.keys && st.holders.size === 0) this.addrs.delete(addr);
      }
      if (counts) {
        const n = (counts.get(addr) ?? 0) - 1;
        if (n <= 0) counts.delete(addr);
        else counts.set(addr, n);
      }
    }
    if (counts && counts.size === 0) this.inUse.delete(alloc.pool);
    if (this.pools.has(alloc.pool)) this.notify(alloc.pool);
  }

  /** The pool's candidates: per family, the first passing address of the first block that has one. */
  private candidates(entry: PoolEntry, req: AllocRequest): Candidates {
    const keys: Keys = { sharing: req.sharingKey ?? '', backend: req.backendKey ?? '' };
    const ports = req.ports ?? [];
    const out: Candidates = {};
    for (const b of entry.blocks) {
      if (out[b.family] !== undefined) continue;
      const a = this.firstPassing(b, entry.pool.avoidBuggyIPs, req.key, ports, keys);
      if (a !== undefined) out[b.family] = a;
    }
    return out;
  }

  /** First address of block `b` (ascending) not excluded by avoidBuggyIPs that passes the sharing check. */
  private firstPassing(b: Block, avoid: boolean, key: string, ports: readonly Port[], keys: Keys): bigint | undefined {
    let best = this.firstFree(b, avoid);
    if (keys.sharing !== '') {
      const idx = this.shared.get(keysId(keys));
      if (idx) {
        const limit = best === undefined ? b.hi : best - 1n;
        for (const e of idx.range(b.lo, limit)) {
          if (avoid && isBuggy16(e.key)) continue;
          if (!this.checkSharing(key, e.key, ports, keys)) {
            best = e.key;
            break;
          }
        }
      }
    }
    const own = this.allocs.get(key);
    if (own) {
      for (const a of own.addrs) {
        if (a < b.lo || a > b.hi || (best !== undefined && a >= best)) continue;
        if (avoid && isBuggy16(a)) continue;
        if (!this.checkSharing(key, a, ports, keys)) best = a;
      }
    }
    return best;
  }

  /** First address of `b` without recorded keys (and not `.0`/`.255` when avoiding buggy IPs). */
  private firstFree(b: Block, avoid: boolean): bigint | undefined {
    let x = b.lo;
    const v4 = b.family === 'ipv4';
    while (x <= b.hi) {
      if (avoid && v4) {
        const last = x & 255n;
        if (last === 255n) {
          x += 2n;
          continue;
        }
        if (last === 0n) {
          x += 1n;
          continue;
        }
      }
      const end = this.occupied.runEnd(x);
      if (end === undefined) return x;
      x = end + 1n;
    }
    return undefined;
  }
}

function candText(c: Candidates): { ipv4?: string; ipv6?: string } {
  const out: { ipv4?: string; ipv6?: string } = {};
  if (c.ipv4 !== undefined) out.ipv4 = formatIP(ipOf16(c.ipv4));
  if (c.ipv6 !== undefined) out.ipv6 = formatIP(ipOf16(c.ipv6));
  return out;
}

/** Attempts in phase order (pinned, then generic), keeping the order within a phase. */
function sortAttempts(a: PoolAttempt[]): PoolAttempt[] {
  const rank = { requested: 0, pinned: 1, generic: 2 } as const;
  return a
    .map((x, i) => [x, i] as const)
    .sort((p, q) => rank[p[0].phase] - rank[q[0].phase] || p[1] - q[1])
    .map((p) => p[0]);
}

/**
 * MetalLB's `selectIPsForFamilyAndPolicy`. For a single-family service it returns the pool's
 * address of that family even when there is none — Go's `[]net.IP{nil}` — and MetalLB's `Assign`
 * then fails with `["<nil>"] is not allowed in config`: that is the `poolLacksFamily` failure here.
 */
function selectIPs(c: Candidates, family: Family, policy: string, pool: string): Outcome<bigint[]> {
  const available = (['ipv4', 'ipv6'] as const).filter((f) => c[f] !== undefined);
  if (family === 'ipv4' || family === 'ipv6') {
    if (c[family] !== undefined) return { ok: true, value: [c[family]] };
    return { ok: false, failure: { kind: 'poolLacksFamily', pool, family, ips: [NIL_IP], available } };
  }
  if (policy === 'RequireDualStack' || policy === 'PreferDualStack') {
    if (c.ipv4 !== undefined && c.ipv6 !== undefined) return { ok: true, value: [c.ipv4, c.ipv6] };
    if (policy === 'PreferDualStack') {
      if (c.ipv4 !== undefined) return { ok: true, value: [c.ipv4] };
      if (c.ipv6 !== undefined) return { ok: true, value: [c.ipv6] };
    }
  }
  return { ok: false, failure: { kind: 'noIPsForFamily', pool, family, policy, available } };
}
