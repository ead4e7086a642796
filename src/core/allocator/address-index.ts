/**
 * The allocator's state and the search for a free address (MetalLB's `allocated`, `sharingKeyForIP`,
 * `portsInUse`, `servicesOnIP`, `poolIPsInUse`, and `getIPFromCIDR`), indexed so that finding
 * "the first address of a range that passes the sharing check" never walks the range.
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
 */
import type { IP } from '../ip.ts';
import { isBuggy16, lastOctetConfusesBuggyFirmware } from './addr16.ts';
import { OrderedMap, IntervalSet } from './ordered.ts';
import type { Block, PoolEntry } from './pools.ts';
import { type AddrState, type Keys, keysId, keysOf, portKey, sharingConflict } from './sharing.ts';
import type { AllocRequest, Port, SharingConflict } from './types.ts';

/** One service's allocation. */
export interface Alloc {
  pool: string;
  readonly ips: readonly IP[];
  /** Canonical texts of `ips`. */
  readonly texts: readonly string[];
  readonly addrs: readonly bigint[];
  readonly ports: readonly Port[];
  readonly keys: Keys;
}

/** A pool's candidate address per family (128-bit keys). */
export interface Candidates {
  ipv4?: bigint;
  ipv6?: bigint;
}

/**
 * Allocations by service, what is recorded on each address, and per pool the addresses in use.
 * Knows nothing of the configuration beyond the pool names allocations are attributed to.
 */
export class AddressIndex {
  private readonly allocs = new Map<string, Alloc>();
  private readonly addrs = new Map<bigint, AddrState>();
  private occupied = new IntervalSet();
  private readonly shared = new Map<string, OrderedMap<true>>();
  /** pool -> address -> number of allocations (attributed to the pool) holding it. */
  private readonly inUse = new Map<string, Map<bigint, number>>();

  /** An independent copy: later changes to either leave the other alone. */
  clone(): AddressIndex {
    const c = new AddressIndex();
    for (const [k, a] of this.allocs) c.allocs.set(k, a);
    for (const [addr, st] of this.addrs) c.addrs.set(addr, { keys: st.keys, ports: new Map(st.ports), holders: new Set(st.holders) });
    c.occupied = this.occupied.clone();
    for (const [id, idx] of this.shared) c.shared.set(id, idx.clone());
    for (const [pool, counts] of this.inUse) c.inUse.set(pool, new Map(counts));
    return c;
  }

  /** The service's allocation, if any. */
  alloc(key: string): Alloc | undefined {
    return this.allocs.get(key);
  }

  /** Service keys holding an allocation, in insertion order. */
  services(): string[] {
    return [...this.allocs.keys()];
  }

  /** Whether a service other than `key` holds `addr` (128-bit key). */
  heldByOther(addr: bigint, key: string): boolean {
    const holders = this.addrs.get(addr)?.holders;
    return holders !== undefined && (holders.size > 1 || (holders.size === 1 && !holders.has(key)));
  }

  /** Addresses (128-bit keys) in use in the pool, each once. */
  inUseOf(pool: string): Iterable<bigint> {
    return this.inUse.get(pool)?.keys() ?? [];
  }

  /** How many distinct addresses of the pool are in use. */
  inUseCount(pool: string): number {
    return this.inUse.get(pool)?.size ?? 0;
  }

  /** MetalLB's `checkSharing`: undefined when `key` may use `addr` with these ports and keys. */
  checkSharing(key: string, addr: bigint, ports: readonly Port[], keys: Keys): SharingConflict | undefined {
    return sharingConflict(this.addrs.get(addr), key, addr, ports, keys);
  }

  /** Sets (null: drops) the keys recorded on `addr`, keeping `occupied` and `shared` in step. */
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

  /** Records the allocation of a service that holds none (the body of MetalLB's internal `assign`). */
  add(key: string, alloc: Alloc): void {
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
  }

  /** Drops the service's allocation (the body of MetalLB's `Unassign`); returns it, undefined when none. */
  remove(key: string): Alloc | undefined {
    const alloc = this.allocs.get(key);
    if (!alloc) return undefined;
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
    return alloc;
  }

  /** The pool's candidates: per family, the first passing address of the first block that has one. */
  candidates(entry: PoolEntry, req: AllocRequest): Candidates {
    const keys = keysOf(req);
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
      if (avoid && v4 && lastOctetConfusesBuggyFirmware(x)) {
        x += (x & 255n) === 255n ? 2n : 1n; // past .255 and the next .0, or past .0
        continue;
      }
      const end = this.occupied.runEnd(x);
      if (end === undefined) return x;
      x = end + 1n;
    }
    return undefined;
  }
}
