/**
 * The speaker's own configuration: what MetalLB v0.16.1's speaker on one node builds for itself
 * (`internal/k8s/controllers/config_controller.go` ConfigReconciler, then `speaker/main.go`
 * SetConfig and `speaker/bgp_controller.go` SetConfig). This is the daemons' path: the speaker
 * and `speaker --dry-run` call it, and the diagnostics call it once per node to show what each
 * speaker runs. It never repairs a configuration: one MetalLB rejects is reported, not used.
 *
 * In order, as the reconciler does it:
 *  1. only the metallb.io CRs, Secrets and the `bgpextras` ConfigMap of the speaker's namespace
 *     count (MetalLB's cache is namespaced);
 *  2. the speaker's own Node must exist (a failed Get is an error: the reconcile is retried);
 *  3. BGPPeers and BGPAdvertisements whose `nodeSelectors` are non-empty and select none of the
 *     speaker's Node labels are dropped *before* parsing, so another node's broken peer or
 *     advertisement cannot break this speaker (an invalid selector in any of them is an error);
 *  4. MetalLB's parser (`config.For`) with the BGP type's compatibility check (`frr`/`frr-k8s`:
 *     DiscardNativeOnly, `native`: DiscardFRROnly);
 *  5. in frr-k8s mode a non-empty `bgpextras` ConfigMap (`data.extras`) makes the BGP handler
 *     refuse the configuration (`extra info not supported in frr-k8s mode`).
 */
import { checkConfig, type BGPMode } from '../config/parse.ts';
import type { Config } from '../config/types.ts';
import { ConfigError } from '../errors.ts';
import type { BGPAdvertisement, BGPPeer, ClusterState, KubeObject, LabelSelector } from '../kube.ts';
import { DEFAULT_METALLB_NAMESPACE, objectRef } from '../kube.ts';
import { parseSelector, type Selector } from '../labels.ts';

/** MetalLB's BGP implementations (`METALLB_BGP_TYPE`). metallb-ts runs `frr-k8s` only. */
export type BGPType = BGPMode;

/** Name of MetalLB's ConfigMap of raw FRR configuration (`bgpExtrasConfigName`). */
export const BGP_EXTRAS_CONFIGMAP = 'bgpextras';

/** Options of speakerConfig: the speaker's flags. */
export interface SpeakerConfigOptions {
  /** `--node-name` */
  readonly node: string;
  /** `--namespace` (MetalLB's namespace), default `metallb-system` */
  readonly namespace?: string;
  /** `METALLB_BGP_TYPE`, default `frr-k8s` */
  readonly bgpType?: BGPType;
}

/** Where the speaker's configuration path stopped. */
export type SpeakerConfigStage =
  /** the speaker's Node object does not exist (MetalLB: "failed to get node for N", retried) */
  | 'node'
  /** a BGPPeer or BGPAdvertisement has a nodeSelector that is not a valid selector (retried) */
  | 'nodeFilter'
  /** MetalLB's parser (or the BGP type's compatibility check) rejects the configuration */
  | 'parse'
  /** the BGP handler refuses it: a non-empty `bgpextras` ConfigMap in frr-k8s mode */
  | 'bgpExtras';

/** The speaker's configuration, or why it has none. */
export type SpeakerConfig =
  | {
      readonly ok: true;
      readonly config: Config;
      /** `data.extras` of the `bgpextras` ConfigMap ("" when none) */
      readonly bgpExtras: string;
      /** names of the BGPPeers dropped because their nodeSelectors do not select this node */
      readonly droppedPeers: readonly string[];
      /** names of the BGPAdvertisements dropped for the same reason */
      readonly droppedBGPAdvertisements: readonly string[];
    }
  | {
      readonly ok: false;
      readonly stage: SpeakerConfigStage;
      /** the error as MetalLB's speaker logs it, naming the object where one is to blame */
      readonly error: ConfigError;
      readonly droppedPeers: readonly string[];
      readonly droppedBGPAdvertisements: readonly string[];
      /**
       * Stage `bgpExtras` only: the parsed configuration the BGP handler was handed. MetalLB's
       * handler syncs its BFD profiles (when there is at least one) before it refuses the extras
       * (`speaker/bgp_controller.go` SetConfig), so they reach the node's FRRConfiguration although
       * the configuration is rejected.
       */
      readonly config?: Config;
    };

