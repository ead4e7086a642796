// A realistic MetalLB configuration and a few dozen LoadBalancer Services, in the order a cluster
// would get them, for the controller tests of test/e2e (migration, same decisions):
// - pools: a general one, namespace-pinned pools with priorities (serviceAllocation by namespace
//   name and by namespace/service label selectors), a manual pool (autoAssign false), a dual-stack
//   pool, avoidBuggyIPs, a one-address pool;
// - Services: plain ones, requested addresses (metallb.io/loadBalancerIPs, the deprecated
//   spec.loadBalancerIP), metallb.io/address-pool, shared IPs (allow-shared-ip, with and without a
//   requested address, and a port clash), dual stack (Require/Prefer) and IPv6, a deprecated
//   metallb.universe.tf annotation, requests no pool can serve, another loadBalancerClass, a ClusterIP;
// - then a pool change (the manual pool renumbered, the general pool grown) and a few more Services.
// Every pool can be told apart from the others by priority or pinning, so MetalLB's choice never
// depends on Go map order when Services arrive one at a time (the test checks that with
// `allocate --dry-run`, which marks where it could).
import { corePath, metallbPath } from '../../../src/controller/api.ts';
import type { KubeClient } from '../../../src/kube/client.ts';
import { NS } from './metallb.ts';

export interface Step {
  /** what the step does, for messages */
  what: string;
  /** the API calls */
  apply(api: KubeClient): Promise<void>;
  /** the Service it creates, `ns/name` (for the per-Service checks), if any */
  service?: string;
  /** the object the step creates or changes, as a manifest (for `allocate --dry-run -f`) */
  manifest?: Record<string, unknown>;
}

export const NAMESPACES: Array<{ name: string; labels: Record<string, string> }> = [
  { name: 'team-a', labels: { team: 'a' } },
  { name: 'team-b', labels: { team: 'b' } },
  { name: 'shop', labels: {} },
  { name: 'dual', labels: {} },
];

const pool = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: NS }, spec });

export const POOLS = [
  pool('general', { addresses: ['10.10.0.0/28'] }),
  pool('team-a', { addresses: ['10.20.0.0/29'], serviceAllocation: { priority: 10, namespaces: ['team-a'] } }),
  pool('frontends', { addresses: ['10.21.0.0/29'], serviceAllocation: { priority: 20, namespaceSelectors: [{ matchLabels: { team: 'b' } }], serviceSelectors: [{ matchLabels: { tier: 'frontend' } }] } }),
  pool('reserved', { addresses: ['10.30.0.10-10.30.0.19'], autoAssign: false }),
  pool('dual', { addresses: ['10.40.0.0/29', 'fd00:40::/125'], serviceAllocation: { priority: 5, namespaces: ['dual'] } }),
  pool('v6', { addresses: ['fd00:60::/124'], serviceAllocation: { priority: 1, namespaces: ['dual'] } }),
  pool('buggy', { addresses: ['10.50.0.0/24'], avoidBuggyIPs: true, autoAssign: false }),
  pool('tiny', { addresses: ['10.60.0.1/32'], autoAssign: false }),
];

interface SvcOpts {
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  ports?: Array<{ name?: string; port: number; protocol?: string }>;
  spec?: Record<string, unknown>;
  type?: string;
}

export function serviceManifest(ns: string, name: string, o: SvcOpts = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: ns, ...(o.annotations ? { annotations: o.annotations } : {}), ...(o.labels ? { labels: o.labels } : {}) },
    spec: { type: o.type ?? 'LoadBalancer', selector: { app: name }, ports: o.ports ?? [{ name: 'http', port: 80, protocol: 'TCP' }], ...(o.spec ?? {}) },
  };
}

function svc(ns: string, name: string, o: SvcOpts = {}): Step {
  const manifest = serviceManifest(ns, name, o);
  return {
    what: `create Service ${ns}/${name}`,
    service: `${ns}/${name}`,
    manifest,
    apply: async (api) => {
      await api.request({ method: 'POST', path: corePath(ns, 'services'), body: manifest });
    },
  };
}

const ML = 'metallb.io';
const lbIPs = (ips: string) => ({ [`${ML}/loadBalancerIPs`]: ips });
const fromPool = (p: string) => ({ [`${ML}/address-pool`]: p });
const shared = (key: string) => ({ [`${ML}/allow-shared-ip`]: key });
const dns = (proto: string) => [{ name: 'dns', port: 53, protocol: proto }];

