/**
 * The hints of the allocation findings: pools with room for a family, who holds the addresses
 * of an exhausted pool (and the sharing key that would let a Service share one), how to make a
 * pool accept a Service.
 */
import { poolCompatibility, type PoolRefusal } from '../allocator/index.ts';
import type { Config, Pool } from '../config/types.ts';
import type { PoolOutcome } from '../controller/index.ts';
import { allocRequest, backendKey, requestedPool, serviceFamily, serviceKey, servicePorts, sharingKey, statusIPs } from '../controller/service.ts';
import { cidrContains, parseIP } from '../ip.ts';
import type { Service } from '../kube.ts';
import { type AllocationDiagnosisInput, type Fam, familyName, list } from './allocation-input.ts';

/** The families a pool has addresses of. */
export function poolFamilies(pool: Pool | undefined): Fam[] {
  if (!pool) return [];
  const out = new Set<Fam>();
  for (const c of pool.cidrs) out.add(c.family);
  return (['ipv4', 'ipv6'] as const).filter((f) => out.has(f));
}

function freeOf(p: PoolOutcome | undefined, f: Fam): boolean {
  if (!p) return false;
  const n = f === 'ipv4' ? p.availableIPv4 : p.availableIPv6;
  return typeof n === 'string' ? n !== '0' : n > 0;
}

/**
 * Pools this Service may take an address of `family` from (other than `except`): they have
 * addresses of that family still free after the dry run and their serviceAllocation accepts the
 * Service. `requestable`: also those with autoAssign false (a metallb.io/address-pool request
 * reaches them).
 */
export function poolsWithRoom(d: AllocationDiagnosisInput, family: Fam, except: readonly string[], requestable: boolean): string[] {
  const req = allocRequest(d.key, d.service);
  const figures = new Map(d.pools.map((p) => [p.name, p]));
  const out: string[] = [];
  for (const pool of d.config.pools.values()) {
    if (except.includes(pool.name)) continue;
    if (!requestable && !pool.autoAssign) continue;
    if (!poolFamilies(pool).includes(family) || !freeOf(figures.get(pool.name), family)) continue;
    if (poolCompatibility(pool, req)) continue;
    out.push(pool.name);
  }
  return out.sort();
}

/** ` (pools with free IPv4 addresses this Service may use: a, b)` (or nothing). */
export function roomHint(d: AllocationDiagnosisInput, family: Fam, except: readonly string[], requestable: boolean): string {
  const names = poolsWithRoom(d, family, except, requestable);
  return names.length > 0 ? ` (pools with free ${familyName(family)} addresses this Service may use: ${list(names)})` : '';
}

/** `a`, `a or b`, `a, b, or c` (at most `max` items, then how many more). */
export function orJoin(xs: readonly string[], max = 4): string {
  const shown = xs.slice(0, max);
  const more = xs.length > max ? ` (and ${xs.length - max} more, one per pool tried)` : '';
  if (shown.length <= 1) return (shown[0] ?? '') + more;
  if (shown.length === 2) return `${shown[0]}, or ${shown[1]}${more}`;
  return `${shown.slice(0, -1).join(', ')}, or ${shown[shown.length - 1]}${more}`;
}

/** `all 4 addresses in use` / `3 of 4 addresses in use (the others cannot be shared with it)`. */
export function inUseText(d: AllocationDiagnosisInput, pool: string, inUse: number): string {
  const size = d.pools.find((p) => p.name === pool)?.size;
  if (size === undefined) return `${inUse} address${inUse === 1 ? '' : 'es'} in use`;
  return String(size) === String(inUse)
    ? `all ${size} address${inUse === 1 ? '' : 'es'} in use`
    : `${inUse} of ${size} addresses in use; the others are excluded (avoidBuggyIPs) or cannot be shared with this Service`;
}

/** Status addresses of `pools` with their holders, per Service list and pools (explaining many Services of one snapshot). */
const HOLDERS = new WeakMap<readonly Service[], WeakMap<Config, Map<string, Map<string, Service[]>>>>();

