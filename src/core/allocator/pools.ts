/**
 * Pool bookkeeping (MetalLB's `SetPools`, `poolCount`, `poolFor`, `isPoolCompatibleWithService`):
 * a configured pool with its CIDR blocks as 128-bit key ranges and its capacity, which pool owns
 * a set of addresses, and whether a pool accepts a service. Pure functions of the configuration.
 */
import type { Pool } from '../config/types.ts';
import { type IPFamily, cidrLast } from '../ip.ts';
import { V4_MAPPED, isBuggy16, lastOctetConfusesBuggyFirmware } from './addr16.ts';
import type { AllocRequest, Capacity, PoolRefusal } from './types.ts';

/** math.MaxInt64: MetalLB's capacity for an IPv6 block of 2^62 addresses or more. */
export const MAX_INT64 = 9223372036854775807n;

/** One CIDR of a pool as an inclusive range of 128-bit keys. */
export interface Block {
  readonly family: IPFamily;
  readonly lo: bigint;
  readonly hi: bigint;
}

/** A configured pool with its blocks and capacity (computed once per `setPools`). */
export interface PoolEntry {
  readonly pool: Pool;
  readonly blocks: readonly Block[];
  readonly capacity: Capacity;
}

/** The entry of a configured pool: its CIDRs as key ranges, its capacity. */
export function poolEntryOf(pool: Pool): PoolEntry {
  const blocks = pool.cidrs.map((c) => {
    const lo = c.family === 'ipv4' ? V4_MAPPED | c.base : c.base;
    const hi = c.family === 'ipv4' ? V4_MAPPED | cidrLast(c) : cidrLast(c);
    return { family: c.family, lo, hi };
  });
  return { pool, blocks, capacity: poolCapacity(pool) };
}

/** Pool entries sorted by pool name (the deterministic stand-in for Go map order). */
export function byPoolName(entries: Iterable<PoolEntry>): PoolEntry[] {
  return [...entries].sort((a, b) => (a.pool.name < b.pool.name ? -1 : a.pool.name > b.pool.name ? 1 : 0));
}

/** Whether pool `p` owns every address (avoidBuggyIPs excludes `.0`/`.255`). */
export function owns(p: PoolEntry, addrs: readonly bigint[]): boolean {
  for (const a of addrs) {
    if (p.pool.avoidBuggyIPs && isBuggy16(a)) return false;
    if (!p.blocks.some((b) => a >= b.lo && a <= b.hi)) return false;
  }
  return true;
}

/** MetalLB's `poolFor`: first pool of `order` owning every address (Go map order there). */
export function ownerOf(order: readonly PoolEntry[], addrs: readonly bigint[]): PoolEntry | undefined {
  return order.find((p) => owns(p, addrs));
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
        if (lastOctetConfusesBuggyFirmware(c.base)) size--;
        if (lastOctetConfusesBuggyFirmware(last)) size--;
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
