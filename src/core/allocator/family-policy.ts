/**
 * Address selection by IP family and family policy (MetalLB's `ipfamily.ForAddresses`,
 * `ipPolicyForService`, `selectIPsForFamilyAndPolicy`): which of a pool's candidate addresses a
 * service gets.
 */
import { type IP, formatIP } from '../ip.ts';
import { ipOf16 } from './addr16.ts';
import type { Candidates } from './address-index.ts';
import type { AllocRequest, AllocationFailure, Family } from './types.ts';

/** How Go prints a nil net.IP (`%q` of `[]net.IP{nil}` is `["<nil>"]`). */
export const NIL_IP = '<nil>';

/** A result or the failure, as a value. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; failure: AllocationFailure };

/**
 * Family of a list of addresses (MetalLB's `ipfamily.ForAddresses`): one address -> its family,
 * two of different families -> `dual`, anything else -> `unknown`.
 */
export function familyOfIPs(ips: readonly IP[]): Family | 'unknown' {
  if (ips.length === 1) return ips[0].family;
  if (ips.length === 2 && ips[0].family !== ips[1].family) return 'dual';
  return 'unknown';
}

/** The service's IP family policy, `SingleStack` when unset (MetalLB's `ipPolicyForService`). */
export function policyOf(req: AllocRequest): string {
  return req.ipFamilyPolicy || 'SingleStack';
}

/** Candidates as canonical address texts, per family. */
export function candText(c: Candidates): { ipv4?: string; ipv6?: string } {
  const out: { ipv4?: string; ipv6?: string } = {};
  if (c.ipv4 !== undefined) out.ipv4 = formatIP(ipOf16(c.ipv4));
  if (c.ipv6 !== undefined) out.ipv6 = formatIP(ipOf16(c.ipv6));
  return out;
}

/**
 * MetalLB's `selectIPsForFamilyAndPolicy`. For a single-family service it returns the pool's
 * address of that family even when there is none — Go's `[]net.IP{nil}` — and MetalLB's `Assign`
 * then fails with `["<nil>"] is not allowed in config`: that is the `poolLacksFamily` failure here.
 */
export function selectIPs(c: Candidates, family: Family, policy: string, pool: string): Outcome<bigint[]> {
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
