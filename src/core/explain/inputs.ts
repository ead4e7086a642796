/**
 * Inputs MetalLB ignores, named (issue #12 item 3): Service annotations it does not read
 * (serviceAnnotationProblems), addresses in `spec.externalIPs` (MetalLB neither allocates nor
 * announces them), and addresses another load-balancer implementation wrote — the Service's
 * `status.loadBalancer.ingress` or `spec.loadBalancerIP` — which no fix should ask to add to an
 * IPAddressPool. Pure: reads the Service, the snapshot and the controller's configuration.
 */
import { serviceAnnotationProblems } from '../config/warnings.ts';
import type { Config } from '../config/types.ts';
import { cidrContains, formatIP, parseIP } from '../ip.ts';
import type { ClusterState, KubeObject, Service } from '../kube.ts';
import { annotationValue, statusIPs } from '../controller/service.ts';
import type { AllocationView, Finding } from './types.ts';

/** What ignoredInputFindings reads. */
export interface IgnoredInputsInput {
  /** `namespace/name`. */
  readonly service: string;
  readonly serviceObject: Service;
  readonly allocation: AllocationView;
  readonly state: ClusterState;
  /** The controller's configuration: its pools. */
  readonly controllerConfig: Config;
}

/** Names joined with commas; past `max`, the first ones and a count. */
function list(names: readonly string[], max = 8): string {
  return names.length <= max ? names.join(', ') : `${names.slice(0, max).join(', ')} and ${names.length - max} more`;
}

/** The controller's pool containing `ip`, or null (also for what is not an address). */
export function poolOf(config: Config, ip: string): string | null {
  const p = parseIP(ip);
  if (!p) return null;
  for (const pool of config.pools.values()) if (pool.cidrs.some((c) => cidrContains(c, p))) return pool.name;
  return null;
}

/** `spec.externalIPs` of a Service (strings only). */
export function externalIPsOf(svc: Service): string[] {
  const x = svc.spec?.externalIPs;
  return Array.isArray(x) ? x.filter((v): v is string => typeof v === 'string') : [];
}

/** Who else writes load-balancer addresses, and how to make it leave the Service to MetalLB. */
export interface OtherImplementation {
  /** A few words: `k3s's ServiceLB (klipper-lb)`, `kube-vip`, `Cilium LB IPAM`, `field manager "x"`. */
  readonly who: string;
  /** The evidence, in words. */
  readonly why: string;
  /** How to let one implementation own the Service. */
  readonly fix: string;
}

type FieldsV1 = Record<string, unknown>;

/** Managers of the field path `path` (e.g. ['f:status', 'f:loadBalancer']) in metadata.managedFields. */
function managersOf(obj: KubeObject, path: readonly string[]): string[] {
  const mf = obj.metadata?.managedFields;
  if (!Array.isArray(mf)) return [];
  const out: string[] = [];
  for (const entry of mf as Array<{ manager?: unknown; fieldsV1?: unknown }>) {
    let node: unknown = entry?.fieldsV1;
    for (const k of path) node = node && typeof node === 'object' ? (node as FieldsV1)[k] : undefined;
    if (node !== undefined && typeof entry.manager === 'string') out.push(entry.manager);
  }
  return out;
}

/** MetalLB's own field managers (its controller binary is `controller`). */
function isMetalLBManager(m: string): boolean {
  return m === 'controller' || /metallb/i.test(m);
}

const GENERIC_FIX = "let one implementation own the Service: stop the other one from handling it, or give the Service that implementation's spec.loadBalancerClass (and run MetalLB without it)";

/** The Node whose InternalIP/ExternalIP is `ip`, with the address type, or null. */
export function nodeWithAddress(state: ClusterState, ip: string): { node: string; type: string } | null {
  const p = parseIP(ip);
  if (!p) return null;
  const canonical = formatIP(p);
  for (const n of state.nodes) {
    for (const a of n.status?.addresses ?? []) {
      if (a?.type !== 'InternalIP' && a?.type !== 'ExternalIP') continue;
      const q = parseIP(a.address ?? '');
      if (q && formatIP(q) === canonical) return { node: n.metadata?.name ?? '', type: a.type };
    }
  }
  return null;
}

/**
 * Evidence that another load-balancer implementation handles `svc` (writes its status or its
 * spec.loadBalancerIP), strongest first: the managedFields manager of the field (when the snapshot
 * keeps managedFields), Cilium LB IPAM's status condition or annotations, kube-vip's annotations,
 * k3s ServiceLB's svclb pods, status addresses that are the Nodes' own, a hostname ingress (a
 * cloud load balancer), the cloud service controller's events. Null when none.
 */
