/**
 * The shapes `explain`'s parts share: the finding, the allocation, node and configuration views, the
 * speakers' source and the fix hint. Kept apart from the modules that build them (explain.ts,
 * findings.ts, allocation.ts, inputs.ts, hand-endpoints.ts, context.ts) so that each of those imports
 * the shapes, not the other's code: no import cycle among them (issue #13).
 */
import type { ServiceAllocationOutcome } from '../controller/index.ts';
import type { BGPVerdict, InterfaceSet, L2Verdict } from '../election/types.ts';
import type { ReportedConfiguration } from './reported.ts';
import type { SpeakerConfigView } from './speakers.ts';

/** `error`: the service is not announced because of it; `warning`: likely a mistake; `info`: worth knowing. */
export type Severity = 'error' | 'warning' | 'info';

/** Every finding's id (the list in Finding's comment); a rename fails the type check where a finding is looked up. */
export type FindingId =
  | 'advertisement-selects-no-node'
  | 'all-nodes'
  | 'allocation-failed'
  | 'announce-failed'
  | 'allocation-family-changed'
  | 'allocation-nondeterministic'
  | 'allocation-oscillates'
  | 'allocation-pass-limit'
  | 'bgp-advertisement-peer-no-session'
  | 'bgp-advertisement-unknown-peer'
  | 'bgp-family-filtered'
  | 'bgp-localpref-conflict'
  | 'bgp-no-peer-session'
  | 'bgp-too-many-communities'
  | 'bgppeer-selects-no-node'
  | 'cluster-ip-invalid'
  | 'config-rejected'
  | 'config-rejected-on-nodes'
  | 'configuration-state-disagrees'
  | 'controller-internal-error'
  | 'deprecated-annotation'
  | 'exclusion-label-empty-value'
  | 'external-ips-not-handled'
  | 'family-not-dual-stack'
  | 'foreign-address-in-pool'
  | 'ingress-from-other-controller'
  | 'ip-not-in-pool'
  | 'ip-predicted'
  | 'l2-unintended-interfaces'
  | 'l2status-disagrees'
  | 'load-balancer-ip-from-other-controller'
  | 'local-no-endpoint-on-candidate'
  | 'memberlist-disabled'
  | 'network-unavailable'
  | 'no-advertisement'
  | 'no-cluster-ip'
  | 'no-failover'
  | 'no-live-speakers'
  | 'no-nodes'
  | 'no-pools'
  | 'no-ready-endpoints'
  | 'nodeassigned-event-disagrees'
  | 'nodeselector-only-excluded'
  | 'not-load-balancer'
  | 'other-load-balancer-class'
  | 'pool-contains-node-address'
  | 'pool-exhausted'
  | 'pool-lacks-family'
  | 'pool-overlaps-pod-cidr'
  | 'pool-overlaps-service-cidr'
  | 'pool-refuses-service'
  | 'requested-ips-invalid'
  | 'sharing-conflict'
  | 'speaker-pods'
  | 'status-ip-not-kept'
  | 'unknown-annotation'
  | 'unknown-pool'
  | 'unknown-speaker-nodes'
  | 'unstable-announcer';

/**
 * One finding. `id` is stable (documented in the README): `config-rejected`,
 * `config-rejected-on-nodes`, `not-load-balancer`, `other-load-balancer-class`, `ip-predicted`,
 * `allocation-failed`, `pool-exhausted`, `pool-lacks-family`, `pool-refuses-service`, `unknown-pool`,
 * `requested-ips-invalid`, `family-not-dual-stack`, `cluster-ip-invalid`, `no-pools`,
 * `allocation-family-changed`, `controller-internal-error` (allocation.ts), `sharing-conflict`, `ip-not-in-pool`,
 * `status-ip-not-kept`, `allocation-nondeterministic`, `no-ready-endpoints`, `no-advertisement`,
 * `advertisement-selects-no-node`, `nodeselector-only-excluded`, `exclusion-label-empty-value`,
 * `no-live-speakers`, `network-unavailable`, `local-no-endpoint-on-candidate`,
 * `l2status-disagrees`, `nodeassigned-event-disagrees`, `announce-failed`, `bgp-no-peer-session`,
 * `bgp-advertisement-unknown-peer`, `bgp-advertisement-peer-no-session`,
 * `bgppeer-selects-no-node`, `bgp-localpref-conflict`, `bgp-family-filtered`, `bgp-too-many-communities`, `no-cluster-ip`,
 * `unknown-speaker-nodes`, `no-nodes`; inputs MetalLB ignores (inputs.ts): `unknown-annotation`,
 * `deprecated-annotation`, `external-ips-not-handled`, `ingress-from-other-controller`,
 * `load-balancer-ip-from-other-controller`, `foreign-address-in-pool`; dangerous configurations
 * (hazards.ts): `pool-contains-node-address`, `pool-overlaps-pod-cidr`, `pool-overlaps-service-cidr`,
 * `l2-unintended-interfaces`.
 */
