/**
 * Dangerous configurations MetalLB v0.16.1 accepts without a word (issue #12 item 5):
 * - `pool-contains-node-address`: an IPAddressPool containing a Node's own InternalIP/ExternalIP
 *   (MetalLB may give it to a Service; the announcing node then answers ARP/NDP for another node's
 *   address, or BGP routes it away from that node);
 * - `pool-overlaps-pod-cidr`: a pool overlapping a Node's spec.podCIDR(s);
 * - `pool-overlaps-service-cidr`: a pool overlapping the Service range, as far as the snapshot shows
 *   it: the cluster IPs themselves, and the smallest block holding the kubernetes Service's cluster
 *   IP (the range's first address) and the other cluster IPs of its family (skipped without it);
 * - `l2-unintended-interfaces`: the speakers answer on wireless, VPN or overlay interfaces
 *   (wlan0, wg0, tailscale0, cilium_vxlan, vxlan.calico …) that the exclusion list in force
 *   (ConfigMap metallb-excludel2, else MetalLB's default) does not exclude, while no L2Advertisement
 *   restricts `interfaces`. Interface names are only known where ServiceL2Status objects list them
 *   (a speaker with an all-interfaces advertisement lists every interface it does not exclude); a
 *   name some L2Advertisement lists in spec.interfaces is meant, never risky. Per Service, only the
 *   L2Advertisements selecting it count (hazardFindings).
 * Pure: reads the snapshot and the controller's configuration.
 */
import { DEFAULT_EXCLUDE_L2, excludeRegExp, parseExcludeL2 } from '../arp/interfaces.ts';
import type { Config, L2Adv } from '../config/types.ts';
import { cidrContains, cidrLast, familyBits, formatCIDR, formatIP, parseCIDR, parseIP, prefixMask, type CIDR, type IP } from '../ip.ts';
import { objectRef, type ClusterState } from '../kube.ts';
import type { FindingId } from './types.ts';

/** One hazard: the object to fix (objectRef), what is wrong, the fix, and the pools it concerns. */
export interface Hazard {
  readonly id: 'pool-contains-node-address' | 'pool-overlaps-pod-cidr' | 'pool-overlaps-service-cidr' | 'l2-unintended-interfaces';
  readonly object: string;
  readonly message: string;
  readonly fix: string;
  /** Pools concerned (empty for interfaces). */
  readonly pools: readonly string[];
  /** Addresses of the pool that are a node's own (pool-contains-node-address). */
  readonly addresses?: readonly string[];
  /** Whose addresses they are (pool-contains-node-address), in the order of `addresses`. */
  readonly owners?: ReadonlyArray<{ readonly node: string; readonly type: string }>;
  /** L2Advertisements concerned (l2-unintended-interfaces), and the nodes and interfaces seen. */
  readonly advertisements?: readonly string[];
  readonly interfaces?: ReadonlyArray<{ readonly node: string; readonly name: string; readonly kind: string }>;
}

function list(xs: readonly string[], max = 6): string {
  return xs.length <= max ? xs.join(', ') : `${xs.slice(0, max).join(', ')} and ${xs.length - max} more`;
}

function overlaps(a: CIDR, b: CIDR): boolean {
  return a.family === b.family && a.base <= cidrLast(b) && b.base <= cidrLast(a);
}

/** The smallest CIDR block holding every address of `ips` (one family, non-empty). */
function covering(ips: readonly IP[]): CIDR {
  const bits = familyBits(ips[0]!.family);
  let lo = ips[0]!.value;
  let hi = lo;
  for (const ip of ips) {
    if (ip.value < lo) lo = ip.value;
    if (ip.value > hi) hi = ip.value;
  }
  let prefix = bits;
  while (prefix > 0 && (lo & prefixMask(prefix, bits)) !== (hi & prefixMask(prefix, bits))) prefix--;
  return { family: ips[0]!.family, base: lo & prefixMask(prefix, bits), prefix };
}

/** Interface names people rarely mean MetalLB to answer on, by kind. */
const RISKY_INTERFACES: ReadonlyArray<readonly [RegExp, string, string]> = [
  [/^wl/, 'wireless', '^wl.*'],
  [/^(wg|tailscale|zt|nebula|tun|tap|ipsec|vti|ppp)/, 'VPN/tunnel', ''],
  [/^(cilium_|vxlan|flannel|tunl|genev|gre|ip6tnl|sit\d|weave|vethwe|datapath|ovn-k8s|ovs-|br-int|kube-bridge|antrea-|nodelocaldns|kube-ipvs|cali|cni|docker|cbr|lxc|veth|virbr)/, 'overlay/CNI', ''],
];

