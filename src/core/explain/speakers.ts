/**
 * The configuration each speaker runs, as a snapshot shows it. MetalLB v0.16.1's speaker on node N
 * builds its own (src/core/speaker speakerConfig): the CRs of its namespace, minus the BGPPeers and
 * BGPAdvertisements whose nodeSelectors do not select N, parsed; a configuration it rejects is not
 * applied (it keeps the last one it accepted, or none). So one snapshot can hold a configuration
 * that some speakers accept and others reject, or that no speaker validates at all.
 *
 * speakerConfig's result depends on the node only through that filter (the parser sees every Node
 * either way), so nodes whose filtered BGPPeer/BGPAdvertisement sets are identical build the same
 * configuration: it is built once per group of such nodes (on a 500-node cluster usually a handful
 * of groups, often one).
 */
import { collectConfigErrors } from '../config/parse.ts';
import type { ConfigError } from '../errors.ts';
import type { BGPAdvertisement, BGPPeer, ClusterState } from '../kube.ts';
import { DEFAULT_METALLB_NAMESPACE } from '../kube.ts';
import { compareStrings } from '../labels.ts';
import { compileNodeFilter, selectForNode, speakerConfig, speakerConfigState, type NodeSelection, type SpeakerConfig } from '../speaker/config.ts';

/** `accepted`; `rejected` (MetalLB's parser, the node filter or the BGP handler refuses it); `noNode` (no Node object of that name). */
export type SpeakerConfigStatus = 'accepted' | 'rejected' | 'noNode';

/** Nodes whose speakers build one and the same configuration. */
export interface SpeakerConfigGroup {
  /** Node names, sorted. */
  readonly nodes: readonly string[];
  readonly status: SpeakerConfigStatus;
  /** speakerConfig's result for any of the nodes (they are equal). */
  readonly result: SpeakerConfig;
  /**
   * The BGPPeers and BGPAdvertisements these speakers keep (their nodeSelectors select the
   * nodes, or they have none); null when a nodeSelector is not a valid selector (every speaker
   * then rejects before parsing) or for `noNode`.
   */
  readonly kept: { readonly peers: readonly BGPPeer[]; readonly bgpAdvertisements: readonly BGPAdvertisement[] } | null;
}

/** Every speaker's configuration, grouped. */
export interface SpeakerConfigs {
  /** The groups: those of Node objects first (by first node name), then speakers without a Node object. */
  readonly groups: readonly SpeakerConfigGroup[];
  readonly byNode: ReadonlyMap<string, SpeakerConfigGroup>;
  /** The groups that accept their configuration. */
  readonly accepted: readonly SpeakerConfigGroup[];
  /** The namespace the speakers read (MetalLB's). */
  readonly namespace: string;
}

/** The JSON form of one group (`configuration.speakers[]` of `explain -o json`). */
export interface SpeakerConfigView {
  readonly nodes: readonly string[];
  readonly status: SpeakerConfigStatus;
  /** speakerConfig's stage (`node`, `nodeFilter`, `parse`, `bgpExtras`) when not accepted, else null. */
  readonly stage: string | null;
  /** MetalLB's error when not accepted, else null. */
  readonly error: string | null;
  /**
   * The BGPPeers and BGPAdvertisements these speakers keep (no nodeSelectors, or one selecting
   * their node); the others of MetalLB's namespace are dropped before parsing. Empty for
   * `noNode` and when a nodeSelector is invalid.
   */
  readonly bgpPeers: readonly string[];
  readonly bgpAdvertisements: readonly string[];
}

function statusOf(result: SpeakerConfig): SpeakerConfigStatus {
  return result.ok ? 'accepted' : result.stage === 'node' ? 'noNode' : 'rejected';
}

/**
 * The configuration of the speaker on each of `nodes` (Node names, and speaker names without a
 * Node object), as speakerConfig builds it in frr-k8s mode, grouped by identical node filter.
 * Pure; never throws for bad input.
 */
