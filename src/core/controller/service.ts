/**
 * The Service fields MetalLB's controller reads (controller/service.go, k8salloc, ipfamily), as
 * pure functions: requested addresses, requested pool, sharing key, backend key, ports, families
 * and policy, and the allocator request built from them.
 */
import type { Service } from '../kube.ts';
import { formatIP, parseIP, type IP } from '../ip.ts';
import { familyOfIPs, type AllocRequest, type Family, type Port } from '../allocator/index.ts';

/** `metallb.io/address-pool`: the pool the service asks for. */
export const ANNOTATION_ADDRESS_POOL = 'metallb.io/address-pool';
/** `metallb.io/loadBalancerIPs`: comma-separated addresses the service asks for. */
export const ANNOTATION_LOAD_BALANCER_IPS = 'metallb.io/loadBalancerIPs';
/** `metallb.io/ip-allocated-from-pool`: written by the controller, the pool of the allocation. */
export const ANNOTATION_IP_ALLOCATED_FROM_POOL = 'metallb.io/ip-allocated-from-pool';
/** `metallb.io/allow-shared-ip`: the sharing key. */
export const ANNOTATION_ALLOW_SHARED_IP = 'metallb.io/allow-shared-ip';
/** Prefix of the deprecated annotations (still read, with a warning event). */
export const DEPRECATED_ANNOTATION_PREFIX = 'metallb.universe.tf';
export const DEPRECATED_ANNOTATION_ADDRESS_POOL = 'metallb.universe.tf/address-pool';
export const DEPRECATED_ANNOTATION_LOAD_BALANCER_IPS = 'metallb.universe.tf/loadBalancerIPs';
export const DEPRECATED_ANNOTATION_ALLOW_SHARED_IP = 'metallb.universe.tf/allow-shared-ip';

/** Value of `stable` if present (even empty), else of `deprecated`, else "" (MetalLB's valueForAnnotation). */
export function annotationValue(svc: Service, stable: string, deprecated: string): string {
  const a = svc.metadata?.annotations ?? {};
  if (Object.hasOwn(a, stable)) return a[stable] ?? '';
  if (Object.hasOwn(a, deprecated)) return a[deprecated] ?? '';
  return '';
}

/** The sharing key: `metallb.io/allow-shared-ip` if present (even empty), else the deprecated one, else "". */
export function sharingKey(svc: Service): string {
  return annotationValue(svc, ANNOTATION_ALLOW_SHARED_IP, DEPRECATED_ANNOTATION_ALLOW_SHARED_IP);
}

/**
 * The backend key (MetalLB's k8salloc.BackendKey): with `externalTrafficPolicy: Local`, the
 * selector as `k=v` pairs sorted by key joined by `,` (Kubernetes `labels.Set.String()`); else "".
 */
export function backendKey(svc: Service): string {
  if (svc.spec?.externalTrafficPolicy !== 'Local') return '';
  const sel = svc.spec.selector ?? {};
  return Object.keys(sel)
    .sort()
    .map((k) => `${k}=${sel[k]}`)
    .join(',');
}

/** `spec.ports` as allocator ports `{protocol, port}` (protocol as written; absent -> ""). */
export function servicePorts(svc: Service): Port[] {
  return (svc.spec?.ports ?? []).map((p) => ({ protocol: p.protocol ?? '', port: p.port }));
}

/** The requested pool (`metallb.io/address-pool`, else the deprecated annotation); "" = none. */
export function requestedPool(svc: Service): string {
  return annotationValue(svc, ANNOTATION_ADDRESS_POOL, DEPRECATED_ANNOTATION_ADDRESS_POOL);
}

/** `spec.ipFamilyPolicy`, default `SingleStack`. */
export function ipFamilyPolicy(svc: Service): string {
  return svc.spec?.ipFamilyPolicy || 'SingleStack';
}

/**
 * Family of a list of address strings (MetalLB's ipfamily.ForAddresses): `ipv4`/`ipv6` for one,
 * `dual` for two of different families, `unknown` otherwise (also when one does not parse).
 */
export function familyOfAddresses(list: readonly string[]): Family | 'unknown' {
  const ips: IP[] = [];
  for (const s of list) {
    const ip = parseIP(s);
    if (!ip) return 'unknown';
    ips.push(ip);
  }
  return familyOfIPs(ips);
}

