/**
 * The BGP decision (MetalLB v0.16.1 `speaker/bgp_controller.go` ShouldAnnounce and SetBalancer).
 * There is no election: every node whose speaker passes the checks advertises the service to its
 * peers. Per node, after the service checks shared with Layer 2 (service.ts), in MetalLB's order:
 *
 *  - no BGPAdvertisement of the pool selects the node → `notOwner`;
 *  - none of those also selects the service (service selectors, none = all) → `noMatchingAdvertisement`;
 *  - two of the applicable advertisements have incompatible LOCAL_PREF → `conflictingAdvertisements`;
 *  - the node's NetworkUnavailable condition is "True" → `nodeNetworkUnavailable`;
 *  - the node carries the exclusion label (unless `ignoreExcludeLB`) → `nodeLabeledExcludeBalancers`;
 *  - externalTrafficPolicy Local and no usable endpoint with an address on the node → `noLocalEndpoints`;
 *  - no usable endpoint with an address anywhere → `noEndpoints`;
 *  - otherwise `announce`, with the prefixes, LOCAL_PREF, communities and peers of each advertisement.
 */
import type { BGPAdv, Config, Pool } from '../config/types.ts';
import { formatCIDR, prefixMask, type IP } from '../ip.ts';
import { EXCLUDE_LB_LABEL, namespacedName, type ClusterState, type Service } from '../kube.ts';
import { hasHealthyEndpoint, slicesFor } from './endpoints.ts';
import { checkService } from './service.ts';
import { compatibleLocalPref } from '../config/parse.ts';
import { buildElectionIndex, type ElectionIndex, type NodeInfo } from './state-index.ts';
import type { AppliedBGPAdvertisement, BGPEvaluation, BGPNodeDecision, BGPReason } from './types.ts';

/** Input of evaluateBGP. */
export interface BGPInput {
  readonly config: Config;
  readonly state: ClusterState;
  readonly service: Service;
  /** The speaker flag `--ignore-exclude-lb`. */
  readonly ignoreExcludeLB: boolean;
  /** The index of `state` (buildElectionIndex), reused across services. */
  readonly index?: ElectionIndex;
}

/** Sort key of a community string as MetalLB's `LessThan` orders them (legacy a:b as (a<<16|b):0:0). */
function communityKey(c: string): [number, number, number] | null {
  const f = c.split(':');
  if (f.length === 2) return [Number(f[0]) * 65536 + Number(f[1]), 0, 0];
  if (f.length === 4 && f[0] === 'large') return [Number(f[1]), Number(f[2]), Number(f[3])];
  return null;
}

function sortCommunities(list: readonly string[]): string[] {
  const keyed = list.map((c) => ({ c, k: communityKey(c) }));
  if (keyed.some((x) => x.k === null || x.k.some((n) => !Number.isFinite(n)))) return [...list];
  keyed.sort((x, y) => x.k![0] - y.k![0] || x.k![1] - y.k![1] || x.k![2] - y.k![2]);
  return keyed.map((x) => x.c);
}

/** The advertised prefix of `ip` under an advertisement: the IP masked to its aggregation length. */
export function aggregatedPrefix(ip: IP, ad: Pick<BGPAdv, 'aggregationLength' | 'aggregationLengthV6'>): string {
  const len = ip.family === 'ipv4' ? ad.aggregationLength : ad.aggregationLengthV6;
  const bits = ip.family === 'ipv4' ? 32 : 128;
  return formatCIDR({ family: ip.family, base: ip.value & prefixMask(len, bits), prefix: len });
}