export interface Finding {
  readonly id: FindingId;
  readonly severity: Severity;
  readonly message: string;
  readonly fix: string;
}

/**
 * Where the list of live speakers came from: `flag` (`--speakers`), `memberlist` (a running
 * speaker's memberlist: its alive and suspect members), `memberlist-disabled` (a running speaker
 * without memberlist: every Node), `speaker-pods` (nodes with a Ready speaker pod), `all-nodes`
 * (no speaker pods in the state: every Node).
 */
export type SpeakersSource = 'flag' | 'memberlist' | 'memberlist-disabled' | 'speaker-pods' | 'all-nodes';

/**
 * How the Service is announced: `layer2`, `bgp`, `layer2+bgp` (the pool has both kinds of
 * advertisement in some speaker's configuration) or `none`.
 */
export type ExplanationMode = 'layer2' | 'bgp' | 'layer2+bgp' | 'none';

/**
 * How the service's addresses were found: `assigned` (in `status.loadBalancer.ingress`),
 * `predicted` (no status yet: what the allocator would give), `pending` (the allocator would give
 * none), `ignored` (not a LoadBalancer, or another loadBalancerClass).
 */
export type AllocationStatus = 'assigned' | 'predicted' | 'pending' | 'ignored';

/** The allocation part of an explanation. */
export interface AllocationView {
  readonly ips: readonly string[];
  readonly pool: string | null;
  readonly status: AllocationStatus;
  /** One line: why pending / ignored, or where the addresses come from. */
  readonly reason: string | null;
  /** The controller's dry-run outcome for the service (pools tried, errors), when it ran. */
  readonly dryRun: ServiceAllocationOutcome | null;
}

/**
 * A node's decision as `explain` shows it: the election's verdict (L2Verdict, or BGPVerdict in BGP
 * mode), or one of explain's own: `syncError` (the speaker would fail to apply it: e.g. too many
 * communities), `configRejected` (the speaker rejects its configuration), `ignored` (filtered out
 * by loadBalancerClass). Findings look decisions up by these names; a rename fails the type check.
 */
export type NodeVerdict = L2Verdict | BGPVerdict | 'syncError' | 'configRejected' | 'ignored';

/** The decision of the speaker on one node, as rendered (L2 when the pool has L2Advertisements, else BGP). */
export interface NodeView {
  readonly node: string;
  /**
   * `announce` or MetalLB's reason string; `configRejected` when the node's speaker rejects its
   * configuration (it applies none of it); `ignored` when MetalLB filters the Service out by
   * loadBalancerClass before deciding anything (MetalLB has no reason string for either).
   */
  readonly decision: NodeVerdict;
  readonly detail: string;
  /**
   * L2: the interfaces the node answers on when it is (or would be) the winner — defined for
   * every node an applicable L2Advertisement selects; null otherwise and in BGP mode.
   */
  readonly interfaces: InterfaceSet;
}

/** Who runs which configuration (`configuration` in `explain -o json`). */
export interface ConfigurationView {
  /** Always `accepted` in an explanation: a configuration the controller rejects is exit 2. */
  readonly controller: 'accepted';
  /** Every speaker (Node objects, and live speakers without one), grouped by identical configuration. */
  readonly speakers: readonly SpeakerConfigView[];
  /**
   * What the components themselves report (their ConfigurationStates in MetalLB's namespace),
   * each compared with what this snapshot's configuration makes it do. Empty when the state has none.
   */
  readonly reported: readonly ReportedConfiguration[];
}

/** A fix hint: what would change once the configuration is fixed as `assuming` says (never the truth). */
export interface FixHint {
  readonly assuming: string;
  readonly mode: ExplanationMode;
  readonly announcer: string | null;
  readonly bgpAnnouncers: readonly string[];
}
