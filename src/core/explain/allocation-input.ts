/**
 * What the allocation diagnosis reads and returns (AllocationDiagnosisInput, AllocationFinding), and
 * the family and list wording its messages share.
 */
import type { Config } from '../config/types.ts';
import type { PoolOutcome, ServiceAllocationOutcome } from '../controller/index.ts';
import { serviceFamily } from '../controller/service.ts';
import type { KubeObject, Service } from '../kube.ts';
import type { FindingId, Severity } from './types.ts';

/** What diagnoseAllocation reads. */
export interface AllocationDiagnosisInput {
  readonly service: Service;
  /** `namespace/name`. */
  readonly key: string;
  /** The Service's entry of the controller's dry run. */
  readonly outcome: ServiceAllocationOutcome;
  /** The controller's configuration (its pools). */
  readonly config: Config;
  /** The dry run's pool figures (what is still free). */
  readonly pools: readonly PoolOutcome[];
  readonly metallbNamespace: string;
  /** metallb.io objects outside MetalLB's namespace (an IPAddressPool there is never read). */
  readonly ignoredObjects: readonly KubeObject[];
  /** Every Service of the snapshot (who holds the addresses of an exhausted pool, to share one). */
  readonly services?: readonly Service[];
}

/** One finding about the allocation (the shape of types.ts's Finding). */
export interface AllocationFinding {
  readonly id: FindingId;
  readonly severity: Severity;
  readonly message: string;
  readonly fix: string;
}

export type Fam = 'ipv4' | 'ipv6';

export function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** `IPv4` / `IPv6` / `dual-stack`. */
export function familyName(f: string): string {
  return f === 'ipv4' ? 'IPv4' : f === 'ipv6' ? 'IPv6' : f === 'dual' ? 'dual-stack' : f;
}

export function other(f: Fam): Fam {
  return f === 'ipv4' ? 'ipv6' : 'ipv4';
}

/** Names joined with commas; past `max`, the first ones and a count. */
export function list(names: readonly string[], max = 5): string {
  return names.length <= max ? names.join(', ') : `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}

/**
 * Where the Service's address families come from, in words: MetalLB takes the family from
 * spec.clusterIPs (spec.clusterIP when empty), which the API server assigned from spec.ipFamilies
 * and spec.ipFamilyPolicy.
 */
export function serviceFamiliesText(svc: Service): string {
  const fam = serviceFamily(svc);
  const spec = svc.spec ?? {};
  const ips = spec.clusterIPs ?? [];
  const where = ips.length > 0 ? `spec.clusterIPs [${ips.join(', ')}]` : `spec.clusterIP ${spec.clusterIP ?? '(unset)'}`;
  const families = spec.ipFamilies && spec.ipFamilies.length > 0 ? `spec.ipFamilies [${spec.ipFamilies.join(', ')}]` : "spec.ipFamilies unset (the cluster's default family)";
  const policy = spec.ipFamilyPolicy ? `spec.ipFamilyPolicy ${spec.ipFamilyPolicy}` : 'spec.ipFamilyPolicy unset (SingleStack)';
  const what = fam === 'unknown' ? 'of no family MetalLB can tell' : familyName(fam);
  return `the Service is ${what}: MetalLB takes its family from ${where}, which the API server set from ${families} and ${policy}`;
}
