/**
 * `explain`: one Service, end to end — its allocation (or why it is pending), the decision of the
 * speaker on every node with the election trace, the winner, the BGP prefixes per peer, and
 * findings with fixes. Everything here is assembled from the decision objects the controller
 * (allocateAll / reconcileService, with the controller's configuration) and each speaker (electL2
 * / evaluateBGP with that speaker's own configuration, frrConfiguration) act on; nothing
 * re-derives a decision.
 */
import { bgpSessions } from '../bgp/sessions.ts';
import type { Config } from '../config/types.ts';
import { allocateAll, type AllocateAllResult, type ServiceAllocationOutcome } from '../controller/index.ts';
import { filteredByLoadBalancerClass, statusIPs } from '../controller/service.ts';
import { buildElectionIndex, decideBGPForNode, electL2, evaluateBGP, type ElectionIndex } from '../election/index.ts';
import type { BGPEvaluation, BGPNodeDecision, HashEntry, L2Election } from '../election/types.ts';
import { compareStrings } from '../labels.ts';
import { DEFAULT_METALLB_NAMESPACE, namespacedName, type ClusterState, type KubeObject, type Service } from '../kube.ts';
import { peerViews, reachesRouter, undeliveredOf, type BGPNodeView, type BGPView } from './bgp.ts';
import { communityLimitError, routesFor } from '../bgp/routes.ts';
import { metallbView } from './context.ts';
import { findingsFor } from './findings.ts';
import type { AllocationView, ConfigurationView, ExplanationMode, Finding, FixHint, NodeView, SpeakersSource } from './types.ts';
import { poolOf } from './inputs.ts';
import { failoverBudget, failoverFindings, memberlistInForce, type FailoverBudget } from './failover.ts';
import { announcerFlapping, flappingFindings, type Flapping } from './flapping.ts';
import { reportedConfiguration } from './reported.ts';
import { rejectedEverywhere, speakerConfigView, type SpeakerConfigGroup, type SpeakerConfigs } from './speakers.ts';

/** Input of explainService (a DiagnosticContext plus the Service). */
export interface ExplainInput {
  readonly state: ClusterState;
  /** The controller's configuration (pools, communities): the allocation. */
  readonly controllerConfig: Config;
  /** Each speaker's own configuration: the speakers' decisions. */
  readonly speakerConfigs: SpeakerConfigs;
  readonly service: Service;
  /** Node names with a live speaker; null = every Node (memberlist disabled). */
  readonly speakers: readonly string[] | null;
  readonly speakersSource: SpeakersSource;
  readonly ignoreExcludeLB: boolean;
  /** A dry run of the whole snapshot, reused across calls (computed when absent and needed). */
  readonly dryRun?: AllocateAllResult;
  /** An election index of `state`, reused across calls. */
  readonly index?: ElectionIndex;
  /** MetalLB's `--lb-class` (default "": only Services without a class). */
  readonly loadBalancerClass?: string;
  /** metallb.io objects outside MetalLB's namespace (metallbView), for hints. */
  readonly ignoredObjects?: readonly KubeObject[];
  /** MetalLB's namespace (default metallb-system): the BGPPeers listed per node. */
  readonly metallbNamespace?: string;
  /** The fix hint when every speaker rejects the configuration (DiagnosticContext.repaired). */
  readonly repaired?: () => { readonly assuming: string; readonly context: Omit<ExplainInput, 'service'> } | null;
}