function holdersIn(d: AllocationDiagnosisInput, pools: readonly string[]): Map<string, Service[]> {
  const services = d.services ?? [];
  let byConfig = HOLDERS.get(services);
  if (!byConfig) HOLDERS.set(services, (byConfig = new WeakMap()));
  let byPools = byConfig.get(d.config);
  if (!byPools) byConfig.set(d.config, (byPools = new Map()));
  const key = pools.join('\u0000');
  let out = byPools.get(key);
  if (out) return out;
  out = new Map();
  const cidrs = pools.flatMap((name) => d.config.pools.get(name)?.cidrs ?? []);
  for (const svc of services) {
    for (const ip of statusIPs(svc)) {
      const p = parseIP(ip);
      if (!p || !cidrs.some((c) => cidrContains(c, p))) continue;
      out.set(ip, [...(out.get(ip) ?? []), svc]);
    }
  }
  byPools.set(key, out);
  return out;
}

/**
 * An address of `pools` this Service could share (MetalLB's sharing rules: the same non-empty
 * metallb.io/allow-shared-ip on every holder and on the Service, the same backend key — the
 * selector, with externalTrafficPolicy Local — and no port/protocol in common), in words: which
 * address, with which Services, and the key to set. Holders already sharing a key come first;
 * else holders without a key (both sides would need the annotation). Null when none fits.
 */
export function shareHint(d: AllocationDiagnosisInput, pools: readonly string[]): string | null {
  if (!d.services || pools.length === 0) return null;
  const me = serviceKey(d.service);
  const fam = wanted(d.service);
  if (fam.length !== 1) return null;
  const byIP = new Map<string, Service[]>();
  for (const [ip, holders] of holdersIn(d, pools)) {
    const others = holders.filter((h) => serviceKey(h) !== me);
    if (others.length > 0 && parseIP(ip)?.family === fam[0]) byIP.set(ip, others);
  }
  const myPorts = servicePorts(d.service);
  const myBackend = backendKey(d.service);
  const portFree = (holders: readonly Service[]): boolean => holders.every((h) => servicePorts(h).every((p) => !myPorts.some((q) => q.port === p.port && q.protocol === p.protocol)));
  let keyless: string | null = null;
  for (const [ip, holders] of byIP) {
    const keys = new Set(holders.map(sharingKey));
    const backends = new Set(holders.map(backendKey));
    if (keys.size !== 1 || backends.size !== 1 || [...backends][0] !== myBackend || !portFree(holders)) continue;
    const key = [...keys][0]!;
    const names = list(holders.map(serviceKey), 3);
    if (key !== '') {
      return `share ${ip} with ${names}: set metallb.io/allow-shared-ip: "${key}" on this Service (the key ${holders.length === 1 ? 'it has' : 'they have'}; no port in common)`;
    }
    keyless ??= `share ${ip} with ${names}: give ${holders.length === 1 ? 'it' : 'them'} and this Service the same metallb.io/allow-shared-ip value (no port in common)`;
  }
  return keyless;
}

/** What to change so that pool `pool` accepts the Service, by the restriction that excludes it. */
export function acceptFix(pool: string, r: PoolRefusal, svc: Service): string {
  const ns = svc.metadata?.namespace ?? 'default';
  switch (r.reason) {
    case 'namespaceNotAllowed':
      return `add namespace ${ns} to spec.serviceAllocation.namespaces of pool ${pool} (or a namespaceSelector matching it)`;
    case 'serviceSelectorMismatch':
      return `give the Service labels that a serviceSelector of pool ${pool} matches (${r.selectors.join('; ')})`;
    case 'reservedByServiceAllocation':
      return `make spec.serviceAllocation of pool ${pool} select this Service (namespaces, namespaceSelectors or serviceSelectors)`;
    case 'autoAssignDisabled':
      return `request pool ${pool} explicitly with the annotation metallb.io/address-pool: ${pool} (it has autoAssign: false)`;
    case 'noAvailableIPs':
      return `add addresses to pool ${pool}`;
    case 'wrongFamily': {
      const missing = r.needed === 'dual' ? (['ipv4', 'ipv6'] as const).filter((f) => !r.available.includes(f)) : [r.needed];
      return `add ${missing.map((f) => `an ${familyName(f)}`).join(' and ')} range to pool ${pool}`;
    }
    case 'unknownPool':
      return `create pool ${pool}`;
  }
}

/** ` (requested with metallb.io/address-pool)` when the Service requests `pool`. */
export function requestedText(svc: Service, pool: string): string {
  return requestedPool(svc) === pool ? ' (requested with metallb.io/address-pool)' : '';
}

export function wanted(svc: Service): Fam[] {
  const f = serviceFamily(svc);
  return f === 'ipv4' || f === 'ipv6' ? [f] : f === 'dual' ? ['ipv4', 'ipv6'] : [];
}
