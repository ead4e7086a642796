/**
 * IPAddressPool parsing: one pool's own rules (MetalLB v0.16.1 `addressPoolFromCR`,
 * `ParseCIDR`, `addressPoolServiceAllocationsFromCR`) and the overlap test between blocks
 * (`cidrsOverlap`).
 */
import { ConfigError, quote } from '../errors.ts';
import { formatCIDR, parseCIDR, parseCIDRLiteral, parseIP, rangeToCIDRs, to16, prefixMask } from '../ip.ts';
import type { IPAddressPool, Namespace } from '../kube.ts';
import { objectRef } from '../kube.ts';
import { checkDuplicateStrings, parseSelectorList, everything } from '../labels.ts';
import type { Pool, PoolBlock, PoolRange, ServiceAllocation, Selector } from './types.ts';

/** Go's `strings.TrimSpace` (Unicode white space). */
function trimSpace(s: string): string {
  return s.replace(/^[\s\u0085]+|[\s\u0085]+$/gu, '');
}

/**
 * Parses one `spec.addresses` entry as MetalLB's `ParseCIDR` does.
 *
 * - Without `-`: a CIDR exactly as written (`addr/len`, no trimming; host bits cleared). An
 *   IPv4-mapped IPv6 CIDR of length >= 96 yields the IPv4 block of length n - 96 with
 *   `maskBits` n and `mapped: true`.
 * - With `-`: split at the first `-`, both sides trimmed and parsed as plain IPs; the minimal
 *   ascending list of blocks covering the range. Ends of different families yield no block.
 *
 * @returns the blocks, in order.
 * @throws Error (plain, the caller adds the object) when the entry is invalid or the range is
 *   reversed (compared as 16-byte IPv6 addresses).
 */
export function parseAddressEntry(entry: string): PoolBlock[] {
  if (typeof entry !== 'string') throw new Error(`invalid CIDR ${quote(entry)}`);
  if (!entry.includes('-')) {
    const lit = parseCIDRLiteral(entry);
    const cidr = parseCIDR(entry);
    if (!lit || !cidr) {
      throw new Error(`invalid CIDR "${entry}": expected <address>/<prefix length> (e.g. 192.168.10.0/24) or a range <first>-<last>`);
    }
    const mapped = lit.family === 'ipv6' && cidr.family === 'ipv4';
    return [{ cidr, maskBits: lit.prefix, mapped }];
  }
  const dash = entry.indexOf('-');
  const startText = entry.slice(0, dash);
  const endText = entry.slice(dash + 1);
  const start = parseIP(trimSpace(startText));
  if (!start) throw new Error(`invalid IP range "${entry}": invalid start IP "${startText}"`);
  const end = parseIP(trimSpace(endText));
  if (!end) throw new Error(`invalid IP range "${entry}": invalid end IP "${endText}"`);
  if (to16(start) > to16(end)) {
    throw new Error(`invalid IP range "${entry}": start IP "${trimSpace(startText)}" is after the end IP "${trimSpace(endText)}"`);
  }
  return rangeToCIDRs(start, end).map((cidr) => ({ cidr, maskBits: cidr.prefix, mapped: false }));
}

/** The 16-byte (128-bit) network address Go compares with `IP.Equal`. */
function net128(b: PoolBlock): bigint {
  return b.cidr.family === 'ipv4' ? to16({ family: 'ipv4', value: b.cidr.base }) : b.cidr.base;
}

/** Go's `outer.Contains(inner.IP)` with the byte-length rules of `net.IPNet`. */
function containsNetworkOf(outer: PoolBlock, inner: PoolBlock): boolean {
  const innerIsV4 = inner.cidr.family === 'ipv4'; // To4() != nil (plain IPv4 or mapped)
  const outerIs4Bytes = outer.cidr.family === 'ipv4' && !outer.mapped;
  if (innerIsV4 !== outerIs4Bytes) return false;
  if (outerIs4Bytes) return (inner.cidr.base & prefixMask(outer.maskBits, 32)) === outer.cidr.base;
  return (inner.cidr.base & prefixMask(outer.maskBits, 128)) === net128(outer);
}