export function speakerConfigs(state: ClusterState, nodes: readonly string[], namespace: string = DEFAULT_METALLB_NAMESPACE): SpeakerConfigs {
  // The nodeSelectors are parsed once; speakers whose nodes keep the same BGPPeers and
  // BGPAdvertisements run the same configuration, so it is parsed once per group.
  const filter = compileNodeFilter(state, namespace);
  const nodeObjects = new Map(state.nodes.map((n) => [n.metadata?.name ?? '', n]));
  const byKey = new Map<string, { members: string[]; selection: NodeSelection | null }>();
  const missing: string[] = [];
  for (const name of [...new Set(nodes)].sort(compareStrings)) {
    const node = nodeObjects.get(name);
    if (!node) {
      missing.push(name);
      continue;
    }
    // An invalid nodeSelector stops every speaker with the same error: one group.
    const selection = filter.error ? null : selectForNode(filter, node.metadata?.labels);
    const key = selection?.key ?? 'invalid';
    const g = byKey.get(key);
    if (g) g.members.push(name);
    else byKey.set(key, { members: [name], selection });
  }
  const groups: SpeakerConfigGroup[] = [];
  for (const { members, selection } of byKey.values()) {
    const result = speakerConfig(state, { node: members[0]!, namespace, bgpType: 'frr-k8s' }, filter);
    const kept = selection ? { bgpAdvertisements: selection.bgpAdvertisements, peers: selection.bgpPeers } : null;
    groups.push({ nodes: members, status: statusOf(result), result, kept });
  }
  groups.sort((x, y) => compareStrings(x.nodes[0]!, y.nodes[0]!));
  for (const name of missing) {
    const result = speakerConfig(state, { node: name, namespace, bgpType: 'frr-k8s' }, filter);
    groups.push({ nodes: [name], status: statusOf(result), result, kept: null });
  }
  const byNode = new Map<string, SpeakerConfigGroup>();
  for (const g of groups) for (const n of g.nodes) byNode.set(n, g);
  return { groups, byNode, accepted: groups.filter((g) => g.status === 'accepted'), namespace };
}

/** The JSON view of a group. */
export function speakerConfigView(g: SpeakerConfigGroup): SpeakerConfigView {
  const r = g.result;
  return {
    nodes: g.nodes,
    status: g.status,
    stage: r.ok ? null : r.stage,
    error: r.ok ? null : r.error.message,
    bgpPeers: (g.kept?.peers ?? []).map((o) => o.metadata?.name ?? ''),
    bgpAdvertisements: (g.kept?.bgpAdvertisements ?? []).map((o) => o.metadata?.name ?? ''),
  };
}

/** Whether every speaker with a Node object rejects its configuration (and there is at least one). */
export function rejectedEverywhere(configs: SpeakerConfigs): boolean {
  const withNode = configs.groups.filter((g) => g.status !== 'noNode');
  return withNode.length > 0 && withNode.every((g) => g.status === 'rejected');
}

/**
 * Every error the speakers of `g` would raise, not only the first (validate): MetalLB's parser in
 * frr-k8s mode over exactly the state speakerConfig parses (collectConfigErrors), plus the BGP
 * handler's `bgpextras` refusal (reached only once the parser accepts); for a group stopped
 * elsewhere, that error alone. Empty exactly when the group accepts.
 */
export function speakerErrors(state: ClusterState, g: SpeakerConfigGroup, namespace: string): ConfigError[] {
  const r = g.result;
  if (r.ok) return [];
  if (r.stage !== 'parse' || !g.kept) return [r.error];
  const own = speakerConfigState(state, namespace, { bgpAdvertisements: g.kept.bgpAdvertisements, bgpPeers: g.kept.peers });
  const errors = collectConfigErrors(own, { mode: 'frr-k8s' });
  return errors.length > 0 ? errors : [r.error];
}
