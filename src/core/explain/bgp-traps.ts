/**
 * BGP configurations MetalLB accepts silently although nothing (or less than meant) reaches a
 * router — `validate` reports them as warnings, `explain` as findings when they touch the
 * Service's pool:
 *
 * - `bgp-advertisement-unknown-peer`: a BGPAdvertisement's `spec.peers` names a BGPPeer that does
 *   not exist (the speakers send to peers by name; an unknown name matches no session);
 * - `bgp-advertisement-peer-no-session`: it names an existing BGPPeer with which none of the nodes
 *   the advertisement selects has a session (disjoint nodeSelectors);
 * - `bgppeer-selects-no-node`: a BGPPeer whose nodeSelectors select no Node: no speaker opens it;
 * - `bgp-no-peer-session`: a pool advertised over BGP, but no node its advertisements select has
 *   a session with a peer they send to;
 * - `bgp-family-filtered`: a pool with addresses of one family whose advertisements reach only
 *   neighbors of the other family without `dualStackAddressFamily` (the FRRConfiguration filter
 *   drops those prefixes);
 * - `bgp-localpref-conflict`: two advertisements with serviceSelectors (the parser only checks
 *   those without) that both apply to an existing Service on a node with different LOCAL_PREF for
 *   the same prefixes: MetalLB then announces it from that node to nobody
 *   (`conflictingAdvertisements`).
 *
 * Sessions and advertisements are taken from each speaker's own configuration (speakerConfigs);
 * speakers that reject theirs are left out (their errors say more).
 */
import { bgpSessions } from '../bgp/sessions.ts';
import { compatibleLocalPref } from '../config/parse.ts';
import type { BGPAdv, Peer, Pool } from '../config/types.ts';
import { statusIPs } from '../controller/service.ts';
import { cidrContains, parseIP } from '../ip.ts';
import type { BGPAdvertisement, BGPPeer, ClusterState, KubeObject, LabelSelector, Node } from '../kube.ts';
import { objectRef } from '../kube.ts';
import { compareStrings, parseSelector, type Selector } from '../labels.ts';
import { neighborFamily, peerAddressOf } from './bgp.ts';
import type { SpeakerConfigs } from './speakers.ts';
import type { FindingId } from './types.ts';

/** One trap: the object to fix, what is wrong and the fix; `pools` it affects (for explain). */
export interface BGPTrap {
  readonly id: FindingId;
  /** objectRef of the object to fix. */
  readonly object: string;
  readonly message: string;
  readonly fix: string;
  readonly pools: readonly string[];
}

function list(xs: readonly string[], max = 10): string {
  return xs.length <= max ? xs.join(', ') : `${xs.slice(0, max).join(', ')} and ${xs.length - max} more`;
}

function mine<T extends KubeObject>(objects: readonly T[], namespace: string): T[] {
  return objects.filter((o) => !o.metadata?.namespace || o.metadata.namespace === namespace);
}

/** Names of the Nodes a nodeSelectors list selects (every Node when empty); null when a selector is invalid. */
function selectedNodes(sels: unknown, nodes: readonly Node[]): string[] | null {
  const raw = (Array.isArray(sels) ? sels : []) as LabelSelector[];
  let parsed: Selector[];
  try {
    parsed = raw.map((s) => parseSelector(s));
  } catch {
    return null;
  }
  return nodes.filter((n) => parsed.length === 0 || parsed.some((s) => s.matches(n.metadata?.labels))).map((n) => n.metadata?.name ?? '');
}

/**
 * Why two advertisements' LOCAL_PREF clash (the conditions of MetalLB's
 * `BGPAdvertisementsHaveCompatibleLocalPref`, which `compatibleLocalPref` found unmet): the same
 * prefixes, overlapping peers, shared nodes.
 */
