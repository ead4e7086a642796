/**
 * The BGP side of an explanation, per node and per BGPPeer: what the speaker of each node decides
 * for the Service (evaluateBGP with that speaker's own configuration) and, for each peer, the
 * prefixes it gets with their LOCAL_PREF and communities, or why it gets nothing. The prefixes are
 * read from the FRRConfiguration neighbor the speaker would write (frrConfiguration over the node's
 * sessions, bgpSessions, and the routes of the decision, routesFor), so the explanation cannot
 * disagree with what the speaker writes: the address-family filter, the advertisement's `peers`
 * list and the sessions are the speaker's own.
 */
import type { Peer } from '../config/types.ts';
import { routesFor, type BGPRoute } from '../bgp/routes.ts';
import { frrConfiguration } from '../frrk8s/config.ts';
import type { FRRNeighbor } from '../frrk8s/types.ts';
import { cidrContains, parseCIDR, type IP } from '../ip.ts';
import type { BGPPeer, KubeObject } from '../kube.ts';
import { compareStrings } from '../labels.ts';
import type { AppliedBGPAdvertisement, BGPNodeDecision, BGPVerdict, ServiceCheck } from '../election/types.ts';

/**
 * What one peer gets from one node for the Service: `advertised` (at least one prefix),
 * `noSession` (the BGPPeer has no session on the node: its nodeSelectors do not select it),
 * `notAnnounced` (the node does not announce the Service), `peersList` (the applicable
 * advertisements' `spec.peers` leave it out), `addressFamily` (every prefix it would get is of
 * the other family: an IPv4 neighbor gets IPv4 prefixes only, IPv6 IPv6 only, unless
 * `dualStackAddressFamily` or `interface`). (Two sessions with one key cannot both run on a node
 * in frr-k8s mode: the configuration check rejects two peers with one address there.)
 */
export type PeerOutcome = 'advertised' | 'noSession' | 'notAnnounced' | 'peersList' | 'addressFamily';

/** One prefix a neighbor gets, as the FRRConfiguration says it. */
export interface PeerPrefix {
  readonly prefix: string;
  /** 0: none set */
  readonly localPref: number;
  readonly communities: readonly string[];
}

/** One BGPPeer as seen from one node, for one Service. */
export interface PeerView {
  /** BGPPeer name. */
  readonly peer: string;
  /** `spec.peerAddress`, or `interface NAME` for an unnumbered peer. */
  readonly address: string;
  /** Whether the peer has a session on the node. */
  readonly session: boolean;
  /** The prefixes its neighbor accepts: `ipv4`, `ipv6` (by its address) or `both` (interface or dualStackAddressFamily); null without a session. */
  readonly family: 'ipv4' | 'ipv6' | 'both' | null;
  readonly outcome: PeerOutcome;
  /** The Service's prefixes the neighbor gets (after the address-family filter). */
  readonly prefixes: readonly PeerPrefix[];
  /** Prefixes the advertisements send it that the address-family filter drops. */
  readonly filtered: readonly string[];
  /** Why it gets nothing, or what is filtered; null when it gets everything meant for it. */
  readonly why: string | null;
}

/** The decision of one node's speaker, with its peers. */
export interface BGPNodeView {
  readonly node: string;
  /**
   * `announce`, MetalLB's reason, `syncError` (the speaker would fail to apply it) or
   * `configRejected` (the speaker rejects its configuration).
   */
  readonly decision: BGPVerdict | 'syncError' | 'configRejected';
  readonly detail: string;
  /** The advertisements that apply (empty unless `announce`). */
  readonly advertisements: readonly AppliedBGPAdvertisement[];
  /**
   * The node's sessions and the BGPPeers the applicable advertisements name without a session
   * here, by name; any other BGPPeer has no session on the node. Empty when the speaker rejects
   * its configuration.
   */
  readonly peers: readonly PeerView[];
  /**
   * Applicable advertisements that reach no session on the node: their `spec.peers` names no
   * peer with a session here (their prefixes go nowhere).
   */
  readonly undelivered: ReadonlyArray<{ readonly advertisement: string; readonly prefixes: readonly string[]; readonly specPeers: readonly string[] }>;
}