function inNamespace<T extends KubeObject>(objects: readonly T[], namespace: string): T[] {
  return objects.filter((o) => {
    const ns = o.metadata?.namespace;
    return !ns || ns === namespace; // hand-written manifests without a namespace count as there
  });
}

/**
 * The BGPPeers and BGPAdvertisements of MetalLB's namespace with their nodeSelectors parsed once
 * (MetalLB `filterByNode`), so that the speakers of many nodes can be filtered cheaply.
 */
export interface NodeFilter {
  readonly bgpPeers: readonly BGPPeer[];
  readonly bgpAdvertisements: readonly BGPAdvertisement[];
  /** per object: its parsed nodeSelectors, or null when it has none (kept on every node) */
  readonly peerSelectors: ReadonlyArray<readonly Selector[] | null>;
  readonly advertisementSelectors: ReadonlyArray<readonly Selector[] | null>;
  /**
   * The error every speaker stops at when a nodeSelector does not parse (MetalLB filters the
   * BGPAdvertisements first, then the BGPPeers, and parses all selectors of an object before
   * matching any), or null.
   */
  readonly error: ConfigError | null;
}

/** Parses the nodeSelectors of the BGPPeers and BGPAdvertisements of `namespace` (see NodeFilter). */
export function compileNodeFilter(state: ClusterState, namespace: string = DEFAULT_METALLB_NAMESPACE): NodeFilter {
  let error: ConfigError | null = null;
  const parse = (o: BGPPeer | BGPAdvertisement): Selector[] | null => {
    const sels = (o.spec?.nodeSelectors ?? []) as LabelSelector[] | null;
    if (!Array.isArray(sels) || sels.length === 0) return null;
    const out: Selector[] = [];
    for (const s of sels) {
      try {
        out.push(parseSelector(s));
      } catch (err) {
        error ??= new ConfigError(`invalid label selector ${JSON.stringify(s)}: ${(err as Error).message}`, objectRef(o));
      }
    }
    return out;
  };
  const bgpAdvertisements = inNamespace(state.bgpAdvertisements, namespace);
  const bgpPeers = inNamespace(state.bgpPeers, namespace);
  const advertisementSelectors = bgpAdvertisements.map(parse);
  const peerSelectors = bgpPeers.map(parse);
  return { bgpPeers, bgpAdvertisements, peerSelectors, advertisementSelectors, error };
}

/** What the speaker of a node with `labels` keeps of a NodeFilter's objects (state order) and the names it drops. */
export interface NodeSelection {
  readonly bgpPeers: readonly BGPPeer[];
  readonly bgpAdvertisements: readonly BGPAdvertisement[];
  readonly droppedPeers: readonly string[];
  readonly droppedBGPAdvertisements: readonly string[];
  /** indexes of the kept objects that have nodeSelectors (equal for two nodes = same selection) */
  readonly key: string;
}

/** MetalLB `filterByNode` for one node's labels. Ignores `filter.error` (check it first). */
export function selectForNode(filter: NodeFilter, labels: Readonly<Record<string, string>> | undefined): NodeSelection {
  const l = labels ?? {};
  const pick = <T extends KubeObject>(objects: readonly T[], sels: ReadonlyArray<readonly Selector[] | null>) => {
    const kept: T[] = [];
    const dropped: string[] = [];
    const selective: number[] = [];
    objects.forEach((o, i) => {
      const s = sels[i];
      if (s === null || s === undefined) kept.push(o);
      else if (s.some((x) => x.matches(l))) {
        kept.push(o);
        selective.push(i);
      } else dropped.push(o.metadata?.name ?? '');
    });
    return { kept, dropped, selective };
  };
  const a = pick(filter.bgpAdvertisements, filter.advertisementSelectors);
  const p = pick(filter.bgpPeers, filter.peerSelectors);
  return {
    bgpPeers: p.kept,
    bgpAdvertisements: a.kept,
    droppedPeers: p.dropped,
    droppedBGPAdvertisements: a.dropped,
    key: `${a.selective.join(',')}|${p.selective.join(',')}`,
  };
}