export function clashWhy(a: BGPAdv, b: BGPAdv, pool: Pool): string {
  const fams = new Set(pool.cidrs.map((c) => c.family));
  const lens: string[] = [];
  if (fams.has('ipv4')) lens.push(a.aggregationLength === b.aggregationLength ? `the same IPv4 aggregationLength /${a.aggregationLength}` : `IPv4 /${a.aggregationLength} vs /${b.aggregationLength}`);
  if (fams.has('ipv6')) lens.push(a.aggregationLengthV6 === b.aggregationLengthV6 ? `the same aggregationLengthV6 /${a.aggregationLengthV6}` : `IPv6 /${a.aggregationLengthV6} vs /${b.aggregationLengthV6}`);
  const peers =
    a.peers.length === 0 && b.peers.length === 0
      ? 'both send to every peer'
      : a.peers.length === 0
        ? `${a.name} sends to every peer, ${b.name} to ${b.peers.join(', ')}`
        : b.peers.length === 0
          ? `${b.name} sends to every peer, ${a.name} to ${a.peers.join(', ')}`
          : `both send to ${a.peers.filter((p) => b.peers.includes(p)).join(', ')}`;
  const shared = [...a.nodes].filter((n) => b.nodes.has(n)).sort(compareStrings);
  return `pool ${pool.name}, ${lens.join(' and ')}, ${peers}, and both select ${list(shared, 5)}`;
}

const memo = new WeakMap<SpeakerConfigs, { state: ClusterState; traps: BGPTrap[] }>();

/**
 * The BGP traps of `state` (see the module comment), in object order per id. `configs` are the
 * speakers' configurations of `state` (speakerConfigs over every Node). Pure; the result is
 * remembered per `configs` (explain and whois ask once per Service).
 */
export function bgpTraps(state: ClusterState, configs: SpeakerConfigs): BGPTrap[] {
  const hit = memo.get(configs);
  if (hit && hit.state === state) return hit.traps;
  const traps = computeTraps(state, configs);
  memo.set(configs, { state, traps });
  return traps;
}