/** The kind of a risky interface name (`wireless`, `VPN/tunnel`, `overlay/CNI`), or null. */
export function riskyInterfaceKind(name: string): string | null {
  return RISKY_INTERFACES.find(([re]) => re.test(name))?.[1] ?? null;
}

/** The exclusion list the speakers run with: ConfigMap metallb-excludel2 of MetalLB's namespace, else MetalLB's default. */
function exclusionInForce(state: ClusterState, ns: string): { patterns: readonly string[]; from: string } {
  const cm = state.configMaps.find((c) => c.metadata?.name === 'metallb-excludel2' && (c.metadata?.namespace ?? ns) === ns);
  const text = cm?.data?.['excludel2.yaml'];
  if (typeof text === 'string') {
    try {
      return { patterns: parseExcludeL2(text), from: `ConfigMap ${ns}/metallb-excludel2` };
    } catch {
      // MetalLB's speaker exits on a bad list; judge with the default.
    }
  }
  return { patterns: DEFAULT_EXCLUDE_L2, from: "MetalLB's default exclusion list" };
}

/** The regexp an exclusion list gets for `name`: its stem (`cilium_vxlan` -> `^cilium_.*`, `wlan0` -> `^wlan.*`). */
function excludePattern(name: string): string {
  const stem = name.replace(/[0-9.]+$/, '');
  const cut = stem.search(/[_-]/);
  return `^${(cut > 0 ? stem.slice(0, cut + 1) : stem).replace(/\./g, '\\.')}.*`;
}

/**
 * The interfaces ServiceL2Status objects list that are neither risky nor excluded (eth0, enp1s0,
 * bond0 …): those the user most likely meant, in first-seen order.
 */
function ordinaryInterfaces(statuses: ClusterState['serviceL2Statuses'], exclude: RegExp | null): string[] {
  const out = new Set<string>();
  for (const s of statuses) {
    for (const i of s.status?.interfaces ?? []) {
      const name = i?.name ?? '';
      if (name && !riskyInterfaceKind(name) && !exclude?.test(name)) out.add(name);
    }
  }
  return [...out];
}

/** The fix of an l2-unintended-interfaces finding: spec.interfaces on the advertisements (the ordinary interfaces as the example), or the exclusion list. */
function interfacesFix(ads: readonly string[], ordinary: readonly string[], risky: readonly string[], ns: string): string {
  const example =
    ordinary.length > 0 ? `[${list([...ordinary], 4)}] (the other interface${ordinary.length === 1 ? '' : 's'} the speakers list)` : 'the interface of the network the clients are on (e.g. [eth0])';
  return (
    `set spec.interfaces on L2Advertisement ${list(ads, 3)} to the interfaces clients reach the Service through: ${example}; `
    + `or add ${[...new Set(risky.map(excludePattern))].join(', ')} to announcedInterfacesToExclude in ConfigMap ${ns}/metallb-excludel2 (the speakers read it at start: restart them)`
  );
}

/**
 * Every hazard of the snapshot, pools in configuration order then the interfaces. `config` is the
 * controller's configuration (its pools). Nothing is judged without the objects it needs: no Node
 * addresses, podCIDRs, cluster IPs or ServiceL2Status interfaces, no hazard of that kind.
 */