/**
 * What a speaker's parser sees (MetalLB's ClusterResources): the CRs, Secrets and ConfigMaps of
 * `namespace`, with the BGPPeers and BGPAdvertisements of `selection`; Nodes and Namespaces all.
 */
export function speakerConfigState(state: ClusterState, namespace: string, selection: Pick<NodeSelection, 'bgpPeers' | 'bgpAdvertisements'>): ClusterState {
  const ns = <T extends KubeObject>(list: readonly T[]): T[] => inNamespace(list, namespace);
  return {
    ...state,
    ipAddressPools: ns(state.ipAddressPools),
    l2Advertisements: ns(state.l2Advertisements),
    bgpAdvertisements: [...selection.bgpAdvertisements],
    bgpPeers: [...selection.bgpPeers],
    communities: ns(state.communities),
    bfdProfiles: ns(state.bfdProfiles),
    secrets: ns(state.secrets),
    configMaps: ns(state.configMaps),
  };
}

/**
 * The configuration the speaker on `opts.node` builds from `state` (see the module comment), or
 * the stage and error at which it gives up. Pure; never throws for bad input. `filter`: the
 * state's compileNodeFilter, when the caller builds the configuration of many nodes.
 *
 * A rejected configuration is not applied: the speaker keeps acting on the last one it accepted
 * (or on none), and MetalLB logs `failed to parse the configuration` and sets
 * `metallb_k8s_client_config_stale_bool`.
 */
export function speakerConfig(state: ClusterState, opts: SpeakerConfigOptions, filter?: NodeFilter): SpeakerConfig {
  const namespace = opts.namespace ?? DEFAULT_METALLB_NAMESPACE;
  const bgpType = opts.bgpType ?? 'frr-k8s';
  let droppedPeers: readonly string[] = [];
  let droppedBGPAdvertisements: readonly string[] = [];
  const fail = (stage: SpeakerConfigStage, error: ConfigError): SpeakerConfig => ({ ok: false, stage, error, droppedPeers, droppedBGPAdvertisements });

  const node = state.nodes.find((n) => n.metadata?.name === opts.node);
  if (!node) return fail('node', new ConfigError(`failed to get node for ${opts.node}: no Node object of that name`));

  const f = filter ?? compileNodeFilter(state, namespace);
  if (f.error) return fail('nodeFilter', f.error);
  const selection = selectForNode(f, node.metadata?.labels);
  droppedPeers = selection.droppedPeers;
  droppedBGPAdvertisements = selection.droppedBGPAdvertisements;

  const own = speakerConfigState(state, namespace, selection);
  const parsed = checkConfig(own, { mode: bgpType });
  if (!parsed.ok) return fail('parse', parsed.error);
  const config = parsed.value;
  const extras = own.configMaps.find((c) => c.metadata?.name === BGP_EXTRAS_CONFIGMAP)?.data?.extras;
  const bgpExtras = typeof extras === 'string' ? extras : '';
  if (bgpType === 'frr-k8s' && bgpExtras !== '') {
    const cm = own.configMaps.find((c) => c.metadata?.name === BGP_EXTRAS_CONFIGMAP)!;
    return { ...fail('bgpExtras', new ConfigError('extra info not supported in frr-k8s mode: failed to sync extra info', objectRef(cm))), config } as SpeakerConfig;
  }
  return { ok: true, config, bgpExtras, droppedPeers, droppedBGPAdvertisements };
}