/** The BGP part of an explanation (`bgp` in `explain -o json`). */
export interface BGPView {
  /** The pool containing the Service's addresses in the speakers' configuration, or null. */
  readonly pool: string | null;
  /** The service-level checks (type, ingress, IPs, pool). */
  readonly checks: readonly ServiceCheck[];
  /** The reason every node gets when a service-level check fails, else null. */
  readonly serviceReason: string | null;
  /** Every BGPPeer of MetalLB's namespace, by name (a node's `peers` leaves out those without a session there that nothing names). */
  readonly peers: readonly string[];
  /** Every Node, by name. */
  readonly nodes: readonly BGPNodeView[];
}

/** `spec.peerAddress`, or `interface NAME`, of a BGPPeer CR. */
export function peerAddressOf(cr: KubeObject): string {
  const spec = ((cr as BGPPeer).spec ?? {}) as Record<string, unknown>;
  if (typeof spec.peerAddress === 'string' && spec.peerAddress !== '') return spec.peerAddress;
  if (typeof spec.interface === 'string' && spec.interface !== '') return `interface ${spec.interface}`;
  return '';
}

/** The family a neighbor accepts: null = both (interface or dualStackAddressFamily). Mirrors the FRRConfiguration filter. */
export function neighborFamily(p: Peer): 'ipv4' | 'ipv6' | null {
  if (p.interface || p.dualStackAddressFamily) return null;
  return (p.address ?? '').includes(':') ? 'ipv6' : 'ipv4';
}

function familyName(f: 'ipv4' | 'ipv6'): string {
  return f === 'ipv4' ? 'IPv4' : 'IPv6';
}

/** The neighbor the speaker writes for `peer` alone, with `routes`. */
function neighborFor(node: string, namespace: string, peer: Peer, routes: readonly BGPRoute[]): FRRNeighbor | undefined {
  const frr = frrConfiguration({ node, namespace, sessions: [peer], routes, bfdProfiles: [], secretHandling: 'passThrough' });
  return frr.spec.bgp.routers?.[0]?.neighbors?.[0];
}

/**
 * The BGPPeers that matter on a node whose speaker accepted its configuration and decided
 * `decision` for the Service — its sessions, and the peers the applicable advertisements name in
 * `spec.peers` without a session here — by name, each with what it gets or why nothing. Every
 * other BGPPeer has no session on the node (its nodeSelectors do not select it); listing those for
 * every node would grow with nodes × peers. `crByName`: the BGPPeer CRs of MetalLB's namespace;
 * `adPeers`: the `spec.peers` of the pool's BGPAdvertisements by name.
 */
export function peerViews(
  node: string,
  namespace: string,
  decision: BGPNodeDecision,
  sessions: readonly Peer[],
  crByName: ReadonlyMap<string, KubeObject>,
  adPeers: ReadonlyMap<string, readonly string[]>,
): PeerView[] {
  const routes = routesFor(decision);
  const sessionByName = new Map(sessions.map((p) => [p.name, p]));
  const named = decision.advertisements.flatMap((a) => adPeers.get(a.name) ?? []).filter((n) => crByName.has(n));
  const names = [...new Set([...sessionByName.keys(), ...named])].sort(compareStrings);
  return names.map((name): PeerView => {
    const cr = crByName.get(name);
    const address = cr ? peerAddressOf(cr) : (sessionByName.get(name)?.address ?? '');
    const p = sessionByName.get(name);
    const family = p ? familyOf(p) : null;
    const none = (outcome: PeerOutcome, why: string | null, session = true): PeerView => ({ peer: name, address, session, family, outcome, prefixes: [], filtered: [], why });
    if (!p) return none('noSession', 'no session on this node: its nodeSelectors do not select it', false);
    if (decision.decision !== 'announce') return none('notAnnounced', null);
    const mine = routes.filter((r) => r.peers.includes(name));
    const filteredOf = (allowed: readonly string[]): string[] => [...new Set(mine.map((r) => r.prefix))].sort(compareStrings).filter((x) => !allowed.includes(x));
    if (mine.length === 0) {
      const ads = decision.advertisements.map((a) => `${a.name} (spec.peers: ${(adPeers.get(a.name) ?? []).join(', ')})`);
      return none(
        'peersList',
        `the BGPAdvertisement${decision.advertisements.length === 1 ? '' : 's'} for this Service send${decision.advertisements.length === 1 ? 's' : ''} only to other peers: ${ads.join('; ')}`,
      );
    }
    const nb = neighborFor(node, namespace, p, mine);
    const allowed = nb?.toAdvertise.allowed.prefixes ?? [];
    const filtered = filteredOf(allowed);
    if (allowed.length === 0) return { peer: name, address, session: true, family, outcome: 'addressFamily', prefixes: [], filtered, why: familyWhy(family, filtered, true) };
    const prefixes = allowed.map(
      (prefix): PeerPrefix => ({
        prefix,
        localPref: nb?.toAdvertise.withLocalPref?.find((l) => l.prefixes.includes(prefix))?.localPref ?? 0,
        communities: (nb?.toAdvertise.withCommunity ?? []).filter((c) => c.prefixes.includes(prefix)).map((c) => c.community),
      }),
    );
    return { peer: name, address, session: true, family, outcome: 'advertised', prefixes, filtered, why: familyWhy(family, filtered, false) };
  });
}