export function configHazards(state: ClusterState, config: Config, metallbNamespace: string): Hazard[] {
  const out: Hazard[] = [];
  const poolObj = (name: string) => state.ipAddressPools.find((p) => p.metadata?.name === name && (p.metadata?.namespace ?? metallbNamespace) === metallbNamespace);
  const ref = (name: string) => {
    const o = poolObj(name);
    return o ? objectRef(o) : `${metallbNamespace}/IPAddressPool/${name}`;
  };

  // Node addresses and Pod ranges.
  const nodeAddrs: Array<{ ip: IP; text: string; node: string; type: string }> = [];
  const podCIDRs: Array<{ cidr: CIDR; node: string }> = [];
  for (const n of state.nodes) {
    const name = n.metadata?.name ?? '';
    for (const a of n.status?.addresses ?? []) {
      if (a?.type !== 'InternalIP' && a?.type !== 'ExternalIP') continue;
      const ip = parseIP(a.address ?? '');
      if (ip) nodeAddrs.push({ ip, text: formatIP(ip), node: name, type: a.type });
    }
    const spec = n.spec as { podCIDR?: unknown; podCIDRs?: unknown } | undefined;
    const cidrs = new Set<string>([...(Array.isArray(spec?.podCIDRs) ? spec.podCIDRs : []), ...(typeof spec?.podCIDR === 'string' ? [spec.podCIDR] : [])].filter((x): x is string => typeof x === 'string'));
    for (const c of cidrs) {
      const p = parseCIDR(c);
      if (p) podCIDRs.push({ cidr: p, node: name });
    }
  }

  // The Service range, as far as the snapshot shows it.
  const kube = state.services.find((s) => s.metadata?.name === 'kubernetes' && (s.metadata?.namespace ?? 'default') === 'default');
  const clusterIPs: IP[] = [];
  const seenIPs = new Set<string>();
  for (const s of state.services) {
    const ips = s.spec?.clusterIPs?.length ? s.spec.clusterIPs : s.spec?.clusterIP ? [s.spec.clusterIP] : [];
    for (const c of ips) {
      if (seenIPs.has(c)) continue;
      seenIPs.add(c);
      const ip = parseIP(c);
      if (ip) clusterIPs.push(ip);
    }
  }
  const serviceRanges: CIDR[] = [];
  for (const c of [...(kube?.spec?.clusterIPs ?? []), ...(kube?.spec?.clusterIP ? [kube.spec.clusterIP] : [])]) {
    const k = parseIP(c);
    if (!k || serviceRanges.some((r) => r.family === k.family)) continue;
    // The kubernetes Service holds the range's first usable address: the range starts just below it.
    serviceRanges.push(covering([{ family: k.family, value: k.value - 1n }, ...clusterIPs.filter((x) => x.family === k.family)]));
  }

  for (const pool of config.pools.values()) {
    const inPool = (ip: IP) => pool.cidrs.some((c) => cidrContains(c, ip));
    const own = nodeAddrs.filter((a) => inPool(a.ip));
    if (own.length > 0) {
      const held = state.services.filter((s) => (s.status?.loadBalancer?.ingress ?? []).some((i) => own.some((a) => a.text === i?.ip)));
      out.push({
        id: 'pool-contains-node-address',
        object: ref(pool.name),
        pools: [pool.name],
        addresses: own.map((a) => a.text),
        owners: own.map((a) => ({ node: a.node, type: a.type })),
        message:
          `IPAddressPool ${pool.name} contains ${list(
            own.map((a) => `${a.text} (${a.type} of ${a.node})`),
            4,
          )}: MetalLB accepts it and may give a node's own address to a Service; the announcing node then answers ARP/NDP for it (or routes it over BGP) and takes that node's traffic`
          + (held.length
            ? `; ${list(
                held.map((s) => `${s.metadata?.namespace ?? 'default'}/${s.metadata?.name ?? ''}`),
                3,
              )} already ${held.length === 1 ? 'holds' : 'hold'} one`
            : ''),
        fix: `keep the nodes' addresses out of pool ${pool.name}: list a range of free addresses (outside the nodes' and the DHCP server's), e.g. split ${list(
          pool.ranges.map((r) => r.entry),
          2,
        )} around ${list(
          own.map((a) => a.text),
          4,
        )}`,
      });
    }
    const pods = podCIDRs.filter((p) => pool.cidrs.some((c) => overlaps(c, p.cidr)));
    if (pods.length > 0) {
      const ranges = [...new Set(pods.map((p) => `${formatCIDR(p.cidr)} (${p.node})`))];
      out.push({
        id: 'pool-overlaps-pod-cidr',
        object: ref(pool.name),
        pools: [pool.name],
        message: `IPAddressPool ${pool.name} overlaps the Pod range${ranges.length === 1 ? '' : 's'} ${list(ranges, 4)} (Node spec.podCIDRs): a Service may get an address that a Pod has or will get, and the nodes route it into the Pod network`,
        fix: `take pool ${pool.name}'s addresses from outside the cluster's Pod CIDR`,
      });
    }
    const svcIPs = clusterIPs.filter(inPool).map(formatIP);
    const ranges = serviceRanges.filter((r) => pool.cidrs.some((c) => overlaps(c, r)));
    if (svcIPs.length > 0 || ranges.length > 0) {
      out.push({
        id: 'pool-overlaps-service-cidr',
        object: ref(pool.name),
        pools: [pool.name],
        message:
          `IPAddressPool ${pool.name} overlaps the cluster's Service range`
          + (ranges.length ? ` (at least ${list(ranges.map(formatCIDR))}, from the kubernetes Service's cluster IP and the Services' cluster IPs)` : '')
          + (svcIPs.length ? `; it contains the cluster IP${svcIPs.length === 1 ? '' : 's'} ${list(svcIPs, 4)}` : '')
          + ': a load-balancer address equal to a cluster IP is routed by kube-proxy to the wrong Service',
        fix: `take pool ${pool.name}'s addresses from outside the Service CIDR (kube-apiserver --service-cluster-ip-range)`,
      });
    }
  }

  // Interfaces the speakers answer on, where ServiceL2Status objects name them.
  // Names an L2Advertisement lists in spec.interfaces are meant (a VPN gateway announced on wg0).
  const named = new Set(state.l2Advertisements.flatMap((a) => (((a.spec as { interfaces?: unknown } | undefined)?.interfaces as unknown[] | undefined) ?? []).filter((x): x is string => typeof x === 'string')));
  const seen: Array<{ node: string; name: string; kind: string }> = [];
  for (const s of state.serviceL2Statuses) {
    const node = s.status?.node ?? '';
    for (const i of s.status?.interfaces ?? []) {
      const name = i?.name ?? '';
      const kind = named.has(name) ? null : riskyInterfaceKind(name);
      if (kind && !seen.some((x) => x.node === node && x.name === name)) seen.push({ node, name, kind });
    }
  }
  if (seen.length > 0) {
    const excl = exclusionInForce(state, metallbNamespace);
    const re = excludeRegExp(excl.patterns);
    const left = seen.filter((x) => !re?.test(x.name));
    const open = state.l2Advertisements.filter(
      (a) => (a.metadata?.namespace ?? metallbNamespace) === metallbNamespace && (((a.spec as { interfaces?: unknown } | undefined)?.interfaces as unknown[] | undefined) ?? []).length === 0,
    );
    const restricted = state.l2Advertisements.length > open.length;
    if (left.length > 0 && open.length > 0) {
      const names = [...new Set(left.map((x) => x.name))].sort();
      const byName = names.map(
        (n) =>
          `${n} (${left.find((x) => x.name === n)!.kind}; ${list(
            left.filter((x) => x.name === n).map((x) => x.node),
            3,
          )})`,
      );
      const ads = open.map((a) => a.metadata?.name ?? '');
      out.push({
        id: 'l2-unintended-interfaces',
        object: objectRef(open[0]!),
        pools: [],
        advertisements: ads,
        interfaces: left,
        message: `the speakers answer ARP/NDP on ${list(byName, 4)} (ServiceL2Status), which ${excl.from} does not exclude, and L2Advertisement ${list(ads, 3)} ${ads.length === 1 ? 'does' : 'do'} not restrict spec.interfaces${restricted ? ' (others do)' : ''}: an address announced there leaks into that network, or is answered where no client is`,
        fix: interfacesFix(ads, ordinaryInterfaces(state.serviceL2Statuses, re), names, metallbNamespace),
      });
    }
  }
  return out;
}

