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
import { collectConfigErrors } from '../config/index.ts';
import { ConfigError } from '../errors.ts';
import type { BGPAdvertisement, BGPPeer, ClusterState, KubeObject, LabelSelector } from '../kube.ts';
import { DEFAULT_METALLB_NAMESPACE } from '../kube.ts';
import { compareStrings, parseSelector, type Selector } from '../labels.ts';
import { speakerConfig, type SpeakerConfig } from '../speaker/config.ts';

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

function inNamespace<T extends KubeObject>(objects: readonly T[], namespace: string): T[] {
  return objects.filter((o) => {
    const ns = o.metadata?.namespace;
    return !ns || ns === namespace;
  });
}

/** Parsed nodeSelectors of each object: null = no selectors (kept on every node). */
interface NodeFilter {
  readonly peers: readonly BGPPeer[];
  readonly ads: readonly BGPAdvertisement[];
  readonly peerSels: ReadonlyArray<readonly Selector[] | null>;
  readonly adSels: ReadonlyArray<readonly Selector[] | null>;
  /** Some nodeSelector does not parse: every speaker stops at the filter with the same error. */
  readonly invalid: boolean;
}

function nodeFilter(state: ClusterState, namespace: string): NodeFilter {
  let invalid = false;
  const parse = (o: BGPPeer | BGPAdvertisement): Selector[] | null => {
    const sels = (o.spec?.nodeSelectors ?? []) as LabelSelector[] | null;
    if (!Array.isArray(sels) || sels.length === 0) return null;
    const out: Selector[] = [];
    for (const s of sels) {
      try {
        out.push(parseSelector(s));
      } catch {
        invalid = true;
      }
    }
    return out;
  };
  const peers = inNamespace(state.bgpPeers, namespace);
  const ads = inNamespace(state.bgpAdvertisements, namespace);
  const peerSels = peers.map(parse);
  const adSels = ads.map(parse);
  return { peers, ads, peerSels, adSels, invalid };
}

function keeps(sels: readonly Selector[] | null, labels: Readonly<Record<string, string>>): boolean {
  return sels === null || sels.some((s) => s.matches(labels));
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
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
  const filter = nodeFilter(state, namespace);
  const nodeObjects = new Map(state.nodes.map((n) => [n.metadata?.name ?? '', n]));
  // Group by the selective objects each node keeps (those without nodeSelectors are kept everywhere).
  const selectiveAds = filter.adSels.flatMap((s, i) => (s === null ? [] : [i]));
  const selectivePeers = filter.peerSels.flatMap((s, i) => (s === null ? [] : [i]));
  const byKey = new Map<string, string[]>();
  const missing: string[] = [];
  for (const name of [...new Set(nodes)].sort(compareStrings)) {
    const node = nodeObjects.get(name);
    if (!node) {
      missing.push(name);
      continue;
    }
    let key = 'invalid';
    if (!filter.invalid) {
      const labels = node.metadata?.labels ?? {};
      const a = selectiveAds.filter((i) => keeps(filter.adSels[i]!, labels));
      const p = selectivePeers.filter((i) => keeps(filter.peerSels[i]!, labels));
      key = `${a.join(',')}|${p.join(',')}`;
    }
    const list = byKey.get(key);
    if (list) list.push(name);
    else byKey.set(key, [name]);
  }
  /** The objects kept under a key (state order) and the names of the dropped ones. */
  const split = <T extends KubeObject>(objects: readonly T[], sels: ReadonlyArray<readonly Selector[] | null>, keptIdx: string): { kept: T[]; dropped: string[] } => {
    const mark = new Uint8Array(objects.length);
    if (keptIdx !== '') for (const i of keptIdx.split(',')) mark[Number(i)] = 1;
    const kept: T[] = [];
    const dropped: string[] = [];
    objects.forEach((o, i) => {
      if (sels[i] === null || mark[i] === 1) kept.push(o);
      else dropped.push(o.metadata?.name ?? '');
    });
    return { kept, dropped };
  };

  const groups: SpeakerConfigGroup[] = [];
  const perNode = (members: readonly string[]): void => {
    for (const m of members) {
      const result = speakerConfig(state, { node: m, namespace, bgpType: 'frr-k8s' });
      groups.push({ nodes: [m], status: statusOf(result), result, kept: null });
    }
  };
  if (filter.invalid) {
    // Every speaker stops at the same invalid selector: one call tells the error.
    const members = byKey.get('invalid') ?? [];
    if (members.length > 0) {
      const result = speakerConfig(state, { node: members[0]!, namespace, bgpType: 'frr-k8s' });
      groups.push({ nodes: members, status: statusOf(result), result, kept: null });
    }
  } else {
    let checked = false;
    for (const [key, members] of byKey) {
      const [a, p] = key.split('|') as [string, string];
      const adSplit = split(filter.ads, filter.adSels, a);
      const peerSplit = split(filter.peers, filter.peerSels, p);
      const kept = { bgpAdvertisements: adSplit.kept, peers: peerSplit.kept };
      const droppedBGPAdvertisements = adSplit.dropped;
      const droppedPeers = peerSplit.dropped;
      if (!checked) {
        // Once per call, speakerConfig over the whole state: its own node filter must agree with the grouping.
        checked = true;
        const full = speakerConfig(state, { node: members[0]!, namespace, bgpType: 'frr-k8s' });
        if (!sameNames(droppedBGPAdvertisements, full.droppedBGPAdvertisements) || !sameNames(droppedPeers, full.droppedPeers)) {
          perNode([...byKey.values()].flat());
          break;
        }
      }
      // speakerConfig over the state without the objects this group drops: the same parse, without
      // filtering every BGPPeer again for each group.
      const reduced: ClusterState = { ...state, bgpPeers: [...kept.peers], bgpAdvertisements: [...kept.bgpAdvertisements] };
      const r = speakerConfig(reduced, { node: members[0]!, namespace, bgpType: 'frr-k8s' });
      const result: SpeakerConfig = { ...r, droppedPeers, droppedBGPAdvertisements };
      groups.push({ nodes: members, status: statusOf(result), result, kept });
    }
  }
  groups.sort((x, y) => compareStrings(x.nodes[0]!, y.nodes[0]!));
  for (const name of missing) {
    const result = speakerConfig(state, { node: name, namespace, bgpType: 'frr-k8s' });
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
    nodes: g.nodes, status: g.status,
    stage: r.ok ? null : r.stage, error: r.ok ? null : r.error.message,
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
  const ns = <T extends KubeObject>(list: readonly T[]): T[] => inNamespace(list, namespace);
  const own: ClusterState = {
    ...state,
    ipAddressPools: ns(state.ipAddressPools),
    l2Advertisements: ns(state.l2Advertisements),
    bgpAdvertisements: [...g.kept.bgpAdvertisements],
    bgpPeers: [...g.kept.peers],
    communities: ns(state.communities),
    bfdProfiles: ns(state.bfdProfiles),
    secrets: ns(state.secrets),
    configMaps: ns(state.configMaps),
  };
  const errors = collectConfigErrors(own, { mode: 'frr-k8s' });
  return errors.length > 0 ? errors : [r.error];
}