export function otherImplementation(svc: Service, state: ClusterState, field: 'status' | 'loadBalancerIP' = 'status'): OtherImplementation | null {
  const ns = svc.metadata?.namespace ?? 'default';
  const name = svc.metadata?.name ?? '';
  const path = field === 'status' ? ['f:status', 'f:loadBalancer'] : ['f:spec', 'f:loadBalancerIP'];
  const foreign = managersOf(svc, path).filter((m) => !isMetalLBManager(m));
  const annotations = Object.keys(svc.metadata?.annotations ?? {});
  const conditions = Array.isArray(svc.status?.conditions) ? (svc.status.conditions as Array<{ type?: string }>) : [];
  const cilium = conditions.find((c) => /cilium/i.test(c?.type ?? ''))?.type ?? annotations.find((k) => /(^|\.)cilium\.io\/|^io\.cilium\//.test(k));
  if (cilium) {
    return {
      who: 'Cilium LB IPAM',
      why: `the Service carries ${cilium} (Cilium's load-balancer IPAM)`,
      fix: 'let one implementation own the Service: restrict Cilium LB IPAM (spec.serviceSelector of the CiliumLoadBalancerIPPools, or enable-lb-ipam: false), or give the Service a class Cilium handles (spec.loadBalancerClass: io.cilium/l2-announcer or io.cilium/bgp-control-plane)',
    };
  }
  const kubeVip = annotations.find((k) => k.startsWith('kube-vip.io/'));
  if (kubeVip) {
    return {
      who: 'kube-vip',
      why: `the Service carries kube-vip's annotation ${kubeVip}`,
      fix: "let one implementation own the Service: remove kube-vip-cloud-provider (or turn off kube-vip's Service handling, svc_enable), or give the Service kube-vip's spec.loadBalancerClass (kube-vip.io/kube-vip-class)",
    };
  }
  if (foreign.length > 0) {
    return {
      who: `field manager ${list(foreign.map((m) => `"${m}"`))}`,
      why: `metadata.managedFields says ${list(foreign.map((m) => `"${m}"`))} wrote ${field === 'status' ? 'status.loadBalancer' : 'spec.loadBalancerIP'}, and MetalLB's controller writes as "controller"`,
      fix: GENERIC_FIX,
    };
  }
  if (field === 'loadBalancerIP') return null;
  const svclb = state.pods.filter((p) => {
    const l = p.metadata?.labels ?? {};
    return (l['svccontroller.k3s.cattle.io/svcname'] === name && (l['svccontroller.k3s.cattle.io/svcnamespace'] ?? ns) === ns) || (p.metadata?.name ?? '').startsWith(`svclb-${name}-`);
  });
  const ips = statusIPs(svc);
  const own = ips.map((ip) => [ip, nodeWithAddress(state, ip)] as const).filter((x) => x[1] !== null);
  const k3sFix = "let one implementation own the Service: start k3s with --disable=servicelb (k3s's own load balancer, klipper-lb), or give the Service a spec.loadBalancerClass MetalLB does not handle";
  if (svclb.length > 0) {
    return {
      who: "k3s's ServiceLB (klipper-lb)",
      why: `k3s runs ${list(
        svclb.map((p) => p.metadata?.name ?? ''),
        3,
      )} for it${
        own.length
          ? `, and ${list(
              own.map(([ip, n]) => `${ip} (${n!.type} of ${n!.node})`),
              4,
            )} ${own.length === 1 ? "is a node's own address" : "are nodes' own addresses"}`
          : ''
      }`,
      fix: k3sFix,
    };
  }
  if (ips.length > 0 && own.length === ips.length) {
    return {
      who: "a node-address load balancer (such as k3s's ServiceLB)",
      why: `${list(
        own.map(([ip, n]) => `${ip} is the ${n!.type} of ${n!.node}`),
        4,
      )}: MetalLB never writes a node's own address unless a pool contains it, and none does; k3s's ServiceLB (klipper-lb) writes exactly these`,
      fix: k3sFix,
    };
  }
  const hostname = (svc.status?.loadBalancer?.ingress ?? []).find((i) => i?.hostname)?.hostname;
  const cloudEvents = state.events.filter(
    (e) =>
      e.involvedObject?.kind === 'Service' && e.involvedObject.name === name && (e.involvedObject.namespace ?? ns) === ns && /^(Ensuring|Ensured)LoadBalancer$|^SyncLoadBalancerFailed$/.test(e.reason ?? ''),
  );
  if (hostname || cloudEvents.length > 0) {
    return {
      who: "a cloud provider's load balancer",
      why: hostname ? `the ingress carries hostname ${hostname}, which MetalLB never writes` : `the Service has ${cloudEvents[0]!.reason} events from a cloud provider's service controller`,
      fix: 'let one implementation own the Service: give the Services MetalLB should handle a spec.loadBalancerClass and run MetalLB with --lb-class, or leave this one to the cloud',
    };
  }
  return null;
}

/** Whether `svc` carries MetalLB's own mark of an allocation (metallb.io/ip-allocated-from-pool). */
function allocatedByMetalLB(svc: Service): boolean {
  return Object.hasOwn(svc.metadata?.annotations ?? {}, 'metallb.io/ip-allocated-from-pool');
}

/** What MetalLB's controller does instead, from the dry run (one clause). */
function controllerInstead(a: AllocationView): string {
  const d = a.dryRun;
  if (!d) return "MetalLB's controller does not keep them";
  if (d.ips.length > 0) return `MetalLB's controller replaces ${a.ips.length === 1 ? 'it' : 'them'} with ${d.ips.join(', ')}${d.pool ? ` from pool ${d.pool}` : ''}`;
  return `MetalLB's controller refuses ${a.ips.length === 1 ? 'it' : 'them'} (${d.error ?? 'no address'})`;
}

/**
 * Findings about inputs MetalLB ignores:
 * - `unknown-annotation` (warning; an error when the Service gets no address, or would not keep its
 *   own, and the annotation is probably metallb.io/address-pool or loadBalancerIPs misspelled: the
 *   request was never read) and `deprecated-annotation` (info when read, warning when shadowed);
 * - `external-ips-not-handled`: addresses in spec.externalIPs (an error for a Service that is not
 *   a LoadBalancer: the question is why MetalLB does not announce them; a warning otherwise);
 * - `ingress-from-other-controller` / `load-balancer-ip-from-other-controller`: an address in no
 *   pool that another implementation wrote (otherImplementation's evidence; a missing
 *   metallb.io/ip-allocated-from-pool alone is not enough: hand-written manifests lack it too),
 *   never with the advice to add it to a pool;
 * - `foreign-address-in-pool`: a Service of another loadBalancerClass holds an address one of
 *   MetalLB's pools contains (both may hand it out).
 */
export function ignoredInputFindings(f: IgnoredInputsInput): Finding[] {
  const out: Finding[] = [];
  const svc = f.serviceObject;
  const a = f.allocation;
  const [ns, name] = f.service.split('/');
  const noAddress = a.status === 'pending' || (a.status === 'assigned' && !!a.dryRun?.error);
  for (const p of serviceAnnotationProblems(svc.metadata?.annotations)) {
    if (p.id === 'deprecated-annotation') {
      out.push({ id: p.id, severity: p.ignored ? 'warning' : 'info', message: p.message, fix: p.fix });
      continue;
    }
    const request = p.meant === 'metallb.io/address-pool' || p.meant === 'metallb.io/loadBalancerIPs';
    const already = p.meant ? annotationValue(svc, p.meant, p.meant.replace('metallb.io/', 'metallb.universe.tf/')) !== '' : false;
    const cause = noAddress && request && !already;
    out.push({
      id: 'unknown-annotation',
      severity: cause ? 'error' : 'warning',
      message: cause
        ? `${p.message}. The Service asks for ${p.meant === 'metallb.io/address-pool' ? `pool "${svc.metadata?.annotations?.[p.key]}"` : `address ${svc.metadata?.annotations?.[p.key]}`} with ${p.key}, which MetalLB never reads, so the controller allocates as if nothing were requested: ${a.dryRun?.error ?? a.reason ?? 'no address'}`
        : p.message,
      fix: p.fix,
    });
  }

  const external = externalIPsOf(svc);
  if (external.length > 0) {
    const pooled = external.map((ip) => [ip, poolOf(f.controllerConfig, ip)] as const).filter((x) => x[1] !== null);
    const poolNote = pooled.length
      ? `; pool ${list([...new Set(pooled.map((x) => x[1]!))])} contains ${list(pooled.map((x) => x[0]))}, so MetalLB may also give ${pooled.length === 1 ? 'it' : 'them'} to a LoadBalancer Service and two would claim ${pooled.length === 1 ? 'it' : 'them'}`
      : '';
    const lb = svc.spec?.type === 'LoadBalancer';
    const req = external.join(',');
    out.push({
      id: 'external-ips-not-handled',
      severity: lb ? 'warning' : 'error',
      message:
        `MetalLB does not handle spec.externalIPs (${list(external)}): it neither allocates nor announces them (ARP/NDP or BGP); kube-proxy only forwards packets that already reach a node for them`
        + (lb
          ? `; MetalLB announces only the status.loadBalancer.ingress addresses${a.ips.length ? ` (${list(a.ips)})` : ''}`
          : `, and MetalLB handles only Services of type LoadBalancer (this one is ${svc.spec?.type ?? 'ClusterIP'})`)
        + poolNote,
      fix: `to have MetalLB announce ${list(external)}: ${lb ? '' : 'set spec.type: LoadBalancer, '}request ${external.length === 1 ? 'it' : 'them'} with the annotation metallb.io/loadBalancerIPs: ${req}${pooled.length === external.length ? '' : ` (${external.length === 1 ? 'it needs' : 'each needs'} an IPAddressPool containing it)`} and remove ${external.length === 1 ? 'it' : 'them'} from spec.externalIPs; otherwise route ${external.length === 1 ? 'it' : 'them'} to a node yourself`,
    });
  }

  if (a.status === 'ignored') {
    // Another class: its address comes from that implementation; warn when a MetalLB pool holds it too.
    const held = statusIPs(svc)
      .map((ip) => [ip, poolOf(f.controllerConfig, ip)] as const)
      .filter((x) => x[1] !== null);
    if (held.length > 0 && svc.spec?.type === 'LoadBalancer') {
      out.push({
        id: 'foreign-address-in-pool',
        severity: 'warning',
        message: `${list(held.map((x) => x[0]))} in the status was written by the implementation of class "${svc.spec?.loadBalancerClass ?? ''}", yet MetalLB's pool ${list([...new Set(held.map((x) => x[1]!))])} contains ${held.length === 1 ? 'it' : 'them'} too: MetalLB may give ${held.length === 1 ? 'it' : 'them'} to one of its Services, and both implementations would then answer for ${held.length === 1 ? 'it' : 'them'}`,
        fix: `split the ranges: remove ${list(held.map((x) => x[0]))} from pool ${list([...new Set(held.map((x) => x[1]!))])} (or from the other implementation's range)`,
      });
    }
    return out;
  }

  const foreignStatus = a.status === 'assigned' ? a.ips.filter((ip) => poolOf(f.controllerConfig, ip) === null) : [];
  if (foreignStatus.length > 0) {
    const other = otherImplementation(svc, f.state, 'status');
    if (other) {
      const why = other.why + (allocatedByMetalLB(svc) ? '' : '; and the Service lacks metallb.io/ip-allocated-from-pool, which MetalLB writes with every address it gives');
      const own = foreignStatus.map((ip) => nodeWithAddress(f.state, ip)).filter((x) => x !== null);
      out.push({
        id: 'ingress-from-other-controller',
        severity: 'error',
        message: `status.loadBalancer.ingress (${list(foreignStatus)}) was written by ${other.who}, not MetalLB: ${why}. ${controllerInstead(a)}, and the other implementation writes its own again: the two fight over ${ns}/${name}`,
        fix: `${other.fix}. Do not add ${list(foreignStatus)} to an IPAddressPool${own.length ? ` (${own.length === foreignStatus.length && own.length > 1 ? "they are nodes' own addresses" : "a node's own address is there"})` : ''}`,
      });
    }
  }
  const lbIP = svc.spec?.loadBalancerIP;
  if (lbIP && poolOf(f.controllerConfig, lbIP) === null && !statusIPs(svc).includes(lbIP)) {
    const other = otherImplementation(svc, f.state, 'loadBalancerIP');
    if (other) {
      out.push({
        id: 'load-balancer-ip-from-other-controller',
        severity: 'error',
        message: `spec.loadBalancerIP ${lbIP} was written by ${other.who}, not for MetalLB: ${other.why}. No IPAddressPool of MetalLB contains it, so MetalLB's controller refuses the request${a.dryRun?.error ? ` (${a.dryRun.error})` : ''}`,
        fix: `${other.fix}. Do not add ${lbIP} to an IPAddressPool: it belongs to ${other.who}'s range`,
      });
    }
  }
  return out;
}

/** Finding ids whose fix would advise adding an address another implementation wrote to a pool. */
const POOL_ADVICE = new Set(['ip-not-in-pool', 'status-ip-not-kept', 'requested-ips-invalid']);

/**
 * The findings without those an `ingress-from-other-controller` or
 * `load-balancer-ip-from-other-controller` finding replaces (their fixes would ask to add the
 * other implementation's address to an IPAddressPool).
 */
export function withoutPoolAdvice(findings: readonly Finding[]): Finding[] {
  const other = findings.some((x) => x.id === 'ingress-from-other-controller' || x.id === 'load-balancer-ip-from-other-controller');
  return other ? findings.filter((x) => !POOL_ADVICE.has(x.id)) : [...findings];
}
