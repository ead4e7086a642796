/**
 * What a speaker advertises over BGP (MetalLB v0.16.1 `internal/bgp` Advertisement, built in
 * `speaker/bgp_controller.go` SetBalancer) and which peers each service reaches
 * (notifyAdsChanged / PeersForService, the source of ServiceBGPStatus).
 */
import type { Peer } from '../config/types.ts';
import { compareStrings } from '../labels.ts';
import type { BGPNodeDecision } from '../election/types.ts';

/** One advertisement of one prefix (MetalLB `bgp.Advertisement`). */
export interface BGPRoute {
  /** The service IP masked to the aggregation length, as Go prints an `*net.IPNet` (`192.0.2.0/24`). */
  readonly prefix: string;
  readonly family: 'ipv4' | 'ipv6';
  /** 0: none */
  readonly localPref: number;
  /** Canonical community strings (`65000:1`, `large:1:2:3`), sorted as MetalLB's `LessThan`. */
  readonly communities: readonly string[];
  /** The sessions it goes to (BGPPeer names with a session on the node). */
  readonly peers: readonly string[];
}

/**
 * The routes of an announcing node's decision for one service, in MetalLB's order (for each
 * ingress IP, for each applicable BGPAdvertisement). Empty unless the decision is `announce`.
 */
export function routesFor(decision: BGPNodeDecision): BGPRoute[] {
  const out: BGPRoute[] = [];
  if (decision.decision !== 'announce') return out;
  const ips = decision.advertisements[0]?.prefixes.length ?? 0;
  for (let i = 0; i < ips; i++) {
    for (const ad of decision.advertisements) {
      const prefix = ad.prefixes[i]!;
      out.push({ prefix, family: prefix.includes(':') ? 'ipv6' : 'ipv4', localPref: ad.localPref, communities: ad.communities, peers: ad.peers });
    }
  }
  return out;
}

/** MetalLB caps an advertisement at 63 communities (frr-k8s `validate`). */
export const MAX_COMMUNITIES = 63;

/** A route refused by the community limit, with MetalLB's error text. */
export interface CommunityLimitError {
  readonly route: BGPRoute;
  /** MetalLB's text: `max supported communities is 63, got N`. */
  readonly message: string;
}

/**
 * Whether the BGP handler's SetBalancer fails on the community limit for these routes (one
 * service's, from routesFor), and on which route. MetalLB v0.16.1 checks the limit only in the
 * frr-k8s session (`internal/bgp/frrk8s/frrk8s.go` `session.Set` → `validate`), which
 * `publishAds` calls for each BGPPeer with a session on the node with the advertisements that
 * peer gets: so it fails only when a route with more than 63 communities goes to at least one
 * session (`route.peers` non-empty). A route that reaches no session is never checked and the
 * service counts as announced over BGP. Null: no failure.
 */
export function communityLimitError(routes: readonly BGPRoute[]): CommunityLimitError | null {
  const route = routes.find((r) => r.communities.length > MAX_COMMUNITIES && r.peers.length > 0);
  return route ? { route, message: `max supported communities is ${MAX_COMMUNITIES}, got ${route.communities.length}` } : null;
}

/**
 * The BGPPeer names each service's prefixes go to (MetalLB notifyAdsChanged → ServiceBGPStatus
 * `status.peers`), sorted. MetalLB maps peers to services *by prefix string*: every service
 * announcing a prefix gets every peer that prefix goes to (two services sharing an IP, or
 * aggregated into one prefix, get the union), and counts a peer before the address-family
 * filter of the FRRConfiguration. Services that reach no peer are absent.
 *
 * @param routes the routes of every service this node announces, by `namespace/name`
 * @param sessions the peers with a session on the node
 */
export function peersByService(routes: ReadonlyMap<string, readonly BGPRoute[]>, sessions: readonly Peer[]): Map<string, string[]> {
  const servicesOfPrefix = new Map<string, Set<string>>();
  for (const [svc, list] of routes) {
    for (const r of list) {
      let s = servicesOfPrefix.get(r.prefix);
      if (!s) servicesOfPrefix.set(r.prefix, (s = new Set()));
      s.add(svc);
    }
  }
  const out = new Map<string, Set<string>>();
  for (const peer of sessions) {
    for (const list of routes.values()) {
      for (const r of list) {
        if (!r.peers.includes(peer.name)) continue;
        for (const svc of servicesOfPrefix.get(r.prefix) ?? []) {
          let s = out.get(svc);
          if (!s) out.set(svc, (s = new Set()));
          s.add(peer.name);
        }
      }
    }
  }
  return new Map([...out].map(([svc, peers]) => [svc, [...peers].sort(compareStrings)]));
}
