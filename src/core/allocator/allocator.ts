/**
 * The IP allocator: MetalLB v0.16.1's `internal/allocator` semantics (see the conformance cases
 * test/conformance/allocator.ts runs). The Allocator holds the configured pools and the
 * notifications and runs MetalLB's operations (`SetPools`, `Assign`, `Unassign`, `Allocate`,
 * `AllocateFromPool`, ...); the concerns it delegates live beside it:
 * - pools.ts: pool bookkeeping (blocks, capacity, ownership, compatibility with a service);
 * - address-index.ts: allocations, per-address sharing state, per-pool counts, and the indexed
 *   search for the first free (or shareable) address of a range;
 * - sharing.ts: sharing-key and port compatibility (`sharingOK`, `checkSharing`);
 * - pool-choice.ts: pinned/generic pool lists, `sortPools`, the pool MetalLB's loop picks and
 *   the pools some Go map order would pick instead;
 * - family-policy.ts: address selection by IP family and family policy.
 *
 * Where MetalLB walks a Go map (the pool owning an address, its per-namespace pool lists, the
 * generic pools) this allocator uses pool-name order, and reports the other pools some map order
 * would have chosen in `AllocationResult.tiedPools`. The pinned pools are ordered by MetalLB's
 * `sortPools` exactly as Go's sort.Slice moves them (gosort.ts), which is deterministic.
 */
import type { Pool } from '../config/types.ts';
import { type IP, type IPFamily, formatIP, parseIP, to16 } from '../ip.ts';
import { familyOf16, ipOf16 } from './addr16.ts';
import { type Alloc, AddressIndex } from './address-index.ts';
import { AllocationError } from './errors.ts';
import { NIL_IP, type Outcome, candText, familyOfIPs, policyOf, selectIPs } from './family-policy.ts';
import { type Chooser, chooserFor, pinnedChoices, poolListsFor, sortAttempts, sortPools } from './pool-choice.ts';
import { type PoolEntry, byPoolName, ownerOf, owns, poolCompatibility, poolEntryOf } from './pools.ts';
import { keysOf } from './sharing.ts';
import type { AllocRequest, AllocationFailure, AllocationResult, Capacity, Family, PoolAttempt, PoolCounters, PoolRefusal } from './types.ts';

export { NIL_IP, familyOfIPs } from './family-policy.ts';
export { MAX_INT64, poolCapacity, poolCompatibility } from './pools.ts';

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
  /** Allocations, per-address sharing state, per-pool counts; the free-address search. */
  private index = new AddressIndex();
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
    c.index = this.index.clone();
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
    for (const pool of pools) next.set(pool.name, poolEntryOf(pool));
    const removed = [...this.pools.keys()].filter((n) => !next.has(n));
    this.pools = next;
    this.orderCache.clear();
    this.poolOrder = byPoolName(next.values());
    for (const key of this.index.services().sort()) {
      const alloc = this.index.alloc(key)!;
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
    return this.index.alloc(key)?.pool ?? null;
  }

  /** Addresses held by the service, in recorded order (canonical strings); [] when none. */
  ipsOf(key: string): string[] {
    return [...(this.index.alloc(key)?.texts ?? [])];
  }

  /** Whether a service other than `key` holds `ip` (alone, or shared with `key`). */
  heldByOther(ip: IP, key: string): boolean {
    return this.index.heldByOther(to16(ip), key);
  }

  /** MetalLB's `AllocationKey`: backendKey + sharingKey of the allocation, "" when none. */
  allocationKey(key: string): string {
    const a = this.index.alloc(key);
    return a ? a.keys.backend + a.keys.sharing : '';
  }

  /** Name of the configured pool owning all of `ips` (MetalLB's `PoolForIP`), or null. */
  poolForIPs(ips: readonly IP[]): string | null {
    return this.ownerOf(ips.map(to16))?.pool.name ?? null;
  }

  /** Every configured pool owning all of `ips` (several only with overlapping pools). */
  poolsForIPs(ips: readonly IP[]): string[] {
    const addrs = ips.map(to16);
    return this.poolOrder.filter((p) => owns(p, addrs)).map((p) => p.pool.name);
  }

  /** Whether two configured pools share an address (MetalLB's webhook refuses that; a dry run may still see it). */
  poolsOverlap(): boolean {
    const blocks = this.poolOrder.flatMap((p) => p.blocks.map((b) => ({ ...b, pool: p.pool.name })));
    return blocks.some((a, i) => blocks.some((b, j) => j > i && a.pool !== b.pool && a.lo <= b.hi && b.lo <= a.hi));
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
    for (const addr of this.index.inUseOf(pool)) {
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
    return this.index.services().sort();
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
    const existing = this.index.alloc(req.key);
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
    const cands = this.index.candidates(entry, req);
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
    const cands = this.index.candidates(entry, req);
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
    const existing = this.index.alloc(req.key);
    if (existing) return this.assign(req, existing.ips);
    const attempts: PoolAttempt[] = [];
    const { byNamespace, bySelector, generic } = poolListsFor(this.poolOrder, req, attempts);
    const pinned = sortPools([...byNamespace, ...bySelector]);
    let cause: AllocationFailure | undefined;
    const tied = new Map<string, readonly string[]>();
    const phases: Array<['pinned' | 'generic', PoolEntry[], (choose: Chooser) => ReadonlySet<PoolEntry>]> = [
      ['pinned', pinned, (choose) => pinnedChoices(byNamespace, bySelector, choose, this.orderCache)],
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
    const chooser = chooserFor(req, family, (e) => this.index.candidates(e, req));
    const { tierOf, first, candidatesOf: candsOf } = chooser;

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
    return { reason: 'noAvailableIPs', inUse: this.index.inUseCount(pool) };
  }

  /** MetalLB's `poolFor`: first owning pool (name order here, Go map order there). */
  private ownerOf(addrs: readonly bigint[]): PoolEntry | undefined {
    return ownerOf(this.poolOrder, addrs);
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
    const keys = keysOf(req);
    const ports = req.ports ?? [];
    for (const a of addrs) {
      const c = this.index.checkSharing(req.key, a, ports, keys);
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

  /** MetalLB's internal `assign`: releases the previous allocation, records this one, notifies. */
  private record(key: string, alloc: Alloc): void {
    this.release(key);
    this.index.add(key, alloc);
    this.notify(alloc.pool);
  }

  /** MetalLB's `Unassign`: drops the allocation, notifies its pool when still configured. */
  private release(key: string): void {
    const alloc = this.index.remove(key);
    if (!alloc) return;
    if (this.pools.has(alloc.pool)) this.notify(alloc.pool);
  }
}
