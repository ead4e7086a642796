/**
 * The service-level checks both speaker protocols make before anything node-specific (MetalLB
 * v0.16.1 `speaker/main.go` SetBalancer): the Service is of type LoadBalancer, has ingress IPs, each
 * ingress entry holds a valid IP, and one IPAddressPool contains all of them (`poolFor`).
 */
import type { Config, Pool } from '../config/types.ts';
import { cidrContains, formatIP, parseIP, type IP } from '../ip.ts';
import type { Service } from '../kube.ts';
import type { ServiceCheck, ServiceCheckName, ServiceReason } from './types.ts';

/** Outcome of the service-level checks. `pool` and the IPs are set when every check passed. */
export interface ServiceChecks {
  readonly checks: ServiceCheck[];
  /** The reason every node gets when a check failed, else null. */
  readonly reason: ServiceReason | null;
  /** Canonical ingress IPs (empty unless the `ips` check passed). */
  readonly ips: string[];
  readonly parsedIPs: IP[];
  readonly pool: Pool | null;
}

/** The first pool (config order) whose blocks contain every IP, or null (MetalLB `poolFor`). */
export function poolForIPs(config: Config, ips: readonly IP[]): Pool | null {
  if (ips.length === 0) return null;
  for (const pool of config.pools.values()) {
    if (ips.every((ip) => pool.cidrs.some((c) => cidrContains(c, ip)))) return pool;
  }
  return null;
}

/**
 * Runs steps 1–4 of the decision: `notLoadBalancer` when `spec.type` is not LoadBalancer,
 * `noIPAllocated` when `status.loadBalancer.ingress` is empty, `invalidIP` when an entry's `ip`
 * does not parse (Go `net.ParseIP`; a hostname-only entry counts as invalid), `ipNotAllowed` when no
 * single pool contains every IP. Pure; never throws.
 */
export function checkService(config: Config, service: Service): ServiceChecks {
  const checks: ServiceCheck[] = [];
  const fail = (check: ServiceCheckName, reason: ServiceReason, detail: string): ServiceChecks => {
    checks.push({ check, ok: false, detail });
    return { checks, reason, ips: [], parsedIPs: [], pool: null };
  };
  const type = service.spec?.type;
  if (type !== 'LoadBalancer') {
    return fail('type', 'notLoadBalancer', `spec.type is ${type ? `"${type}"` : 'unset'}, not LoadBalancer`);
  }
  checks.push({ check: 'type', ok: true, detail: 'spec.type is LoadBalancer' });
  const ingress = service.status?.loadBalancer?.ingress ?? [];
  if (ingress.length === 0) return fail('ingress', 'noIPAllocated', 'status.loadBalancer.ingress is empty: no IP allocated yet');
  const parsedIPs: IP[] = [];
  for (let i = 0; i < ingress.length; i++) {
    const raw = ingress[i]?.ip;
    const ip = typeof raw === 'string' ? parseIP(raw) : undefined;
    if (!ip) {
      return fail('ips', 'invalidIP', `status.loadBalancer.ingress[${i}].ip ${raw === undefined ? 'is missing' : `"${String(raw)}" is not an IP address`}`);
    }
    parsedIPs.push(ip);
  }
  const ips = parsedIPs.map(formatIP);
  checks.push({ check: 'ips', ok: true, detail: `ingress IPs ${ips.join(', ')}` });
  const pool = poolForIPs(config, parsedIPs);
  if (!pool) {
    return fail('pool', 'ipNotAllowed', `no IPAddressPool contains ${ips.length > 1 ? 'all of ' : ''}${ips.join(', ')}`);
  }
  checks.push({ check: 'pool', ok: true, detail: `IPAddressPool "${pool.name}" contains ${ips.join(', ')}` });
  return { checks, reason: null, ips, parsedIPs, pool };
}
