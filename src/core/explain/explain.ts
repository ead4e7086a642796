/**
 * `explain`: one Service, end to end — its allocation (or why it is pending), the decision of the
 * speaker on every node with the election trace, the winner, and findings with fixes. Everything
 * here is assembled from the decision objects the controller (allocateAll / reconcileService) and
 * the speaker (electL2 / evaluateBGP) act on; nothing re-derives a decision.
 */
import type { Config } from '../config/types.ts';
import { allocateAll, type AllocateAllResult, type ServiceAllocationOutcome } from '../controller/index.ts';
import { statusIPs } from '../controller/service.ts';
import { buildElectionIndex, electL2, evaluateBGP, type ElectionIndex } from '../election/index.ts';
import type { BGPEvaluation, BGPNodeDecision, HashEntry, InterfaceSet, L2Election } from '../election/types.ts';
import { namespacedName, type ClusterState, type KubeObject, type Service } from '../kube.ts';
import { findingsFor, type Finding } from './findings.ts';

/**
 * Where the list of live speakers came from: `flag` (`--speakers`), `memberlist` (a running
 * speaker's memberlist: its alive and suspect members), `memberlist-disabled` (a running speaker
 * without memberlist: every Node), `speaker-pods` (nodes with a Ready speaker pod), `all-nodes`
 * (no speaker pods in the state: every Node).
 */
export type SpeakersSource = 'flag' | 'memberlist' | 'memberlist-disabled' | 'speaker-pods' | 'all-nodes';

/** Input of explainService. */
export interface ExplainInput {
  readonly state: ClusterState;
  readonly config: Config;
  readonly service: Service;
  /** Node names with a live speaker; null = every Node (memberlist disabled). */
  readonly speakers: readonly string[] | null;
  readonly speakersSource: SpeakersSource;
  readonly ignoreExcludeLB: boolean;
  /** A dry run of the whole snapshot, reused across calls (computed when absent and needed). */
  readonly dryRun?: AllocateAllResult;
  /** An election index of `state`, reused across calls. */
  readonly index?: ElectionIndex;
  /** MetalLB's error when it rejects the configuration for repeated entries only (diagnosticConfig). */
  readonly configRejected?: { readonly message: string } | null;
  /** MetalLB's `--lb-class` (default "": only Services without a class). */
  readonly loadBalancerClass?: string;
  /** metallb.io objects outside MetalLB's namespace (metallbView), for hints. */
  readonly ignoredObjects?: readonly KubeObject[];
}

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

/** The decision of the speaker on one node, as rendered (L2 when the pool has L2Advertisements, else BGP). */
export interface NodeView {
  readonly node: string;
  /**
   * `announce` or MetalLB's reason string; `ignored` when MetalLB filters the Service out by
   * loadBalancerClass before deciding anything (MetalLB has no reason string for that).
   */
  readonly decision: string;
  readonly detail: string;
  /**
   * L2: the interfaces the node answers on when it is (or would be) the winner — defined for
   * every node an applicable L2Advertisement selects; null otherwise and in BGP mode.
   */
  readonly interfaces: InterfaceSet;
}

/** The result of explainService (its JSON form is documented in the README). */
export interface Explanation {
  /** `namespace/name`. */
  readonly service: string;
  /** `layer2`, `bgp`, `layer2+bgp` (the pool has both kinds of advertisement) or `none`. */
  readonly mode: 'layer2' | 'bgp' | 'layer2+bgp' | 'none';
  readonly allocation: AllocationView;
  /** Per node (name order): L2 decisions, or BGP decisions when the mode is `bgp`. */
  readonly nodes: readonly NodeView[];
  /** L2 candidates in hash order (first = winner); empty when no election ran. */
  readonly hashOrder: readonly HashEntry[];
  /** The node announcing the service in Layer 2, or null. */
  readonly announcer: string | null;
  /** Nodes advertising the service over BGP. */
  readonly bgpAnnouncers: readonly string[];
  /**
   * What the ServiceL2Status objects of the Service say (the speakers' own report): node and
   * interface names. Empty when the state has none for it.
   */
  readonly l2Status: ReadonlyArray<{ readonly node: string; readonly interfaces: readonly string[] }>;
  /** Where the live-speaker list came from, and the list (null = every node). */
  readonly speakers: { readonly source: SpeakersSource; readonly nodes: readonly string[] | null };
  readonly findings: readonly Finding[];
  /** The full L2 election (trace of every candidate filter). */
  readonly l2: L2Election;
  /** The full BGP evaluation. */
  readonly bgp: BGPEvaluation;
}

/**
 * Why MetalLB leaves the Service alone, or null when it handles it: not of type LoadBalancer, or
 * filtered by loadBalancerClass (MetalLB `filterByLoadBalancerClass`: with `--lb-class` empty only
 * Services without a class, otherwise only that class) — controller and speakers alike.
 */
function whyIgnored(svc: Service, lbClass: string): { reason: string; byClass: boolean } | null {
  if (svc.spec?.type !== 'LoadBalancer') return { reason: `the Service is of type ${svc.spec?.type ?? 'ClusterIP'}, not LoadBalancer`, byClass: false };
  const cls = svc.spec.loadBalancerClass ?? '';
  if (cls === lbClass) return null;
  const reason = cls
    ? `spec.loadBalancerClass is "${cls}", but MetalLB runs ${lbClass ? `with --lb-class "${lbClass}"` : 'without --lb-class'}: its controller and speakers leave the Service to another implementation`
    : `the Service has no spec.loadBalancerClass, but MetalLB runs with --lb-class "${lbClass}": it only handles that class`;
  return { reason, byClass: true };
}

