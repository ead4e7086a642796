/**
 * Per-state precomputation shared by every service's election: EndpointSlices grouped by service,
 * the Node objects sorted by name with their NetworkUnavailable and exclusion status and hash keys,
 * and (cached) the service-independent head of the L2 candidate pipeline (speakers,
 * NetworkUnavailable, exclusion label). Build once per ClusterState (and speaker list) and pass it
 * to every electL2/evaluateBGP call; rebuild when the state changes.
 */
import { carriesExclusionLabel, EXCLUDE_LB_LABEL, type ClusterState, type Node } from '../kube.ts';
import { buildEndpointIndex, type EndpointIndex } from './endpoints.ts';
import { nodeHashKey, type NodeHashKey } from './hash.ts';
import type { Dropped, L2TraceStepName, TraceStep } from './types.ts';

/** A node as the election sees it. `node` is null for a live speaker without a Node object. */
export interface NodeInfo {
  readonly name: string;
  readonly node: Node | null;
  /** Index in ElectionIndex.nodes (-1 for a speaker without a Node object). */
  readonly position: number;
  /** Condition NetworkUnavailable has status exactly "True" (MetalLB `IsNetworkUnavailable`). */
  readonly networkUnavailable: boolean;
  /** Carries the exclusion label key, any value (MetalLB `IsNodeExcludedFromBalancers`). */
  readonly excluded: boolean;
  readonly hashKey: NodeHashKey;
}

/** Result of the node-level candidate filters: the trace steps and the surviving nodes (sorted). */
export interface CandidateHead {
  readonly steps: readonly TraceStep[];
  readonly survivors: readonly NodeInfo[];
  /** Why each dropped Node dropped, by position in ElectionIndex.nodes (undefined: not dropped). */
  readonly droppedByPosition: readonly (string | undefined)[];
}

/** See module doc. Treat as read-only; `headCache` is internal. */
export interface ElectionIndex {
  readonly endpoints: EndpointIndex;
  /** Node objects, unique by name (the last one wins, as in an informer cache), sorted by name. */
  readonly nodes: readonly NodeInfo[];
  readonly nodeNames: readonly string[];
  readonly byName: ReadonlyMap<string, NodeInfo>;
  /** The speaker list the cached pipeline head is valid for (identity compared). */
  readonly speakers: readonly string[] | null | undefined;
  readonly headCache: Map<boolean, CandidateHead>;
  /** Per advertisement node set (by identity): 1 at the positions of the Nodes it selects. */
  readonly selectionCache: WeakMap<ReadonlySet<string>, Uint8Array>;
}

/**
 * Flags by position in `index.nodes`: 1 where `nodes` (an advertisement's node set) holds the
 * node. Cached per set object, so a Config's sets are scanned once per index.
 */
export function selectionFlags(index: ElectionIndex, nodes: ReadonlySet<string>): Uint8Array {
  let flags = index.selectionCache.get(nodes);
  if (!flags) {
    flags = new Uint8Array(index.nodes.length);
    for (let i = 0; i < index.nodes.length; i++) if (nodes.has(index.nodes[i].name)) flags[i] = 1;
    index.selectionCache.set(nodes, flags);
  }
  return flags;
}

function nodeInfo(name: string, node: Node | null, position: number): NodeInfo {
  const conds = node?.status?.conditions ?? [];
  let networkUnavailable = false;
  for (const c of conds) {
    if (c?.type === 'NetworkUnavailable') {
      networkUnavailable = c.status === 'True';
      break; // Go's conditionStatus returns the first condition of that type
    }
  }
  const excluded = carriesExclusionLabel(node);
  return { name, node, position, networkUnavailable, excluded, hashKey: nodeHashKey(name) };
}

/**
 * Builds the index of `state` for the speaker list `speakers` (null: memberlist disabled, every
 * Node counts). Cost O(nodes log nodes + endpoint slices). Pure; never throws.
 */
