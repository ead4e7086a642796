/**
 * "Nobody announces": whether a Service that holds an address from a pool is announced by no node
 * at all, and why, in words taken from the core's own decisions (the L2 election trace, the BGP
 * per-node verdicts); and which single speaker of the cluster reports it. MetalLB v0.16.1 leaves
 * one debug-level log line per speaker for this; metallb-ts's speaker turns it into one Warning
 * Event on the Service (and a gauge), from exactly one speaker (src/speaker/unannounced.ts).
 *
 * Pure: no I/O, no clock. Nothing here decides anything anew: the verdicts come from electL2 and
 * evaluateBGP; this module only reads them.
 */
import type { Pool } from '../config/types.ts';
import type { BGPEvaluation, L2Election } from '../election/types.ts';

/** Why no node announces a Service's addresses. */
export interface Unannounced {
  /** `namespace/name` */
  readonly service: string;
  /** The Service's ingress addresses, as the election canonicalised them. */
  readonly ips: readonly string[];
  /** The pool the addresses belong to. */
  readonly pool: string;
  /**
   * The announcement kinds the pool is set up for (`layer2`, `bgp`, both) — none when the pool
   * has neither an L2Advertisement nor a BGPAdvertisement.
   */
  readonly protocols: ReadonlyArray<'layer2' | 'bgp'>;
  /** Why, one line without the addresses, e.g. `no candidate node: node-a, node-b: labelled node.kubernetes.io/exclude-from-external-load-balancers`. */
  readonly reason: string;
  /** The Event message: `no node announces 192.0.2.10: <reason>`. */
  readonly message: string;
}

/** Input of unannouncedService. */
export interface UnannouncedInput {
  /**
   * The L2 election for the Service (electL2 with a speaker's accepted configuration: its L2 part
   * is the same on every node).
   */
  readonly l2: L2Election;
  /** The Service's pool in that configuration (its L2Advertisements), or undefined when none. */
  readonly pool: Pool | undefined;
  /**
   * The BGP verdicts of every Node with the whole cluster's BGPPeers and BGPAdvertisements
   * (evaluateBGP), or null when the pool has no BGPAdvertisement or they are not known.
   */
  readonly bgp: BGPEvaluation | null;
  /** Whether the pool has BGPAdvertisements in the whole cluster's configuration. */
  readonly hasBGP: boolean;
  /** Node names of the live speakers (memberlist's alive members); null: every Node (memberlist disabled). */
  readonly speakers: readonly string[] | null;
}

const MAX_NODES = 10;
const MAX_GROUPS = 4;

/** Names joined with ", "; past MAX_NODES the first ones and `and N more`. */
function names(list: readonly string[]): string {
  return list.length <= MAX_NODES ? list.join(', ') : `${list.slice(0, MAX_NODES).join(', ')} and ${list.length - MAX_NODES} more`;
}

/** `a, b: why; c: other` from (node, why) pairs, grouped by why in first-seen order, at most MAX_GROUPS groups. */
function grouped(pairs: ReadonlyArray<{ node: string; why: string }>): string {
  const byWhy = new Map<string, string[]>();
  for (const p of pairs) {
    const l = byWhy.get(p.why);
    if (l) l.push(p.node);
    else byWhy.set(p.why, [p.node]);
  }
  const parts = [...byWhy].map(([why, ns]) => `${names(ns)}: ${why}`);
  return parts.length <= MAX_GROUPS ? parts.join('; ') : `${parts.slice(0, MAX_GROUPS).join('; ')}; and ${parts.length - MAX_GROUPS} more reasons`;
}

/**
 * Why the L2 election has no winner, from its trace: the nodes each candidate filter dropped and
 * why (MetalLB's filters: speakers, NetworkUnavailable, the exclusion label, the advertisements'
 * nodeSelectors, local endpoints). null when the election has a winner or did not run as far as
 * the candidates.
 */
export function l2NobodyReason(l2: L2Election): string | null {
  if (l2.winner !== null || l2.serviceReason !== null) return null;
  if (l2.advertisements.length === 0) {
    return `no L2Advertisement of IPAddressPool "${l2.pool}" selects the Service (their serviceSelectors do not match its labels)`;
  }
  const drops: Array<{ node: string; why: string }> = [];
  for (const step of l2.trace) for (const d of step.dropped) drops.push(d);
  if (drops.length === 0) return 'no Node and no live speaker: no candidate node';
  return `no candidate node (${grouped(drops)})`;
}