/** The result of explainService (its JSON form is documented in the README). */
export interface Explanation {
  /** `namespace/name`. */
  readonly service: string;
  /**
   * `layer2`, `bgp`, `layer2+bgp` (the pool has both kinds of advertisement in some speaker's
   * configuration) or `none`; when every speaker rejects its configuration, the mode of the fix
   * hint, else `none`.
   */
  readonly mode: ExplanationMode;
  readonly allocation: AllocationView;
  /** The controller's and each speaker's configuration status. */
  readonly configuration: ConfigurationView;
  /** Per node (name order): L2 decisions, or BGP decisions when the mode is `bgp`. */
  readonly nodes: readonly NodeView[];
  /** L2 candidates in hash order (first = winner); empty when no election ran. */
  readonly hashOrder: readonly HashEntry[];
  /** The node announcing the service in Layer 2, or null (also when the hash winner's speaker rejects its configuration). */
  readonly announcer: string | null;
  /** Nodes advertising the service over BGP: at least one prefix reaches a peer (after the address-family filter). */
  readonly bgpAnnouncers: readonly string[];
  /**
   * What the ServiceL2Status objects of the Service say (the speakers' own report): node and
   * interface names. Empty when the state has none for it.
   */
  readonly l2Status: ReadonlyArray<{ readonly node: string; readonly interfaces: readonly string[] }>;
  /** Where the live-speaker list came from, and the list (null = every node). */
  readonly speakers: { readonly source: SpeakersSource; readonly nodes: readonly string[] | null };
  readonly findings: readonly Finding[];
  /** When every speaker rejects the configuration and the fix is known (repeated entries): what would happen then. */
  readonly ifFixed: FixHint | null;
  /**
   * The L2 election of the speakers that accept their configuration (the L2 part of a speaker's
   * configuration does not depend on its node, so they all elect alike); null when none accepts.
   */
  readonly l2: L2Election | null;
  /** The BGP decision of every node's speaker with its own configuration, per peer; null when none accepts. */
  readonly bgp: BGPView | null;
  /** If the L2 announcer dies: how long until the next node answers (failover.ts); null without an L2 announcer. */
  readonly failover: FailoverBudget | null;
  /** The L2 announcement moving between nodes, from nodeAssigned Events and speaker restarts (flapping.ts); null when stable. */
  readonly flapping: Flapping | null;
}

/**
 * Why MetalLB leaves the Service alone, or null when it handles it: not of type LoadBalancer, or
 * filtered by loadBalancerClass (MetalLB `filterByLoadBalancerClass`: with `--lb-class` empty only
 * Services without a class, otherwise only that class) — controller and speakers alike.
 */
function whyIgnored(svc: Service, lbClass: string): { reason: string; byClass: boolean } | null {
  if (svc.spec?.type !== 'LoadBalancer') return { reason: `the Service is of type ${svc.spec?.type ?? 'ClusterIP'}, not LoadBalancer`, byClass: false };
  if (!filteredByLoadBalancerClass(svc, lbClass)) return null;
  const cls = svc.spec.loadBalancerClass ?? '';
  const reason = cls
    ? `spec.loadBalancerClass is "${cls}", but MetalLB runs ${lbClass ? `with --lb-class "${lbClass}"` : 'without --lb-class'}: its controller and speakers leave the Service to another implementation`
    : `the Service has no spec.loadBalancerClass, but MetalLB runs with --lb-class "${lbClass}": it only handles that class`;
  return { reason, byClass: true };
}

/** The Service with `ips` in its status, for running the speaker's decision on a predicted allocation. */
function withIngress(svc: Service, ips: readonly string[]): Service {
  return { ...svc, status: { ...(svc.status ?? {}), loadBalancer: { ingress: ips.map((ip) => ({ ip })) } } };
}

/** What a node whose speaker rejects its configuration does, in words. */
function rejectedDetail(error: string): string {
  return `its speaker rejects the configuration (${error}) and applies none of it: it keeps running the configuration it accepted last, which a snapshot cannot show`;
}

/**
 * What a node does when a BGP session on it gets an advertisement of the Service with more than
 * 63 communities (MetalLB v0.16.1: frr-k8s's session refuses it, the BGP handler's SetBalancer
 * fails, and SetBalancer returns before it handles layer2), in words.
 */
