/**
 * Decision values of the speaker (design/style.md "Decisions are values"): a verdict — `announce`
 * or MetalLB v0.16.1's reason string —, a one-line human `detail` sentence, and the trace that led
 * there. The speaker acts on the verdict, `explain` renders the trace, tests compare verdicts.
 */

/** Reasons for not announcing that both protocols share (MetalLB `speaker/main.go` SetBalancer). */
export type ServiceReason = 'notLoadBalancer' | 'noIPAllocated' | 'invalidIP' | 'ipNotAllowed';

/**
 * Layer 2 reasons for not announcing, spelled as MetalLB v0.16.1 does: the service-level ones, then
 * `notOwner` (no usable endpoint, no candidate, or another node first in the hash order) and
 * `noMatchingAdvertisement` (no L2Advertisement applies to both the service and this node).
 */
export type L2Reason = ServiceReason | 'notOwner' | 'noMatchingAdvertisement';

/** What the speaker on one node does for one service in Layer 2 mode. */
export type L2Verdict = 'announce' | L2Reason;

/**
 * BGP reasons for not advertising (MetalLB v0.16.1 `speaker/bgp_controller.go` ShouldAnnounce):
 * `notOwner` (no BGPAdvertisement of the pool selects this node), `noMatchingAdvertisement` (none
 * of those also selects the service), `conflictingAdvertisements` (two applicable advertisements
 * disagree on LOCAL_PREF for the same prefix), `nodeNetworkUnavailable`,
 * `nodeLabeledExcludeBalancers`, `noLocalEndpoints` (Local policy, no usable endpoint with an
 * address on this node) and `noEndpoints` (no usable endpoint with an address anywhere).
 */
export type BGPReason = ServiceReason | 'notOwner' | 'noMatchingAdvertisement' | 'conflictingAdvertisements' | 'nodeNetworkUnavailable' | 'nodeLabeledExcludeBalancers' | 'noLocalEndpoints' | 'noEndpoints';

/** What the speaker on one node does for one service in BGP mode. */
export type BGPVerdict = 'announce' | BGPReason;

/**
 * The names of the service-level checks, in the order they are made (service.ts makes the first
 * four, l2.ts `endpoints`). Findings look checks up by these names (serviceCheck), so renaming one
 * fails the type check instead of silently switching a finding off.
 */
export type ServiceCheckName = 'type' | 'ingress' | 'ips' | 'pool' | 'endpoints';

/**
 * One service-level check (MetalLB steps 1–5: type, ingress, IP syntax, pool, endpoints), in the
 * order they are made. `ok: false` on the check that stopped the evaluation; later checks absent.
 */
export interface ServiceCheck {
  readonly check: ServiceCheckName;
  readonly ok: boolean;
  /** One line, e.g. `pool "default" contains 10.0.0.1`. */
  readonly detail: string;
}

/** A candidate dropped at a trace step, with the reason in words. */
export interface Dropped {
  readonly node: string;
  readonly why: string;
}

/**
 * The names of the L2 election's candidate filters (step 8), in MetalLB's order: `speakers`,
 * `networkUnavailable`, `excludeLB` (state-index.ts), `advertisement`, then `localEndpoints` for
 * Local policy (l2.ts). Findings and warnings look steps up by these names (traceStep), so
 * renaming one fails the type check instead of silently switching a finding off.
 */
export type L2TraceStepName = 'speakers' | 'networkUnavailable' | 'excludeLB' | 'advertisement' | 'localEndpoints';

/**
 * One candidate filter of the L2 election (step 8), in MetalLB's order (L2TraceStepName).
 * `kept` is sorted by node name; arrays may be shared between steps when nothing dropped (treat as
 * read-only). `note` says why a step did not filter (e.g. `--ignore-exclude-lb`).
 */
export interface TraceStep {
  readonly step: L2TraceStepName;
  readonly kept: readonly string[];
  readonly dropped: readonly Dropped[];
  readonly note?: string;
}

/** A candidate's place in the hash order: the node and hex SHA-256 of `node#ip`. */
export interface HashEntry {
  readonly node: string;
  readonly digest: string;
}