function computeTraps(state: ClusterState, configs: SpeakerConfigs): BGPTrap[] {
  const ns = configs.namespace;
  const out: BGPTrap[] = [];
  const peerCRs = mine(state.bgpPeers, ns) as BGPPeer[];
  const adCRs = mine(state.bgpAdvertisements, ns) as BGPAdvertisement[];
  const peerNames = new Set(peerCRs.map((p) => p.metadata?.name ?? ''));
  const labelsOf = new Map(state.nodes.map((n) => [n.metadata?.name ?? '', n.metadata?.labels]));

  // Which pools each advertisement attaches to, and the pools whose advertisements send to a peer, in the accepting speakers' configurations.
  const poolsOfAd = new Map<string, Set<string>>();
  const poolsOfPeer = new Map<string, Set<string>>();
  const poolsOfEveryPeer = new Set<string>(); // pools with an advertisement without spec.peers
  const add = (m: Map<string, Set<string>>, k: string, v: string): void => {
    let s = m.get(k);
    if (!s) m.set(k, (s = new Set()));
    s.add(v);
  };
  for (const g of configs.accepted) {
    if (!g.result.ok) continue;
    for (const pool of g.result.config.pools.values()) {
      for (const ad of pool.bgpAdvertisements) {
        add(poolsOfAd, ad.name, pool.name);
        if (ad.peers.length === 0) poolsOfEveryPeer.add(pool.name);
        else for (const p of ad.peers) add(poolsOfPeer, p, pool.name);
      }
    }
  }
  const sorted = (s: Set<string> | undefined): string[] => [...(s ?? [])].sort(compareStrings);

  for (const ad of adCRs) {
    const name = ad.metadata?.name ?? '';
    const named = (ad.spec?.peers ?? []).filter((p): p is string => typeof p === 'string');
    if (named.length === 0) continue;
    const unknown = named.filter((p) => !peerNames.has(p));
    if (unknown.length > 0) {
      const all = unknown.length === named.length;
      out.push({
        id: 'bgp-advertisement-unknown-peer',
        object: objectRef(ad),
        pools: sorted(poolsOfAd.get(name)),
        message: all
          ? `spec.peers names only BGPPeer${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}, which ${unknown.length === 1 ? 'does' : 'do'} not exist: its prefixes reach no router`
          : `spec.peers names BGPPeer${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}, which ${unknown.length === 1 ? 'does' : 'do'} not exist (MetalLB ignores ${unknown.length === 1 ? 'that name' : 'those names'})`,
        fix: `correct spec.peers of BGPAdvertisement ${name} (existing BGPPeers: ${peerNames.size ? list([...peerNames].sort(compareStrings)) : 'none'}), or create the BGPPeer`,
      });
    }
    if (state.nodes.length === 0) continue;
    const adNodes = selectedNodes(ad.spec?.nodeSelectors, state.nodes);
    if (!adNodes || adNodes.length === 0) continue;
    for (const p of named) {
      const cr = peerCRs.find((x) => x.metadata?.name === p);
      if (!cr) continue;
      const pNodes = selectedNodes(cr.spec?.nodeSelectors, state.nodes);
      if (!pNodes || pNodes.some((n) => adNodes.includes(n))) continue;
      out.push({
        id: 'bgp-advertisement-peer-no-session',
        object: objectRef(ad),
        pools: sorted(poolsOfAd.get(name)),
        message: `spec.peers names BGPPeer ${p}, but none of the nodes this advertisement selects (${list(adNodes, 5)}) has a session with it: its nodeSelectors select ${pNodes.length ? list(pNodes, 5) : 'no node'}`,
        fix: `make the nodeSelectors of BGPPeer ${p} and BGPAdvertisement ${name} overlap, or name another peer in spec.peers of ${name}`,
      });
    }
  }

  if (state.nodes.length > 0) {
    // The speakers' own node filter already tells which peers some node keeps (when every Node has a group).
    const grouped = configs.groups.filter((g) => g.status !== 'noNode');
    const filtered = grouped.every((g) => g.kept !== null) && grouped.reduce((n, g) => n + g.nodes.length, 0) === new Set(state.nodes.map((n) => n.metadata?.name)).size;
    const keptSomewhere = new Set(grouped.flatMap((g) => g.kept?.peers ?? []));
    for (const p of peerCRs) {
      const sels = p.spec?.nodeSelectors;
      if (!Array.isArray(sels) || sels.length === 0) continue;
      if (filtered ? keptSomewhere.has(p) : (selectedNodes(sels, state.nodes)?.length ?? 1) > 0) continue;
      const name = p.metadata?.name ?? '';
      const address = peerAddressOf(p);
      out.push({
        id: 'bgppeer-selects-no-node',
        object: objectRef(p),
        pools: sorted(new Set([...poolsOfEveryPeer, ...(poolsOfPeer.get(name) ?? [])])),
        message: `BGPPeer nodeSelectors select no Node: no speaker opens a session with ${address || 'this peer'}`,
        fix: `correct spec.nodeSelectors of BGPPeer ${name} to match the labels of the nodes that peer with it (kubectl get nodes --show-labels)`,
      });
    }
  }

  // Per pool: the (node, peer) sessions its advertisements reach, in each node's own configuration.
  const reach = new Map<string, { pool: Pool; ads: Set<string>; peers: Map<string, Peer> }>();
  for (const g of configs.accepted) {
    if (!g.result.ok) continue;
    const config = g.result.config;
    for (const node of g.nodes) {
      const sessions = bgpSessions(config, labelsOf.get(node));
      for (const pool of config.pools.values()) {
        for (const ad of pool.bgpAdvertisements) {
          let r = reach.get(pool.name);
          if (!r) reach.set(pool.name, (r = { pool, ads: new Set(), peers: new Map() }));
          r.ads.add(ad.name);
          if (!ad.nodes.has(node)) continue;
          for (const s of sessions) if (ad.peers.length === 0 || ad.peers.includes(s.name)) r.peers.set(s.name, s);
        }
      }
    }
  }
  for (const cr of mine(state.ipAddressPools, ns)) {
    const r = reach.get(cr.metadata?.name ?? '');
    if (!r) continue;
    const ads = [...r.ads].sort(compareStrings);
    if (r.peers.size === 0) {
      out.push({
        id: 'bgp-no-peer-session',
        object: objectRef(cr),
        pools: [r.pool.name],
        message: `IPAddressPool "${r.pool.name}" is advertised over BGP (${list(ads, 5)}), but no node those advertisements select has a session with a peer they send to: no router learns its addresses`,
        fix:
          peerCRs.length === 0
            ? 'create a BGPPeer for your router'
            : `create a BGPPeer (or widen an existing BGPPeer's nodeSelectors, or spec.peers of BGPAdvertisement ${list(ads, 5)}) for the nodes those advertisements select, or make them select nodes that peer`,
      });
      continue;
    }
    const peers = [...r.peers.values()].sort((a, b) => compareStrings(a.name, b.name));
    for (const fam of ['ipv4', 'ipv6'] as const) {
      if (!r.pool.cidrs.some((c) => c.family === fam)) continue;
      if (
        peers.some((p) => {
          const f = neighborFamily(p);
          return f === null || f === fam;
        })
      )
        continue;
      const famName = fam === 'ipv4' ? 'IPv4' : 'IPv6';
      const other = fam === 'ipv4' ? 'IPv6' : 'IPv4';
      const names = peers.map((p) => p.name);
      out.push({
        id: 'bgp-family-filtered',
        object: objectRef(cr),
        pools: [r.pool.name],
        message: `IPAddressPool "${r.pool.name}" has ${famName} addresses, but every BGP peer its advertisements reach (${list(names, 5)}) is an ${other} neighbor without dualStackAddressFamily: the speakers' FRRConfiguration never sends them ${famName} prefixes`,
        fix: `set spec.dualStackAddressFamily: true on BGPPeer ${list(names, 5)}, or add an ${famName} BGPPeer`,
      });
    }
  }

  // LOCAL_PREF conflicts the parser lets through (advertisements with serviceSelectors), for the Services they would hit.
  const seen = new Set<string>();
  for (const g of configs.accepted) {
    if (!g.result.ok) continue;
    for (const pool of g.result.config.pools.values()) {
      const ads = pool.bgpAdvertisements;
      for (let i = 0; i < ads.length; i++) {
        for (let j = i + 1; j < ads.length; j++) {
          const a = ads[i]!;
          const b = ads[j]!;
          const key = `${pool.name}\u0000${a.name}\u0000${b.name}`;
          if (seen.has(key) || compatibleLocalPref(a, b, pool)) continue;
          const nodes = g.nodes.filter((n) => a.nodes.has(n) && b.nodes.has(n));
          if (nodes.length === 0) continue;
          const services = state.services
            .filter((svc) => {
              if (svc.spec?.type !== 'LoadBalancer') return false;
              const ips = statusIPs(svc).map((x) => parseIP(x));
              if (ips.length === 0 || ips.some((ip) => !ip || !pool.cidrs.some((c) => cidrContains(c, ip)))) return false;
              const labels = svc.metadata?.labels ?? {};
              const sel = (ad: BGPAdv): boolean => ad.serviceSelectors.length === 0 || ad.serviceSelectors.some((s) => s.matches(labels));
              return sel(a) && sel(b);
            })
            .map((svc) => `${svc.metadata?.namespace ?? 'default'}/${svc.metadata?.name ?? ''}`);
          if (services.length === 0) continue;
          seen.add(key);
          out.push({
            id: 'bgp-localpref-conflict',
            object: objectRef(b.source),
            pools: [pool.name],
            message: `BGPAdvertisements ${a.name} and ${b.name} set different LOCAL_PREF (${a.localPref} vs ${b.localPref}) for the same prefixes of ${list(services, 5)}: ${clashWhy(a, b, pool)}; MetalLB's speakers there announce ${services.length === 1 ? 'it' : 'them'} to nobody (conflictingAdvertisements)`,
            fix: `give BGPAdvertisements ${a.name} and ${b.name} the same spec.localPref, or keep them apart: different aggregationLength, disjoint spec.peers, disjoint nodeSelectors, or serviceSelectors that do not select the same Services`,
          });
        }
      }
    }
  }
  return out;
}