function familyOf(p: Peer): PeerView['family'] {
  return neighborFamily(p) ?? 'both';
}

/** Why the address-family filter drops `filtered` for a neighbor of `family` (null when nothing is dropped). */
function familyWhy(family: PeerView['family'], filtered: readonly string[], nothing: boolean): string | null {
  if (filtered.length === 0 || (family !== 'ipv4' && family !== 'ipv6')) return null;
  const fam = familyName(family);
  return nothing ? `${fam} neighbor without dualStackAddressFamily: it gets ${fam} prefixes only, ${filtered.join(', ')} not sent` : `${filtered.join(', ')} not sent (${fam} neighbor)`;
}

/** The applicable advertisements of an announcing decision that reach no session on the node. */
export function undeliveredOf(decision: BGPNodeDecision, adPeers: ReadonlyMap<string, readonly string[]>): BGPNodeView['undelivered'] {
  if (decision.decision !== 'announce') return [];
  return decision.advertisements.filter((a) => a.peers.length === 0).map((a) => ({ advertisement: a.name, prefixes: [...new Set(a.prefixes)], specPeers: adPeers.get(a.name) ?? [] }));
}

/** Whether the node view reaches at least one router with a prefix. */
export function reachesRouter(n: BGPNodeView): boolean {
  return n.decision === 'announce' && n.peers.some((p) => p.prefixes.length > 0);
}

/** `n` restricted to the prefixes containing `ip` (whois): peers keep only those prefixes, filtered ones too. */
export function viewForIP(n: BGPNodeView, ip: IP): BGPNodeView {
  const holds = (prefix: string): boolean => {
    const c = parseCIDR(prefix);
    return c !== undefined && cidrContains(c, ip);
  };
  return {
    ...n,
    advertisements: n.advertisements.map((a) => ({ ...a, prefixes: a.prefixes.filter(holds) })).filter((a) => a.prefixes.length > 0),
    peers: n.peers.map((p): PeerView => {
      const prefixes = p.prefixes.filter((x) => holds(x.prefix));
      const filtered = p.filtered.filter(holds);
      if (p.outcome !== 'advertised') return { ...p, prefixes, filtered, why: p.outcome === 'addressFamily' ? familyWhy(p.family, filtered, true) : p.why };
      if (prefixes.length > 0) return { ...p, prefixes, filtered, why: familyWhy(p.family, filtered, false) };
      if (filtered.length > 0) return { ...p, prefixes, filtered, outcome: 'addressFamily', why: familyWhy(p.family, filtered, true) };
      return { ...p, prefixes, filtered, outcome: 'peersList', why: 'the BGPAdvertisements that send it prefixes send none for this address' };
    }),
    undelivered: n.undelivered.map((u) => ({ ...u, prefixes: u.prefixes.filter(holds) })).filter((u) => u.prefixes.length > 0),
  };
}