/** configHazards per snapshot and configuration: `whatif` and `whois` explain many Services of one snapshot. */
const CACHE = new WeakMap<ClusterState, WeakMap<Config, Map<string, Hazard[]>>>();

function cachedHazards(state: ClusterState, config: Config, ns: string): Hazard[] {
  let byConfig = CACHE.get(state);
  if (!byConfig) CACHE.set(state, (byConfig = new WeakMap()));
  let byNs = byConfig.get(config);
  if (!byNs) byConfig.set(config, (byNs = new Map()));
  let hs = byNs.get(ns);
  if (!hs) byNs.set(ns, (hs = configHazards(state, config, ns)));
  return hs;
}

/** What hazardFindings reads (a part of FindingsInput). */
export interface HazardFindingsInput {
  /** `namespace/name`. */
  readonly service: string;
  readonly state: ClusterState;
  readonly controllerConfig: Config;
  readonly metallbNamespace: string;
  readonly allocation: { readonly ips: readonly string[]; readonly pool: string | null; readonly status: string };
  /** The pool the speakers see the Service's addresses in (L2 or BGP view), when the allocation names none. */
  readonly poolName: string | null;
  /** The L2 announcer of the Service, if any. */
  readonly announcer: string | null;
  /**
   * The L2Advertisements of the Service's pool that select it (serviceSelectors), from an accepting
   * speaker's configuration; absent when unknown (then every L2Advertisement of MetalLB's namespace
   * without spec.interfaces counts).
   */
  readonly l2Advertisements?: ReadonlyArray<Pick<L2Adv, 'name' | 'nodes' | 'allInterfaces'>>;
}

/**
 * The l2-unintended-interfaces finding of one Service: the risky interfaces its own ServiceL2Status
 * objects list (`here`), on nodes where an L2Advertisement selecting it answers on every interface
 * (MetalLB then lists every interface the exclusion list leaves); null when every such
 * advertisement restricts spec.interfaces (the user listed those interfaces).
 */
