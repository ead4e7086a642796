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
import { parseConfig, type BGPMode } from '../config/parse.ts';
import type { Config } from '../config/types.ts';
import { ConfigError } from '../errors.ts';
import type { BGPAdvertisement, BGPPeer, ClusterState, KubeObject, LabelSelector, Node } from '../kube.ts';
import { DEFAULT_METALLB_NAMESPACE, objectRef } from '../kube.ts';
import { parseSelector } from '../labels.ts';

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
  };

function inNamespace<T extends KubeObject>(objects: readonly T[], namespace: string): T[] {
  return objects.filter((o) => {
    const ns = o.metadata?.namespace;
    return !ns || ns === namespace; // hand-written manifests without a namespace count as there
  });
}

/**
 * MetalLB `filterByNode`: keeps the objects without nodeSelectors and those whose selectors select
 * `node`. Returns the kept objects and the names of the dropped ones.
 * @throws ConfigError naming the object for a selector that is not valid.
 */
function filterByNode<T extends BGPPeer | BGPAdvertisement>(objects: readonly T[], node: Node): { kept: T[]; dropped: string[] } {
  const kept: T[] = [];
  const dropped: string[] = [];
  const labels = node.metadata?.labels ?? {};
  for (const o of objects) {
    const sels = (o.spec?.nodeSelectors ?? []) as LabelSelector[] | null;
    if (!Array.isArray(sels) || sels.length === 0) {
      kept.push(o);
      continue;
    }
    let selected = false;
    for (const s of sels) {
      let parsed;
      try {
        parsed = parseSelector(s);
      } catch (err) {
        throw new ConfigError(`invalid label selector ${JSON.stringify(s)}: ${(err as Error).message}`, objectRef(o));
      }
      if (parsed.matches(labels)) selected = true;
    }
    if (selected) kept.push(o);
    else dropped.push(o.metadata?.name ?? '');
  }
  return { kept, dropped };
}

/**
 * The configuration the speaker on `opts.node` builds from `state` (see the module comment), or
 * the stage and error at which it gives up. Pure; never throws for bad input.
 *
 * A rejected configuration is not applied: the speaker keeps acting on the last one it accepted
 * (or on none), and MetalLB logs `failed to parse the configuration` and sets
 * `metallb_k8s_client_config_stale_bool`.
 */
export function speakerConfig(state: ClusterState, opts: SpeakerConfigOptions): SpeakerConfig {
  const namespace = opts.namespace ?? DEFAULT_METALLB_NAMESPACE;
  const bgpType = opts.bgpType ?? 'frr-k8s';
  let droppedPeers: string[] = [];
  let droppedBGPAdvertisements: string[] = [];
  const fail = (stage: SpeakerConfigStage, error: ConfigError): SpeakerConfig => ({ ok: false, stage, error, droppedPeers, droppedBGPAdvertisements });

  const node = state.nodes.find((n) => n.metadata?.name === opts.node);
  if (!node) return fail('node', new ConfigError(`failed to get node for ${opts.node}: no Node object of that name`));

  const ns = <T extends KubeObject>(list: readonly T[]): T[] => inNamespace(list, namespace);
  let peers: BGPPeer[];
  let bgpAdvertisements: BGPAdvertisement[];
  try {
    const a = filterByNode(ns(state.bgpAdvertisements), node);
    const p = filterByNode(ns(state.bgpPeers), node);
    bgpAdvertisements = a.kept;
    droppedBGPAdvertisements = a.dropped;
    peers = p.kept;
    droppedPeers = p.dropped;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return fail('nodeFilter', err);
  }

  const own: ClusterState = {
    ...state,
    ipAddressPools: ns(state.ipAddressPools),
    l2Advertisements: ns(state.l2Advertisements),
    bgpAdvertisements,
    bgpPeers: peers,
    communities: ns(state.communities),
    bfdProfiles: ns(state.bfdProfiles),
    secrets: ns(state.secrets),
    configMaps: ns(state.configMaps),
  };
  let config: Config;
  try {
    config = parseConfig(own, { mode: bgpType });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return fail('parse', err);
  }
  const extras = own.configMaps.find((c) => c.metadata?.name === BGP_EXTRAS_CONFIGMAP)?.data?.extras;
  const bgpExtras = typeof extras === 'string' ? extras : '';
  if (bgpType === 'frr-k8s' && bgpExtras !== '') {
    const cm = own.configMaps.find((c) => c.metadata?.name === BGP_EXTRAS_CONFIGMAP)!;
    return fail('bgpExtras', new ConfigError('extra info not supported in frr-k8s mode: failed to sync extra info', objectRef(cm)));
  }
  return { ok: true, config, bgpExtras, droppedPeers, droppedBGPAdvertisements };
}