/** The Service with `ips` in its status, for running the speaker's decision on a predicted allocation. */
function withIngress(svc: Service, ips: readonly string[]): Service {
  return { ...svc, status: { ...(svc.status ?? {}), loadBalancer: { ingress: ips.map((ip) => ({ ip })) } } };
}

/**
 * Explains one Service. Pure: reads `input`, returns a plain JSON-serialisable object (no Maps,
 * no bigints). When the Service has no address in its status yet, the addresses the allocator
 * would give it (a dry run over the whole snapshot, existing statuses first) are used for the
 * election, and the allocation status says `predicted`.
 */
export function explainService(input: ExplainInput): Explanation {
  const { state, config, service, speakers, ignoreExcludeLB } = input;
  const key = namespacedName(service);
  const lbClass = input.loadBalancerClass ?? '';
  const ignored = whyIgnored(service, lbClass);
  const current = statusIPs(service);

  let dryRun: ServiceAllocationOutcome | null = null;
  let allocation: AllocationView;
  let electedService = service;
  if (ignored) {
    allocation = { ips: current, pool: null, status: 'ignored', reason: ignored.reason, dryRun: null };
  } else {
    const run = input.dryRun ?? allocateAll(config, state.services, { loadBalancerClass: lbClass });
    dryRun = run.services.find((s) => s.service === key) ?? null;
    if (current.length > 0) {
      allocation = {
        ips: current, pool: dryRun?.pool ?? null, status: 'assigned',
        reason: dryRun?.error ? `in status.loadBalancer.ingress, but the controller would not keep it: ${dryRun.error}` : 'from status.loadBalancer.ingress',
        dryRun,
      };
    } else if (dryRun && dryRun.ips.length > 0) {
      allocation = {
        ips: dryRun.ips, pool: dryRun.pool, status: 'predicted',
        reason: 'no address in status yet: these are the addresses the allocator would give it', dryRun,
      };
      electedService = withIngress(service, dryRun.ips);
    } else {
      allocation = { ips: [], pool: null, status: 'pending', reason: dryRun?.error ?? 'no address could be allocated', dryRun };
    }
  }

  const index = input.index ?? buildElectionIndex(state, speakers);
  const l2 = electL2({ config, state, service: electedService, speakers, ignoreExcludeLB, index });
  const bgp = evaluateBGP({ config, state, service: electedService, ignoreExcludeLB, index });
  const pool = l2.pool ? config.pools.get(l2.pool) : undefined;
  const hasL2 = !!pool && pool.l2Advertisements.length > 0;
  const hasBGP = !!pool && pool.bgpAdvertisements.length > 0;
  const mode = hasL2 && hasBGP ? 'layer2+bgp' : hasL2 ? 'layer2' : hasBGP ? 'bgp' : 'none';
  let nodes: NodeView[] = mode === 'bgp'
    ? bgp.nodes.map((n) => ({ node: n.node, decision: n.decision, detail: n.detail, interfaces: null }))
    : l2.nodes.map((n) => ({ node: n.node, decision: n.decision, detail: n.detail, interfaces: n.interfaces }));
  // A BGP "announce" reaches a router only through a session on that node.
  let bgpAnnouncers = hasBGP ? bgp.nodes.filter((n) => n.decision === 'announce' && hasBGPSession(n)).map((n) => n.node) : [];
  let announcer = l2.winner;
  let hashOrder = l2.hashOrder;
  if (ignored?.byClass) {
    // The speakers filter the Service out before any decision: nobody announces it.
    nodes = l2.nodes.map((n) => ({ node: n.node, decision: 'ignored', detail: ignored.reason, interfaces: null }));
    bgpAnnouncers = [];
    announcer = null;
    hashOrder = [];
  }

  const partial = {
    service: key, mode, allocation, nodes, hashOrder, announcer, bgpAnnouncers, l2Status: l2StatusOf(state, service),
    speakers: { source: input.speakersSource, nodes: speakers }, l2, bgp,
  } as const;
  const findings = findingsFor({ ...partial, state, config, ignoreExcludeLB, serviceObject: service, configRejected: input.configRejected?.message ?? null, ignoredObjects: input.ignoredObjects ?? [] });
  return { ...partial, findings };
}

/** The ServiceL2Status objects of `svc` as `{node, interfaces}`, in state order. */
export function l2StatusOf(state: ClusterState, svc: Service): Array<{ node: string; interfaces: string[] }> {
  const ns = svc.metadata?.namespace ?? 'default';
  const name = svc.metadata?.name ?? '';
  return state.serviceL2Statuses
    .filter((s) => s.status?.serviceNamespace === ns && s.status?.serviceName === name && s.status?.node)
    .map((s) => ({ node: s.status!.node!, interfaces: (s.status?.interfaces ?? []).map((i) => i?.name ?? '').filter(Boolean) }));
}

/** Whether a node's BGP "announce" goes to at least one peer with a session on the node. */
export function hasBGPSession(n: BGPNodeDecision): boolean {
  return n.advertisements.some((a) => a.peers.length > 0);
}

/** Whether the explanation ends in "somebody announces the service" (exit status 0 of `explain`). */
export function isAnnounced(e: Explanation): boolean {
  return e.announcer !== null || e.bgpAnnouncers.length > 0;
}