export function tooManyCommunitiesDetail(advertisement: string, count: number, peers: readonly string[], message: string): string {
  return (
    `BGPAdvertisement ${advertisement} gives the Service's prefixes ${count} communities and the session${peers.length === 1 ? '' : 's'} with ${peers.join(', ')} take${peers.length === 1 ? 's' : ''} at most 63 per advertisement: `
    + `the speaker fails to announce the Service ("${message}"), retries without end, and announces it from this node neither over BGP nor over layer2 (it handles layer2 after BGP)`
  );
}

/**
 * The election index restricted to `names` (for evaluateBGP, which reads only `nodes` and
 * `endpoints`): each group of speakers decides for its own nodes only.
 */
function indexFor(index: ElectionIndex, names: readonly string[]): ElectionIndex {
  const nodes = names.map((n) => index.byName.get(n)).filter((n): n is NonNullable<typeof n> => n !== undefined);
  return { ...index, nodes, nodeNames: nodes.map((n) => n.name), byName: new Map(nodes.map((n) => [n.name, n])), headCache: new Map(), selectionCache: new WeakMap() };
}

/**
 * The BGP view: every Node's speaker decides with its own configuration (evaluateBGP per group
 * of speakers sharing one), and each decision is expanded per BGPPeer (peerViews).
 */
function bgpViewOf(input: ExplainInput, service: Service, index: ElectionIndex, namespace: string): BGPView | null {
  const { state, speakerConfigs: configs, ignoreExcludeLB } = input;
  const accepted = configs.accepted;
  if (accepted.length === 0) return null;
  const evaluations = new Map<SpeakerConfigGroup, BGPEvaluation>();
  const shared = accepted.length === 1;
  for (const g of accepted) {
    if (!g.result.ok) continue;
    evaluations.set(g, evaluateBGP({ config: g.result.config, state, service, ignoreExcludeLB, index: shared ? index : indexFor(index, g.nodes) }));
  }
  // Each evaluation's decisions by node (the first of a name, as decideBGPForNode's scan finds
  // it): one lookup per node instead of a scan of every node's decision (500 nodes: 250,000 steps
  // per Service, which whatif pays twice per Service).
  const decisions = new Map<BGPEvaluation, Map<string, BGPNodeDecision>>();
  const decisionOf = (ev: BGPEvaluation, node: string): BGPNodeDecision => {
    let byNode = decisions.get(ev);
    if (!byNode) {
      byNode = new Map();
      for (const d of ev.nodes) if (!byNode.has(d.node)) byNode.set(d.node, d);
      decisions.set(ev, byNode);
    }
    return byNode.get(node) ?? decideBGPForNode(ev, node);
  };
  const first = evaluations.get(accepted[0]!)!;
  // The `spec.peers` of the Service's pool's BGPAdvertisements by name, once per configuration.
  const adPeersByConfig = new Map<Config, Map<string, readonly string[]>>();
  const adPeersOf = (config: Config): Map<string, readonly string[]> => {
    let adPeers = adPeersByConfig.get(config);
    if (!adPeers) {
      const pool = first.pool ? config.pools.get(first.pool) : undefined;
      adPeers = new Map((pool?.bgpAdvertisements ?? []).map((a) => [a.name, a.peers]));
      adPeersByConfig.set(config, adPeers);
    }
    return adPeers;
  };
  const peerCRs = metallbView(state, namespace).state.bgpPeers;
  const crByName = new Map(peerCRs.map((c) => [c.metadata?.name ?? '', c]));
  const nodes = index.nodes.map((info): BGPNodeView => {
    const g = configs.byNode.get(info.name);
    if (!g?.result.ok) {
      const error = g && !g.result.ok ? g.result.error.message : 'no configuration';
      return { node: info.name, decision: 'configRejected', detail: rejectedDetail(error), advertisements: [], peers: [], undelivered: [] };
    }
    const config = g.result.config;
    const d = decisionOf(evaluations.get(g)!, info.name);
    const sessions = bgpSessions(config, info.node?.metadata?.labels);
    // No session and no advertisement (a layer2-only configuration): no peer to list, no route,
    // nothing undelivered; what peerViews, communityLimitError and undeliveredOf give then.
    if (sessions.length === 0 && d.advertisements.length === 0) {
      return { node: info.name, decision: d.decision, detail: d.detail, advertisements: d.advertisements, peers: [], undelivered: [] };
    }
    const adPeers = adPeersOf(config);
    const peers = peerViews(info.name, namespace, d, sessions, crByName, adPeers);
    const refused = communityLimitError(routesFor(d));
    if (refused) {
      // MetalLB's BGP handler fails on this node: nothing reaches any peer, and layer2 is skipped.
      const ad = d.advertisements.find((a) => a.communities.length === refused.route.communities.length && a.peers.length > 0);
      const why = `not sent: the speaker fails on the community limit (${refused.message})`;
      return {
        node: info.name,
        decision: 'syncError',
        detail: tooManyCommunitiesDetail(ad?.name ?? '?', refused.route.communities.length, refused.route.peers, refused.message),
        advertisements: d.advertisements,
        undelivered: [],
        peers: peers.map((p) => (p.outcome === 'advertised' ? { ...p, outcome: 'notAnnounced', prefixes: [], filtered: [], why } : p)),
      };
    }
    return {
      node: info.name,
      decision: d.decision,
      detail: d.detail,
      advertisements: d.advertisements,
      peers,
      undelivered: undeliveredOf(d, adPeers),
    };
  });
  return { pool: first.pool, checks: first.checks, serviceReason: first.serviceReason, peers: [...crByName.keys()].sort(compareStrings), nodes };
}