function serviceInterfacesFinding(
  f: HazardFindingsInput,
  h: Hazard,
  here: NonNullable<Hazard['interfaces']>,
  statuses: ClusterState['serviceL2Statuses'],
): { id: FindingId; severity: 'warning'; message: string; fix: string } | null {
  const ips = f.allocation.ips.length > 0 ? list([...f.allocation.ips], 2) : "the Service's address";
  const ads =
    f.l2Advertisements === undefined
      ? [...(h.advertisements ?? [])]
      : f.l2Advertisements
          .filter((a) => a.allInterfaces && here.some((i) => a.nodes.has(i.node)))
          .map((a) => a.name)
          .sort();
  if (ads.length === 0) return null;
  const excl = exclusionInForce(f.state, f.metallbNamespace);
  const nodes = [...new Set(here.map((i) => i.node))];
  const on = (n: string): string =>
    list(
      here.filter((i) => i.node === n).map((i) => `${i.name} (${i.kind})`),
      4,
    );
  const who =
    nodes.length === 1
      ? `${nodes[0]} answers ARP/NDP for ${ips} on ${on(nodes[0]!)}`
      : `${list(
          nodes.map((n) => `${n} (on ${on(n)})`),
          3,
        )} answer ARP/NDP for ${ips}`;
  const listed = [...new Set(statuses.flatMap((s) => (s.status?.interfaces ?? []).map((i) => i?.name ?? '').filter(Boolean)))];
  const risky = [...new Set(here.map((i) => i.name))];
  return {
    id: h.id,
    severity: 'warning',
    message:
      `${who} too (ServiceL2Status lists ${list(listed, 6)}): ${excl.from} does not exclude ${risky.length === 1 ? 'it' : 'them'} and L2Advertisement ${list(ads, 3)}, which selects this Service, does not restrict spec.interfaces, `
      + `so the address leaks into ${risky.length === 1 ? 'that network' : 'those networks'} and clients there may learn the wrong MAC for it`,
    fix: interfacesFix(ads, ordinaryInterfaces(statuses, excludeRegExp(excl.patterns)), risky, f.metallbNamespace),
  };
}

/**
 * The hazards that concern one Service, as explain findings: those of its pool (an error when the
 * Service's own address is a node's, a warning otherwise), and the unintended interfaces its own
 * ServiceL2Status lists. Nothing for a Service MetalLB ignores.
 */
export function hazardFindings(f: HazardFindingsInput): Array<{ id: FindingId; severity: 'error' | 'warning'; message: string; fix: string }> {
  if (f.allocation.status === 'ignored') return [];
  const pool = f.allocation.pool ?? f.poolName;
  const [ns, name] = f.service.split('/');
  const statuses = f.state.serviceL2Statuses.filter((s) => s.status?.serviceNamespace === ns && s.status?.serviceName === name);
  const mine = new Set(statuses.flatMap((s) => (s.status?.interfaces ?? []).map((i) => `${s.status?.node ?? ''}\u0000${i?.name ?? ''}`)));
  const out: Array<{ id: FindingId; severity: 'error' | 'warning'; message: string; fix: string }> = [];
  for (const h of cachedHazards(f.state, f.controllerConfig, f.metallbNamespace)) {
    if (h.id === 'l2-unintended-interfaces') {
      const here = (h.interfaces ?? []).filter((i) => mine.has(`${i.node}\u0000${i.name}`));
      const finding = here.length > 0 ? serviceInterfacesFinding(f, h, here, statuses) : null;
      if (finding) out.push(finding);
      continue;
    }
    if (!pool || !h.pools.includes(pool)) continue;
    const i =
      h.id === 'pool-contains-node-address'
        ? (h.addresses ?? []).findIndex((a) =>
            f.allocation.ips.some((ip) => {
              const p = parseIP(ip);
              return p !== undefined && formatIP(p) === a;
            }),
          )
        : -1;
    const owner = i >= 0 ? h.owners?.[i] : undefined;
    out.push({
      id: h.id,
      severity: owner ? 'error' : 'warning',
      message: owner
        ? `${h.addresses![i]}, this Service's address, is the ${owner.type} of ${owner.node}${f.announcer && f.announcer !== owner.node ? `, and ${f.announcer} answers ARP/NDP for it: traffic for ${owner.node} goes to ${f.announcer}` : ''} (${h.message})`
        : h.message,
      fix: h.fix,
    });
  }
  return out;
}