function decideNode(n: NodeInfo, pool: Pool, service: Service, ips: readonly IP[], config: Config, ignoreExcludeLB: boolean, slices: ReturnType<typeof slicesFor>): BGPNodeDecision {
  const no = (decision: BGPReason, detail: string): BGPNodeDecision => ({ node: n.name, decision, detail, advertisements: [] });
  const nodeAds = pool.bgpAdvertisements.filter((ad) => ad.nodes.has(n.name));
  if (nodeAds.length === 0) return no('notOwner', `no BGPAdvertisement of IPAddressPool "${pool.name}" selects this node`);
  const labels = service.metadata?.labels ?? {};
  const ads = nodeAds.filter((ad) => ad.serviceSelectors.length === 0 || ad.serviceSelectors.some((s) => s.matches(labels)));
  if (ads.length === 0) {
    return no('noMatchingAdvertisement', `none of the BGPAdvertisements selecting this node (${nodeAds.map((a) => a.name).join(', ')}) selects the service`);
  }
  for (let i = 0; i < ads.length; i++) {
    for (let j = i + 1; j < ads.length; j++) {
      if (!compatibleLocalPref(ads[i], ads[j], pool)) {
        return no('conflictingAdvertisements', `BGPAdvertisements "${ads[i].name}" and "${ads[j].name}" have conflicting LOCAL_PREF (${ads[i].localPref} vs ${ads[j].localPref})`);
      }
    }
  }
  if (n.networkUnavailable) return no('nodeNetworkUnavailable', 'the node has condition NetworkUnavailable=True');
  if (!ignoreExcludeLB && n.excluded) return no('nodeLabeledExcludeBalancers', `the node is labelled ${EXCLUDE_LB_LABEL}`);
  if (service.spec?.externalTrafficPolicy === 'Local' && !hasHealthyEndpoint(slices, n.name)) {
    return no('noLocalEndpoints', 'externalTrafficPolicy is Local and no usable endpoint runs on this node');
  }
  if (!hasHealthyEndpoint(slices)) return no('noEndpoints', 'the service has no usable endpoint');

  const nodeLabels = n.node?.metadata?.labels ?? {};
  const sessions: string[] = [];
  for (const peer of config.peers.values()) {
    if (peer.nodeSelectors.length === 0 || peer.nodeSelectors.some((s) => s.matches(nodeLabels))) sessions.push(peer.name);
  }
  const applied: AppliedBGPAdvertisement[] = ads.map((ad) => ({
    name: ad.name,
    prefixes: ips.map((ip) => aggregatedPrefix(ip, ad)),
    aggregationLength: ad.aggregationLength,
    aggregationLengthV6: ad.aggregationLengthV6,
    localPref: ad.localPref,
    communities: sortCommunities(ad.communities),
    peers: ad.peers.length === 0 ? sessions : sessions.filter((p) => ad.peers.includes(p)),
  }));
  const peerCount = new Set(applied.flatMap((a) => a.peers)).size;
  return {
    node: n.name,
    decision: 'announce',
    detail: `advertises ${[...new Set(applied.flatMap((a) => a.prefixes))].join(', ')} to ${peerCount} peer${peerCount === 1 ? '' : 's'} (${applied.map((a) => a.name).join(', ')})`,
    advertisements: applied,
  };
}

/**
 * The BGP decision of every Node object's speaker for one service (nodes in name order). Pure;
 * never throws.
 */
export function evaluateBGP(input: BGPInput): BGPEvaluation {
  const { config, service, ignoreExcludeLB } = input;
  const index = input.index ?? buildElectionIndex(input.state);
  const sc = checkService(config, service);
  const key = namespacedName(service);
  if (sc.reason !== null || sc.pool === null) {
    const reason: BGPReason = sc.reason ?? 'ipNotAllowed';
    const detail = sc.checks[sc.checks.length - 1].detail;
    return {
      service: key,
      ips: sc.ips,
      pool: null,
      checks: sc.checks,
      serviceReason: reason,
      nodes: index.nodes.map((n) => ({ node: n.name, decision: reason, detail, advertisements: [] })),
    };
  }
  const slices = slicesFor(index.endpoints, service);
  const pool = sc.pool;
  return {
    service: key,
    ips: sc.ips,
    pool: pool.name,
    checks: sc.checks,
    serviceReason: null,
    nodes: index.nodes.map((n) => decideNode(n, pool, service, sc.parsedIPs, config, ignoreExcludeLB, slices)),
  };
}

/**
 * The BGP decision of the speaker on `node`. A node without a Node object gets the service reason
 * or `notOwner` (no advertisement selects it).
 */
export function decideBGPForNode(evaluation: BGPEvaluation, node: string): BGPNodeDecision {
  for (const d of evaluation.nodes) if (d.node === node) return d;
  if (evaluation.serviceReason !== null) {
    return { node, decision: evaluation.serviceReason, detail: evaluation.checks[evaluation.checks.length - 1]?.detail ?? '', advertisements: [] };
  }
  return { node, decision: 'notOwner', detail: 'no Node object of that name: no BGPAdvertisement selects it', advertisements: [] };
}

/** Convenience: evaluateBGP then decideBGPForNode for one node. */
export function decideBGP(input: BGPInput & { readonly node: string }): BGPNodeDecision {
  return decideBGPForNode(evaluateBGP(input), input.node);
}