/**
 * Explains one Service. Pure: reads `input`, returns a plain JSON-serialisable object (no Maps,
 * no bigints). The allocation comes from the controller's configuration: when the Service has no
 * address in its status yet, the addresses the allocator would give it (a dry run over the whole
 * snapshot, existing statuses first) are used for the speakers' decisions, and the allocation
 * status says `predicted`. Each node's decision comes from its own speaker's configuration: a
 * speaker that rejects its configuration decides `configRejected` and announces nothing new.
 */
export function explainService(input: ExplainInput): Explanation {
  const { state, controllerConfig, speakerConfigs: configs, service, speakers, ignoreExcludeLB } = input;
  const key = namespacedName(service);
  const lbClass = input.loadBalancerClass ?? '';
  const namespace = input.metallbNamespace ?? DEFAULT_METALLB_NAMESPACE;
  const ignored = whyIgnored(service, lbClass);
  const current = statusIPs(service);

  let dryRun: ServiceAllocationOutcome | null = null;
  let dryRunPools: AllocateAllResult['pools'] = [];
  let passLimit: number | null = null;
  let allocation: AllocationView;
  let electedService = service;
  if (ignored) {
    allocation = { ips: current, pool: null, status: 'ignored', reason: ignored.reason, dryRun: null };
  } else {
    const run = input.dryRun ?? allocateAll(controllerConfig, state.services, { loadBalancerClass: lbClass });
    dryRun = run.services.find((s) => s.service === key) ?? null;
    dryRunPools = run.pools;
    if (run.passLimitReached) passLimit = run.passes;
    if (current.length > 0) {
      allocation = {
        // The pool the controller attributes the status addresses to when it keeps them; else the
        // pool holding them (none for addresses another implementation wrote).
        ips: current,
        pool: dryRun && sameSet(dryRun.ips, current) ? dryRun.pool : statusPool(controllerConfig, current),
        status: 'assigned',
        reason: dryRun?.error ? `in status.loadBalancer.ingress, but the controller would not keep it: ${dryRun.error}` : 'from status.loadBalancer.ingress',
        dryRun,
      };
    } else if (dryRun && dryRun.ips.length > 0) {
      allocation = {
        ips: dryRun.ips,
        pool: dryRun.pool,
        status: 'predicted',
        reason: 'no address in status yet: these are the addresses the allocator would give it',
        dryRun,
      };
      electedService = withIngress(service, dryRun.ips);
    } else {
      allocation = { ips: [], pool: null, status: 'pending', reason: dryRun?.error ?? 'no address could be allocated', dryRun };
    }
  }

  const index = input.index ?? buildElectionIndex(state, speakers);
  const accepted = configs.accepted;
  const firstConfig = accepted[0]?.result.ok ? accepted[0].result.config : null;
  // Every accepting speaker elects with its own configuration; their L2 parts are parsed from the
  // same pools and L2Advertisements (only BGPPeers and BGPAdvertisements are filtered by node),
  // so one election stands for all of them.
  const l2 = firstConfig ? electL2({ config: firstConfig, state, service: electedService, speakers, ignoreExcludeLB, index }) : null;
  const bgp = bgpViewOf(input, electedService, index, namespace);
  const poolName = l2?.pool ?? null;
  let hasL2 = false;
  let hasBGP = false;
  for (const g of accepted) {
    const pool = g.result.ok && poolName ? g.result.config.pools.get(poolName) : undefined;
    if ((pool?.l2Advertisements.length ?? 0) > 0) hasL2 = true;
    if ((pool?.bgpAdvertisements.length ?? 0) > 0) hasBGP = true;
  }
  let mode: Explanation['mode'] = hasL2 && hasBGP ? 'layer2+bgp' : hasL2 ? 'layer2' : hasBGP ? 'bgp' : 'none';

  let ifFixed: FixHint | null = null;
  if (accepted.length === 0 && rejectedEverywhere(configs) && input.repaired) {
    const r = input.repaired();
    if (r) {
      const e = explainService({ ...r.context, service });
      ifFixed = { assuming: r.assuming, mode: e.mode, announcer: e.announcer, bgpAnnouncers: e.bgpAnnouncers };
      mode = e.mode;
    }
  }

  const errorOf = (node: string): string | null => {
    const g = configs.byNode.get(node);
    return g && !g.result.ok ? g.result.error.message : null;
  };
  /** The node's BGP view when its speaker fails on the community limit (then it skips layer2 too). */
  const bgpFailures = new Map((bgp?.nodes ?? []).filter((n) => n.decision === 'syncError').map((n) => [n.node, n]));
  const bgpFailure = (node: string): BGPNodeView | null => bgpFailures.get(node) ?? null;
  const hashWinner = l2?.winner ?? null;
  const winnerError = hashWinner ? errorOf(hashWinner) : null;
  let nodes: NodeView[];
  if (mode === 'bgp' && bgp) {
    nodes = bgp.nodes.map((n) => ({ node: n.node, decision: n.decision, detail: n.detail, interfaces: null }));
  } else if (l2) {
    const lost = `${hashWinner} announces`;
    const lostNow = `${hashWinner} is first, but its speaker rejects the configuration: nobody announces`;
    nodes = l2.nodes.map((n) => {
      const err = errorOf(n.node);
      const failed = bgpFailure(n.node);
      if (err === null && failed && n.decision === 'announce') {
        return { node: n.node, decision: 'syncError', detail: `first in the hash order, but ${failed.detail}`, interfaces: n.interfaces };
      }
      if (err !== null) {
        const detail = n.node === hashWinner && l2.hashedIP ? `first in the hash order of ${l2.hashedIP}, but ${rejectedDetail(err)}` : rejectedDetail(err);
        return { node: n.node, decision: 'configRejected', detail, interfaces: n.interfaces };
      }
      if (winnerError !== null && n.decision === 'notOwner' && n.detail.endsWith(lost)) {
        return { ...n, detail: n.detail.slice(0, -lost.length) + lostNow };
      }
      return { node: n.node, decision: n.decision, detail: n.detail, interfaces: n.interfaces };
    });
  } else {
    nodes = index.nodes.map((n) => ({ node: n.name, decision: 'configRejected', detail: rejectedDetail(errorOf(n.name) ?? 'no configuration'), interfaces: null }));
  }
  // A BGP "announce" reaches a router only through a session that gets a prefix.
  let bgpAnnouncers = hasBGP && bgp ? bgp.nodes.filter(reachesRouter).map((n) => n.node) : [];
  let announcer = winnerError === null && (hashWinner === null || bgpFailure(hashWinner) === null) ? hashWinner : null;
  let hashOrder = l2?.hashOrder ?? [];
  if (ignored?.byClass) {
    // The speakers filter the Service out before any decision: nobody announces it.
    nodes = index.nodes.map((n) => ({ node: n.name, decision: 'ignored', detail: ignored.reason, interfaces: null }));
    bgpAnnouncers = [];
    announcer = null;
    hashOrder = [];
  }

  const configuration: ConfigurationView = {
    controller: 'accepted',
    speakers: configs.groups.map(speakerConfigView),
    reported: reportedConfiguration(state, namespace, configs, { accepted: true, error: null }),
  };
  const partial = {
    service: key,
    mode,
    allocation,
    configuration,
    nodes,
    hashOrder,
    announcer,
    bgpAnnouncers,
    l2Status: l2StatusOf(state, service),
    speakers: { source: input.speakersSource, nodes: speakers },
    ifFixed,
    l2,
    bgp,
  } as const;
  const pool = firstConfig && poolName ? firstConfig.pools.get(poolName) : undefined;
  const findings = findingsFor({
    ...partial,
    state,
    pool,
    speakerConfigs: configs,
    hashWinner,
    metallbNamespace: namespace,
    ignoreExcludeLB,
    serviceObject: service,
    ignoredObjects: input.ignoredObjects ?? [],
    controllerConfig,
    dryRunPools,
    passLimit,
  });
  const failover =
    announcer && (mode === 'layer2' || mode === 'layer2+bgp')
      ? failoverBudget({
          announcer,
          next: hashOrder[1]?.node ?? null,
          members: speakers?.length ?? index.nodes.length,
          memberlist: memberlistInForce(state, namespace, input.speakersSource),
        })
      : null;
  const flapping =
    !ignored && (mode === 'layer2' || mode === 'layer2+bgp')
      ? announcerFlapping(
          state,
          service,
          hashOrder.map((h) => h.node),
        )
      : null;
  return {
    ...partial,
    findings: [...findings, ...flappingFindings(flapping, l2?.advertisements ?? [], namespace), ...failoverFindings(failover)],
    failover,
    flapping,
  };
}

/** Whether two address lists hold the same addresses. */
function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join() === [...b].sort().join();
}

/** The one pool of `config` holding every address of `ips`, or null (none, or not one pool). */
function statusPool(config: Config, ips: readonly string[]): string | null {
  const pools = ips.map((ip) => poolOf(config, ip));
  return pools.length > 0 && pools.every((p) => p !== null && p === pools[0]) ? pools[0]! : null;
}

/** The ServiceL2Status objects of `svc` as `{node, interfaces}`, in state order. */
export function l2StatusOf(state: ClusterState, svc: Service): Array<{ node: string; interfaces: string[] }> {
  const ns = svc.metadata?.namespace ?? 'default';
  const name = svc.metadata?.name ?? '';
  return state.serviceL2Statuses
    .filter((s) => s.status?.serviceNamespace === ns && s.status?.serviceName === name && s.status?.node)
    .map((s) => ({ node: s.status!.node!, interfaces: (s.status?.interfaces ?? []).map((i) => i?.name ?? '').filter(Boolean) }));
}

/** Whether the explanation ends in "somebody announces the service" (exit status 0 of `explain`). */
export function isAnnounced(e: Explanation): boolean {
  return e.announcer !== null || e.bgpAnnouncers.length > 0;
}