export function buildElectionIndex(state: Pick<ClusterState, 'nodes' | 'endpointSlices'>, speakers?: readonly string[] | null): ElectionIndex {
  const byNameNode = new Map<string, Node>();
  for (const n of state.nodes) {
    const name = n.metadata?.name;
    if (name) byNameNode.set(name, n);
  }
  const names = [...byNameNode.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const nodes = names.map((name, i) => nodeInfo(name, byNameNode.get(name)!, i));
  return {
    endpoints: buildEndpointIndex(state),
    nodes,
    nodeNames: names,
    byName: new Map(nodes.map((n) => [n.name, n])),
    speakers,
    headCache: new Map(),
    selectionCache: new WeakMap(),
  };
}

const WHY_NO_SPEAKER = 'no live speaker on the node (not a memberlist member)';
const WHY_NET = 'condition NetworkUnavailable is True';
const WHY_EXCLUDED = `labelled ${EXCLUDE_LB_LABEL}`;

/** Keeps the infos passing `keep`; reuses the input arrays when nothing drops. */
function filterStep(
  step: L2TraceStepName,
  infos: readonly NodeInfo[],
  names: readonly string[],
  keep: (n: NodeInfo) => boolean,
  why: string,
  dropped: Map<string, string>,
): { step: TraceStep; infos: readonly NodeInfo[]; names: readonly string[] } {
  let out: NodeInfo[] | null = null;
  const drops: Dropped[] = [];
  for (let i = 0; i < infos.length; i++) {
    const n = infos[i];
    if (keep(n)) {
      if (out) out.push(n);
    } else {
      if (!out) out = infos.slice(0, i);
      drops.push({ node: n.name, why });
      dropped.set(n.name, why);
    }
  }
  if (!out) return { step: { step, kept: names, dropped: drops }, infos, names };
  const keptNames = out.map((n) => n.name);
  return { step: { step, kept: keptNames, dropped: drops }, infos: out, names: keptNames };
}

/**
 * The service-independent candidate filters of the L2 election (MetalLB `speakersForAds` before
 * the advertisement check): live speakers (every Node when `speakers` is null), then nodes whose
 * NetworkUnavailable condition is "True" dropped, then — unless `ignoreExcludeLB` — nodes carrying
 * the exclusion label dropped. A live speaker without a Node object passes these steps (MetalLB
 * sees a nil Node: available, not excluded) and drops at the advertisement step.
 * Cached in the index when `speakers` is the very array the index was built for.
 */
export function candidateHead(index: ElectionIndex, speakers: readonly string[] | null, ignoreExcludeLB: boolean): CandidateHead {
  const cacheable = speakers === index.speakers;
  if (cacheable) {
    const hit = index.headCache.get(ignoreExcludeLB);
    if (hit) return hit;
  }
  const dropped = new Map<string, string>();
  let infos: readonly NodeInfo[] = index.nodes;
  let names: readonly string[] = index.nodeNames;
  let first: TraceStep;
  if (speakers === null) {
    first = { step: 'speakers', kept: names, dropped: [], note: 'memberlist disabled: every Node counts as a live speaker' };
  } else {
    const alive = new Set(speakers);
    const r = filterStep('speakers', infos, names, (n) => alive.has(n.name), WHY_NO_SPEAKER, dropped);
    infos = r.infos;
    names = r.names;
    const extras = [...alive].filter((s) => !index.byName.has(s));
    if (extras.length > 0) {
      const merged = [...infos, ...extras.map((s) => nodeInfo(s, null, -1))];
      merged.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      infos = merged;
      names = merged.map((n) => n.name);
      first = { step: 'speakers', kept: names, dropped: r.step.dropped };
    } else {
      first = r.step;
    }
  }
  const net = filterStep('networkUnavailable', infos, names, (n) => !n.networkUnavailable, WHY_NET, dropped);
  let excl: { step: TraceStep; infos: readonly NodeInfo[] };
  if (ignoreExcludeLB) {
    excl = { step: { step: 'excludeLB', kept: net.names, dropped: [], note: 'ignored (--ignore-exclude-lb)' }, infos: net.infos };
  } else {
    excl = filterStep('excludeLB', net.infos, net.names, (n) => !n.excluded, WHY_EXCLUDED, dropped);
  }
  const droppedByPosition: (string | undefined)[] = index.nodes.map((n) => dropped.get(n.name));
  const head: CandidateHead = { steps: [first, net.step, excl.step], survivors: excl.infos, droppedByPosition };
  if (cacheable) index.headCache.set(ignoreExcludeLB, head);
  return head;
}