/**
 * Interfaces a node announces the service on when it is the winner: `all`, a sorted list of
 * interface names, or null when no applicable L2Advertisement selects the node.
 */
export type InterfaceSet = 'all' | readonly string[] | null;

/** The L2 decision of the speaker on one node for one service. */
export interface NodeDecision {
  readonly node: string;
  readonly decision: L2Verdict;
  /** One line for people, e.g. `not first in the hash order for 10.0.0.1: node-3 announces`. */
  readonly detail: string;
  readonly interfaces: InterfaceSet;
}

/**
 * The Layer 2 election for one service, computed once for the whole cluster (everything but step
 * 7b and the final comparison is node-independent). Plain data: JSON-serialisable as is.
 */
export interface L2Election {
  /** `namespace/name`. */
  readonly service: string;
  /** Ingress IPs in Go's canonical form, in ingress order (empty when invalid or absent). */
  readonly ips: readonly string[];
  /** The IPAddressPool containing every ingress IP, or null when none (or not reached). */
  readonly pool: string | null;
  /** Service-level checks (steps 1–5). */
  readonly checks: readonly ServiceCheck[];
  /** The reason every node gets when a service-level check fails, else null. */
  readonly serviceReason: L2Reason | null;
  /** Names of the L2Advertisements of the pool that select the service (step 7a), sorted. */
  readonly advertisements: readonly string[];
  /** The candidate set (step 8), sorted by name; empty when the evaluation stopped earlier. */
  readonly candidates: readonly string[];
  /** Candidates in hash order, first = winner. */
  readonly hashOrder: readonly HashEntry[];
  /** The IP whose hash orders the candidates (the first ingress IP), or null. */
  readonly hashedIP: string | null;
  /** The node that announces, or null. */
  readonly winner: string | null;
  /** The decision of the speaker on every Node object, in node name order. */
  readonly nodes: readonly NodeDecision[];
  /** The candidate filters in order (empty when the evaluation stopped at a service check). */
  readonly trace: readonly TraceStep[];
  /** One line summing up the election, e.g. `node-3 announces 10.0.0.1 (1 of 12 candidates)`. */
  readonly detail: string;
}

/** One BGPAdvertisement applied by a node, with what it makes the node advertise. */
export interface AppliedBGPAdvertisement {
  readonly name: string;
  /** Advertised prefixes, one per ingress IP (IP masked to the aggregation length), as `a/len`. */
  readonly prefixes: readonly string[];
  readonly aggregationLength: number;
  readonly aggregationLengthV6: number;
  readonly localPref: number;
  readonly communities: readonly string[];
  /** The BGPPeers it goes to: `spec.peers`, or every peer when empty; only peers with a session on the node. */
  readonly peers: readonly string[];
}

/** The BGP decision of the speaker on one node for one service. */
export interface BGPNodeDecision {
  readonly node: string;
  readonly decision: BGPVerdict;
  readonly detail: string;
  /** The advertisements that apply to the service on this node (empty unless `announce`). */
  readonly advertisements: readonly AppliedBGPAdvertisement[];
}

/** BGP decisions for one service on every Node object. No election: each node decides alone. */
export interface BGPEvaluation {
  readonly service: string;
  readonly ips: readonly string[];
  readonly pool: string | null;
  readonly checks: readonly ServiceCheck[];
  readonly serviceReason: BGPReason | null;
  /** In node name order. */
  readonly nodes: readonly BGPNodeDecision[];
}

/** The election's trace step named `name`, or undefined when the evaluation stopped before it (or, for `localEndpoints`, the policy is Cluster). */
export function traceStep(election: Pick<L2Election, 'trace'>, name: L2TraceStepName): TraceStep | undefined {
  return election.trace.find((s) => s.step === name);
}

/** The service-level check named `name`, or undefined when the evaluation stopped before it. */
export function serviceCheck(checks: readonly ServiceCheck[], name: ServiceCheckName): ServiceCheck | undefined {
  return checks.find((c) => c.check === name);
}