/** Namespaces and pools: what exists before any Service. */
export async function applyBase(api: KubeClient): Promise<void> {
  for (const n of NAMESPACES) {
    await api.request({ method: 'POST', path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: n.name, labels: n.labels } } });
  }
  for (const p of POOLS) await api.request({ method: 'POST', path: metallbPath(NS, 'ipaddresspools'), body: p });
}

/** The pool change: `reserved` renumbered (10.30.0.10-19 → .20-29), `general` grown by 10.10.1.0/28. */
export function poolChange(): Step[] {
  const patch = (name: string, spec: Record<string, unknown>): Step => ({
    what: `change IPAddressPool ${name}: ${JSON.stringify(spec)}`,
    manifest: { ...POOLS.find((p) => p.metadata.name === name)!, spec: { ...POOLS.find((p) => p.metadata.name === name)!.spec, ...spec } },
    apply: async (api) => {
      await api.request({ method: 'PATCH', path: metallbPath(NS, 'ipaddresspools', name), body: { spec } });
    },
  });
  return [patch('reserved', { addresses: ['10.30.0.20-10.30.0.29'] }), patch('general', { addresses: ['10.10.0.0/28', '10.10.1.0/28'] })];
}

/** The Services (and the pool change among them), in creation order. */
export function serviceSteps(): Step[] {
  return [
    ...[1, 2, 3, 4, 5, 6].map((i) => svc('default', `web-${i}`)),
    svc('default', 'web-explicit', { annotations: lbIPs('10.10.0.14') }),
    svc('default', 'web-legacy', { spec: { loadBalancerIP: '10.10.0.13' } }),
    svc('default', 'dns-tcp', { annotations: { ...shared('dns'), ...lbIPs('10.10.0.12') }, ports: dns('TCP') }),
    svc('default', 'dns-udp', { annotations: { ...shared('dns'), ...lbIPs('10.10.0.12') }, ports: dns('UDP') }),
    svc('default', 'mail-smtp', { annotations: shared('mail'), ports: [{ name: 'smtp', port: 25 }] }),
    svc('default', 'mail-imap', { annotations: shared('mail'), ports: [{ name: 'imap', port: 143 }] }),
    svc('default', 'dns-clash', { annotations: { ...shared('dns'), ...lbIPs('10.10.0.12') }, ports: dns('TCP') }),
    svc('default', 'reserved-1', { annotations: fromPool('reserved') }),
    svc('default', 'reserved-2', { annotations: lbIPs('10.30.0.15') }),
    ...[1, 2, 3, 4].map((i) => svc('team-a', `api-${i}`)),
    svc('team-a', 'api-general', { annotations: fromPool('general') }),
    svc('team-b', 'fe-1', { labels: { tier: 'frontend' } }),
    svc('team-b', 'fe-2', { labels: { tier: 'frontend' } }),
    svc('team-b', 'be-1'),
    svc('team-b', 'be-2'),
    svc('dual', 'both', { spec: { ipFamilyPolicy: 'RequireDualStack', ipFamilies: ['IPv4', 'IPv6'] } }),
    svc('dual', 'prefer', { spec: { ipFamilyPolicy: 'PreferDualStack' } }),
    svc('dual', 'v6', { spec: { ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv6'] } }),
    svc('dual', 'v4', { spec: { ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv4'] } }),
    svc('shop', 'cart', { annotations: { 'metallb.universe.tf/address-pool': 'reserved' } }),
    svc('shop', 'buggy-1', { annotations: fromPool('buggy') }),
    svc('shop', 'buggy-2', { annotations: fromPool('buggy') }),
    svc('shop', 'tiny-1', { annotations: fromPool('tiny') }),
    svc('shop', 'tiny-2', { annotations: fromPool('tiny') }),
    svc('shop', 'nowhere', { annotations: lbIPs('192.168.99.1') }),
    svc('shop', 'both-ways', { annotations: lbIPs('10.10.0.11'), spec: { loadBalancerIP: '10.10.0.11' } }),
    svc('shop', 'bad-ip', { annotations: lbIPs('10.10.0.300') }),
    svc('shop', 'wrong-family', { annotations: lbIPs('fd00:40::3') }),
    svc('shop', 'wrong-pool', { annotations: { ...lbIPs('10.10.0.10'), ...fromPool('reserved') } }),
    svc('shop', 'other-class', { spec: { loadBalancerClass: 'example.com/other' } }),
    svc('shop', 'internal', { type: 'ClusterIP' }),
    ...poolChange(),
    ...[7, 8, 9].map((i) => svc('default', `web-${i}`)),
    svc('shop', 'late-reserved', { annotations: fromPool('reserved') }),
  ];
}