/** Whether a node's BGP verdict reaches a router: `announce` with at least one peer to send to. */
function bgpReaches(d: BGPEvaluation['nodes'][number]): boolean {
  return d.decision === 'announce' && d.advertisements.some((a) => a.peers.length > 0);
}

/**
 * Why no live speaker advertises the Service over BGP, from the per-node verdicts: nodes grouped
 * by MetalLB's reason and its detail; a node that would advertise but has no BGP session (no
 * BGPPeer selects it, or the advertisements' `peers` name none of its sessions) says so. null when
 * some live speaker's node reaches a peer.
 */
export function bgpNobodyReason(bgp: BGPEvaluation, speakers: readonly string[] | null): string | null {
  const alive = speakers === null ? null : new Set(speakers);
  const live = bgp.nodes.filter((d) => alive === null || alive.has(d.node));
  if (live.some(bgpReaches)) return null;
  if (bgp.serviceReason !== null) return null;
  if (live.length === 0) return 'no live speaker on any Node';
  const pairs = live.map((d) => ({
    node: d.node,
    why: d.decision === 'announce' ? "eligible, but no BGP session to send it to (no BGPPeer selects the node, or the BGPAdvertisements' peers are not among its sessions)" : `${d.decision} (${d.detail})`,
  }));
  // The most telling first: eligible nodes without a session, then the rest in node order.
  pairs.sort((a, b) => Number(b.why.startsWith('eligible')) - Number(a.why.startsWith('eligible')));
  return `no live speaker advertises it to a BGP peer (${grouped(pairs)})`;
}

/**
 * Whether nobody announces the Service and why; null when some node announces it, or when the
 * Service holds no address of a pool (not a LoadBalancer, no address, an address outside every
 * pool: the controller's side, reported by its own events), or when it has no usable endpoint at
 * all (MetalLB announces nothing for an empty Service; that is the workload's state, not an
 * announcement problem).
 *
 * Layer 2 (the pool has L2Advertisements): nobody when the election has no winner. BGP (the pool
 * has BGPAdvertisements): nobody when no live speaker's node advertises to at least one peer. A
 * pool with both: nobody only when both fail. A pool with neither: MetalLB allocates from it and
 * announces nothing.
 *
 * Limits: the election counts every Node as a live speaker when memberlist is disabled; a winner
 * whose speaker is missing or rejects its configuration is not seen here.
 */
export function unannouncedService(input: UnannouncedInput): Unannounced | null {
  const { l2, pool, bgp, hasBGP, speakers } = input;
  if (l2.serviceReason !== null || l2.pool === null || l2.ips.length === 0) return null;
  const hasL2 = (pool?.l2Advertisements.length ?? 0) > 0;
  const protocols: Array<'layer2' | 'bgp'> = [];
  if (hasL2) protocols.push('layer2');
  if (hasBGP) protocols.push('bgp');
  let reason: string | null;
  if (!hasL2 && !hasBGP) {
    reason = `IPAddressPool "${l2.pool}" has no L2Advertisement and no BGPAdvertisement: MetalLB allocates from it but announces nothing`;
  } else {
    const l2Why = hasL2 ? l2NobodyReason(l2) : null;
    if (hasL2 && l2Why === null) return null;
    let bgpWhy: string | null = null;
    if (hasBGP) {
      if (bgp === null) return null; // not known: say nothing rather than guess
      bgpWhy = bgpNobodyReason(bgp, speakers);
      if (bgpWhy === null) return null;
    }
    reason = hasL2 && hasBGP ? `layer2: ${l2Why}; bgp: ${bgpWhy}` : (l2Why ?? bgpWhy)!;
  }
  return {
    service: l2.service,
    ips: l2.ips,
    pool: l2.pool,
    protocols,
    reason,
    message: `no node announces ${l2.ips.join(', ')}: ${reason}`,
  };
}

/**
 * The one speaker that reports unannounced Services for the whole cluster: the first live speaker
 * in name order (memberlist's alive members, which every speaker sees alike once gossip settles),
 * or — memberlist disabled — the first Node in name order. No coordination: every speaker computes
 * the same answer from what it knows. null when there is none.
 *
 * With memberlist disabled no speaker knows where the others run: if no speaker runs on the first
 * Node (a DaemonSet nodeSelector), nobody reports.
 */
export function reportingSpeaker(speakers: readonly string[] | null, nodes: readonly string[]): string | null {
  const from = speakers ?? nodes;
  let first: string | null = null;
  for (const n of from) if (n !== '' && (first === null || n < first)) first = n;
  return first;
}