function containsBlock(outer: PoolBlock, inner: PoolBlock): boolean {
  if (outer.maskBits === inner.maskBits && net128(outer) === net128(inner)) return true;
  return outer.maskBits < inner.maskBits && containsNetworkOf(outer, inner);
}

/**
 * MetalLB's `cidrsOverlap`: same mask length and network address, or the block with the shorter
 * mask contains the other's network address (Go `net.IPNet` byte-length semantics, so an
 * IPv4-mapped block only meets an IPv4 block that contains its network address).
 */
export function blocksOverlap(a: PoolBlock, b: PoolBlock): boolean {
  return containsBlock(a, b) || containsBlock(b, a);
}

/** `block` as MetalLB prints it in messages (`10.0.0.0/24`; a mapped block as Go prints it). */
export function formatBlock(b: PoolBlock): string {
  return formatCIDR(b.cidr);
}

function parseServiceAllocation(cr: IPAddressPool, namespaces: readonly Namespace[]): ServiceAllocation | undefined {
  const sa = cr.spec?.serviceAllocation;
  if (sa === undefined || sa === null) return undefined;
  checkDuplicateStrings(sa.namespaces, 'namespaces');
  const nsSet = new Set<string>(sa.namespaces ?? []);
  const priority = sa.priority ?? 0;
  const nsSels = sa.namespaceSelectors ?? [];
  const svcSels = sa.serviceSelectors ?? [];
  if (nsSet.size === 0 && nsSels.length === 0 && svcSels.length === 0) {
    return { priority, namespaces: nsSet, serviceSelectors: [everything()] };
  }
  const parsedNs = parseSelectorList(nsSels, 'namespaceSelectors');
  const parsedSvc: Selector[] = parseSelectorList(svcSels, 'serviceSelectors');
  for (const sel of parsedNs) {
    for (const ns of namespaces) {
      const name = ns.metadata?.name;
      if (name !== undefined && sel.matches(ns.metadata?.labels)) nsSet.add(name);
    }
  }
  return { priority, namespaces: nsSet, serviceSelectors: parsedSvc };
}

/**
 * Parses ONE IPAddressPool by its own rules (MetalLB `addressPoolFromCR`): a name is required,
 * `spec.addresses` must be non-empty and every entry valid (see parseAddressEntry), and a
 * present `spec.serviceAllocation` must have no repeated namespace and (unless namespaces,
 * namespaceSelectors and serviceSelectors are all empty) no duplicate or invalid selectors.
 * Does NOT check name uniqueness or overlaps with other pools (parseConfig does).
 *
 * `namespaces` are the cluster's Namespace objects, matched against `namespaceSelectors`.
 * The result has no advertisements attached (empty lists).
 *
 * @throws ConfigError naming the object (`metallb-system/IPAddressPool/public: ...`).
 */
export function parsePool(cr: IPAddressPool, namespaces: readonly Namespace[]): Pool {
  const ref = objectRef(cr);
  const name = cr.metadata?.name;
  if (!name) throw new ConfigError('missing pool name: metadata.name is empty', ref);
  const addresses = cr.spec?.addresses ?? [];
  if (addresses.length === 0) throw new ConfigError('pool has no prefixes defined: spec.addresses is empty', ref);
  const ranges: PoolRange[] = [];
  for (const [i, entry] of addresses.entries()) {
    let blocks: PoolBlock[];
    try {
      blocks = parseAddressEntry(entry);
    } catch (err) {
      throw new ConfigError(`spec.addresses[${i}]: ${(err as Error).message}`, ref);
    }
    ranges.push({ entry, cidrs: blocks.map((b) => b.cidr), blocks });
  }
  let serviceAllocation: ServiceAllocation | undefined;
  try {
    serviceAllocation = parseServiceAllocation(cr, namespaces);
  } catch (err) {
    throw new ConfigError(`serviceAllocation: ${(err as Error).message}`, ref);
  }
  return {
    name,
    ranges,
    cidrs: ranges.flatMap((r) => r.cidrs),
    autoAssign: cr.spec?.autoAssign ?? true,
    avoidBuggyIPs: cr.spec?.avoidBuggyIPs ?? false,
    ...(serviceAllocation ? { serviceAllocation } : {}),
    l2Advertisements: [],
    bgpAdvertisements: [],
    labels: cr.metadata?.labels ?? {},
    source: cr,
  };
}