/** The service family: family of `spec.clusterIPs`, or of `[spec.clusterIP]` when clusterIPs is empty. */
export function serviceFamily(svc: Service): Family | 'unknown' {
  const ips = svc.spec?.clusterIPs ?? [];
  return familyOfAddresses(ips.length > 0 ? ips : [svc.spec?.clusterIP ?? '']);
}

/** Addresses requested by the service, or an error message (MetalLB's getDesiredLbIPs). */
export type RequestedIPs = { readonly ok: true; readonly ips: readonly IP[]; readonly family: Family | null } | { readonly ok: false; readonly error: string };

/**
 * The addresses the service asks for: annotation `metallb.io/loadBalancerIPs` (or the deprecated
 * one) split on `,` and trimmed, or `spec.loadBalancerIP`. Both set, an unparsable address, or an
 * annotation list of unknown family is an error (MetalLB's messages). None requested: `ips: []`.
 */
export function requestedIPs(svc: Service): RequestedIPs {
  const annotation = annotationValue(svc, ANNOTATION_LOAD_BALANCER_IPS, DEPRECATED_ANNOTATION_LOAD_BALANCER_IPS);
  const specIP = svc.spec?.loadBalancerIP ?? '';
  if (annotation === '' && specIP === '') return { ok: true, ips: [], family: null };
  if (annotation !== '' && specIP !== '') {
    return { ok: false, error: `service can not have both ${ANNOTATION_LOAD_BALANCER_IPS} and svc.Spec.LoadBalancerIP` };
  }
  if (annotation !== '') {
    const ips: IP[] = [];
    for (const part of annotation.split(',')) {
      const ip = parseIP(part.trim());
      if (!ip) return { ok: false, error: `invalid ${ANNOTATION_LOAD_BALANCER_IPS}: ${JSON.stringify(annotation)}` };
      ips.push(ip);
    }
    const family = familyOfIPs(ips);
    if (family === 'unknown') {
      const texts = `[${ips.map((i) => JSON.stringify(formatIP(i))).join(' ')}]`;
      const error = ips.length === 2 ? `IPFamilyForAddresses: same address family ${texts}` : `IPFamilyForAddresses: invalid ips length ${ips.length} ${texts}`;
      return { ok: false, error };
    }
    return { ok: true, ips, family };
  }
  const ip = parseIP(specIP);
  if (!ip) return { ok: false, error: `invalid spec.loadBalancerIP ${JSON.stringify(specIP)}` };
  return { ok: true, ips: [ip], family: ip.family };
}

/** The `ip` values of `status.loadBalancer.ingress` (entries without ip skipped), as written. */
export function statusIPs(svc: Service): string[] {
  const out: string[] = [];
  const ingress = svc.status?.loadBalancer?.ingress;
  if (ingress) for (const i of ingress) if (i.ip) out.push(i.ip);
  return out;
}

/** `namespace/name` key of a Service (the allocator key). */
export function serviceKey(svc: Service): string {
  return `${svc.metadata?.namespace ?? 'default'}/${svc.metadata?.name ?? ''}`;
}

/** The allocator request for a Service under `key`: namespace, labels, policy, families, ports, keys. */
export function allocRequest(key: string, svc: Service): AllocRequest {
  const ns = svc.metadata?.namespace ?? (key.includes('/') ? key.slice(0, key.indexOf('/')) : 'default');
  return {
    key,
    namespace: ns,
    labels: svc.metadata?.labels ?? {},
    ipFamilyPolicy: svc.spec?.ipFamilyPolicy ?? null,
    ipFamilies: svc.spec?.ipFamilies ?? null,
    ports: servicePorts(svc),
    sharingKey: sharingKey(svc),
    backendKey: backendKey(svc),
  };
}

/**
 * MetalLB's `filterByLoadBalancerClass`: true when the controller must leave `svc` alone. With
 * `lbClass` "" (the default) only Services without `spec.loadBalancerClass` are handled; otherwise
 * only Services whose class equals `lbClass`. The Service's type is not looked at (a Service that
 * stopped being a LoadBalancer is still reconciled, to release its addresses).
 */
export function filteredByLoadBalancerClass(svc: Service, lbClass: string): boolean {
  const cls = svc.spec?.loadBalancerClass;
  if (cls === undefined || cls === null) return lbClass !== '';
  return cls !== lbClass;
}
