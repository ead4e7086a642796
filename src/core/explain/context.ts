/**
 * What the diagnostic commands (`explain`, `whois`, `allocate --dry-run`) compute once per
 * snapshot before answering: the controller's configuration and its dry run, every speaker's own
 * configuration (speakers.ts), the live-speaker list and where it came from, and the election
 * index. As in MetalLB, the controller and each speaker parse their own part of the CRs and a
 * rejected configuration is not applied by whoever rejects it.
 */
import { checkConfig, parseConfig } from '../config/parse.ts';
import { resetTransient } from '../config/validate.ts';
import type { Config } from '../config/types.ts';
import { allocateAll, type AllocateAllResult } from '../controller/index.ts';
import { aliveSpeakers, buildElectionIndex, type ElectionIndex } from '../election/index.ts';
import { ConfigError } from '../errors.ts';
import { DEFAULT_METALLB_NAMESPACE, emptyClusterState, type ClusterState, type KubeObject, type LabelSelector } from '../kube.ts';
import type { SpeakersSource } from './types.ts';
import { rejectedEverywhere, speakerConfigs, type SpeakerConfigs } from './speakers.ts';

/** Options of diagnosticContext (the CLI's `--speakers`, `--ignore-exclude-lb`, `--lb-class`, `--metallb-namespace`). */
export interface DiagnosticOptions {
  /** Node names with a live speaker (`--speakers`); absent: derived from the state. */
  readonly speakers?: readonly string[];
  /**
   * The live speakers a running speaker reports (speakersFromView of its `/debug/members`: its
   * memberlist's alive and suspect members, or null when its memberlist is off and every Node
   * counts); used when `speakers` is absent, before any derivation from the state.
   */
  readonly memberlist?: { readonly speakers: readonly string[] | null };
  readonly ignoreExcludeLB?: boolean;
  /** MetalLB's `--lb-class`: "" (default) handles only Services without `spec.loadBalancerClass`. */
  readonly loadBalancerClass?: string;
  /** The namespace MetalLB runs in (default `metallb-system`): it reads its CRs, Secrets and ConfigMaps only there. */
  readonly metallbNamespace?: string;
  /**
   * `namespace/name` of the only Service the caller explains: the dry run may then skip the other
   * executions MetalLB can take when they cannot change its answer (allocateAll's `focus`), and
   * other Services' outcomes in `dryRun` may lack their `nondeterministic` notes.
   */
  readonly focus?: string;
}

/**
 * What MetalLB sees of a state: its CRs, Secrets and ConfigMaps only from `metallbNamespace`
 * (objects without a namespace, as in hand-written manifests, count as being there; MetalLB's
 * internal/k8s/k8s.go caches them there), and the CRs it ignores for that reason, so `validate`
 * can say so.
 */
export function metallbView(state: ClusterState, metallbNamespace: string = DEFAULT_METALLB_NAMESPACE): { state: ClusterState; ignored: KubeObject[] } {
  const ignored: KubeObject[] = [];
  const mine = <T extends KubeObject>(objects: readonly T[], reportIgnored: boolean): T[] =>
    objects.filter((o) => {
      const ns = o.metadata?.namespace;
      const kept = !ns || ns === metallbNamespace;
      if (!kept && reportIgnored) ignored.push(o);
      return kept;
    });
  const view: ClusterState = {
    ...state,
    ipAddressPools: mine(state.ipAddressPools, true),
    l2Advertisements: mine(state.l2Advertisements, true),
    bgpAdvertisements: mine(state.bgpAdvertisements, true),
    bgpPeers: mine(state.bgpPeers, true),
    communities: mine(state.communities, true),
    bfdProfiles: mine(state.bfdProfiles, true),
    secrets: mine(state.secrets, false),
    configMaps: mine(state.configMaps, false),
  };
  return { state: view, ignored };
}

/** Everything explainService / whoisIP need besides the Service or address. */
export interface DiagnosticContext {
  readonly state: ClusterState;
  /** The controller's configuration: IPAddressPools and Communities of MetalLB's namespace (controllerConfig). */
  readonly controllerConfig: Config;
  /** Each speaker's own configuration (speakerConfigs), for every Node and every live speaker. */
  readonly speakerConfigs: SpeakerConfigs;
  /** MetalLB's namespace. */
  readonly metallbNamespace: string;
  /** metallb.io objects outside MetalLB's namespace, which MetalLB never sees. */
  readonly ignoredObjects: readonly KubeObject[];
  readonly speakers: readonly string[] | null;
  readonly speakersSource: SpeakersSource;
  readonly ignoreExcludeLB: boolean;
  /** MetalLB's `--lb-class` ("" = only Services without a class). */
  readonly loadBalancerClass: string;
  /** The controller's dry run over the whole snapshot, with its own configuration (complete for `focus` only, when given). */
  readonly dryRun: AllocateAllResult;
  readonly index: ElectionIndex;
  /**
   * When every speaker rejects the configuration: the context of the same snapshot with the
   * repeated entries removed, if that is all that is wrong (every speaker accepts it then), as a
   * fix hint — never the truth. Null otherwise. Computed on first call.
   */
  readonly repaired: () => RepairedContext | null;
}

/** A fix hint: what the diagnostics would say once the configuration is changed as `assuming` says. */
export interface RepairedContext {
  /** The change, in words (`the repeated entries removed`). */
  readonly assuming: string;
  readonly context: DiagnosticContext;
}

/**
 * What MetalLB's controller reads for its configuration (PoolReconciler): the IPAddressPools and
 * Communities of MetalLB's namespace (objects without a namespace count as there, as in
 * metallbView) and every Namespace. BGPPeers, advertisements and Nodes are not its business: a
 * broken BGPAdvertisement never stops allocation.
 */
export function controllerConfigState(state: ClusterState, metallbNamespace: string = DEFAULT_METALLB_NAMESPACE): ClusterState {
  const mine = (o: KubeObject): boolean => !o.metadata?.namespace || o.metadata.namespace === metallbNamespace;
  return {
    ...emptyClusterState(),
    ipAddressPools: state.ipAddressPools.filter(mine),
    communities: state.communities.filter(mine),
    namespaces: state.namespaces,
  };
}

/**
 * The controller's configuration (MetalLB's parser over controllerConfigState).
 * @throws ConfigError naming the object when the controller rejects it: it then keeps allocating
 *   with the configuration it accepted last, and every speaker (which parses the same pools and
 *   communities) rejects it too.
 */
export function controllerConfig(state: ClusterState, metallbNamespace: string = DEFAULT_METALLB_NAMESPACE): Config {
  return parseConfig(controllerConfigState(state, metallbNamespace));
}

/** diagnosticConfig's result: a whole-cluster configuration, and MetalLB's error when only repeats were removed. */
export interface DiagnosticConfig {
  readonly config: Config;
  /**
   * Set when MetalLB rejects the configuration as written only because of repeated entries
   * (a selector, expression, value or pool name listed twice — MetalLB's `validateDuplicate` /
   * `validateLabelSelectorDuplicate`): `config` is then the configuration with the repeats removed,
   * which selects exactly the same objects, and this is MetalLB's error.
   */
  readonly rejected: ConfigError | null;
}

function selectorKey(sel: LabelSelector): string {
  const labels = Object.entries(sel.matchLabels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const exprs = [...new Set((sel.matchExpressions ?? []).map((e) => JSON.stringify([e.key, e.operator, [...new Set(e.values ?? [])].sort()])))];
  return JSON.stringify([labels, exprs]);
}

/** A selector list without repeats: ORed selectors, ANDed expressions and In/NotIn values are sets, so nothing selects differently. */
function dedupeSelectors(list: readonly LabelSelector[] | null | undefined): LabelSelector[] | null | undefined {
  if (!list) return list;
  const seen = new Set<string>();
  const out: LabelSelector[] = [];
  for (const sel of list) {
    const key = selectorKey(sel);
    if (seen.has(key)) continue;
    seen.add(key);
    const exprSeen = new Set<string>();
    const exprs = (sel.matchExpressions ?? [])
      .map((e) => (e.values ? { ...e, values: [...new Set(e.values)] } : e))
      .filter((e) => {
        const k = JSON.stringify([e.key, e.operator, [...(e.values ?? [])].sort()]);
        if (exprSeen.has(k)) return false;
        exprSeen.add(k);
        return true;
      });
    out.push(sel.matchExpressions ? { ...sel, matchExpressions: exprs } : sel);
  }
  return out;
}

function dedupeStrings(list: readonly string[] | null | undefined): string[] | null | undefined {
  return list ? [...new Set(list)] : list;
}

/** The lists of an L2Advertisement's or BGPAdvertisement's spec that withoutRepeats deduplicates. */
interface AdvertisementLists {
  ipAddressPools?: readonly string[] | null;
  ipAddressPoolSelectors?: readonly LabelSelector[] | null;
  nodeSelectors?: readonly LabelSelector[] | null;
  serviceSelectors?: readonly LabelSelector[] | null;
  peers?: readonly string[] | null;
}

/** The state with repeated selector and list entries of pools and advertisements removed (selects exactly the same objects). */
export function withoutRepeats(state: ClusterState): ClusterState {
  const ads = <T extends { spec?: AdvertisementLists }>(objs: readonly T[]): T[] =>
    objs.map((o) =>
      o.spec
        ? {
            ...o,
            spec: {
              ...o.spec,
              ...('ipAddressPools' in o.spec ? { ipAddressPools: dedupeStrings(o.spec.ipAddressPools) } : {}),
              ...('ipAddressPoolSelectors' in o.spec ? { ipAddressPoolSelectors: dedupeSelectors(o.spec.ipAddressPoolSelectors) } : {}),
              ...('nodeSelectors' in o.spec ? { nodeSelectors: dedupeSelectors(o.spec.nodeSelectors) } : {}),
              ...('serviceSelectors' in o.spec ? { serviceSelectors: dedupeSelectors(o.spec.serviceSelectors) } : {}),
              ...('peers' in o.spec ? { peers: dedupeStrings(o.spec.peers) } : {}),
            },
          }
        : o,
    );
  const pools = state.ipAddressPools.map((p) => {
    const sa = p.spec?.serviceAllocation;
    if (!sa) return p;
    return {
      ...p,
      spec: {
        ...p.spec,
        serviceAllocation: { ...sa, namespaces: dedupeStrings(sa.namespaces), namespaceSelectors: dedupeSelectors(sa.namespaceSelectors), serviceSelectors: dedupeSelectors(sa.serviceSelectors) },
      },
    };
  });
  return { ...state, ipAddressPools: pools, l2Advertisements: ads(state.l2Advertisements), bgpAdvertisements: ads(state.bgpAdvertisements) };
}

/**
 * One whole-cluster configuration, *not* what any MetalLB component runs: MetalLB's parser over
 * every CR in `metallbNamespace` (metallbView), BGPPeers' webhook-"transient" references
 * (password Secrets, BFDProfiles) cleared, and — when MetalLB rejects it only for repeated entries
 * — parsed again with the repeats removed (`rejected` then holds MetalLB's error). It serves the
 * election conformance adapter, whose cases (like MetalLB's unit tests) build configurations
 * without the parser's duplicate check. The CLI never explains with it: the controller has its
 * own configuration (controllerConfig) and each speaker its own (speakerConfigs), and a
 * configuration they reject is not applied.
 * @throws ConfigError naming the object, for any other configuration MetalLB would reject.
 */
export function diagnosticConfig(state: ClusterState, metallbNamespace: string = DEFAULT_METALLB_NAMESPACE): DiagnosticConfig {
  state = metallbView(state, metallbNamespace).state;
  const cleared = { ...state, bgpPeers: resetTransient(state.bgpPeers) };
  const parsed = checkConfig(cleared);
  if (parsed.ok) return { config: parsed.value, rejected: null };
  const err = parsed.error;
  if (!/duplicate definition of/.test(err.detail)) throw err;
  const repaired = checkConfig(withoutRepeats(cleared));
  if (!repaired.ok) throw err;
  return { config: repaired.value, rejected: err };
}

/**
 * Builds the context once per snapshot. Speakers: `--speakers` when given; else a running
 * speaker's memberlist view (`memberlist`) when given; else the nodes whose speaker pod is Ready
 * when the snapshot has speaker pods; else every Node (as MetalLB with memberlist disabled).
 * The controller's configuration drives the allocation; each speaker's own (speakerConfigs, built
 * for every Node and every live speaker) drives its decisions.
 * @throws ConfigError when the controller rejects the configuration (see controllerConfig).
 */
export function diagnosticContext(state: ClusterState, opts: DiagnosticOptions = {}): DiagnosticContext {
  const metallbNamespace = opts.metallbNamespace ?? DEFAULT_METALLB_NAMESPACE;
  const controller = controllerConfig(state, metallbNamespace);
  const loadBalancerClass = opts.loadBalancerClass ?? '';
  let speakers: readonly string[] | null;
  let speakersSource: SpeakersSource;
  if (opts.speakers) {
    speakers = [...opts.speakers];
    speakersSource = 'flag';
  } else if (opts.memberlist) {
    speakers = opts.memberlist.speakers === null ? null : [...opts.memberlist.speakers];
    speakersSource = speakers === null ? 'memberlist-disabled' : 'memberlist';
  } else {
    speakers = aliveSpeakers(state);
    speakersSource = speakers ? 'speaker-pods' : 'all-nodes';
  }
  const index = buildElectionIndex(state, speakers);
  const configs = speakerConfigs(state, [...index.nodeNames, ...(speakers ?? [])], metallbNamespace);
  let repaired: RepairedContext | null | undefined;
  return {
    state,
    controllerConfig: controller,
    speakerConfigs: configs,
    metallbNamespace,
    ignoredObjects: metallbView(state, metallbNamespace).ignored,
    speakers,
    speakersSource,
    ignoreExcludeLB: opts.ignoreExcludeLB === true,
    loadBalancerClass,
    dryRun: allocateAll(controller, state.services, { loadBalancerClass, ...(opts.focus !== undefined ? { focus: opts.focus } : {}) }),
    index,
    repaired: () => {
      if (repaired === undefined) repaired = repairedContext(state, configs, opts);
      return repaired;
    },
  };
}

/** The fix hint of diagnosticContext: the snapshot without repeated entries, when every speaker then accepts it. */
function repairedContext(state: ClusterState, configs: SpeakerConfigs, opts: DiagnosticOptions): RepairedContext | null {
  if (!rejectedEverywhere(configs)) return null;
  const fixed = withoutRepeats(state);
  let context: DiagnosticContext;
  try {
    context = diagnosticContext(fixed, opts);
  } catch (err) {
    if (err instanceof ConfigError) return null;
    throw err;
  }
  if (context.speakerConfigs.groups.some((g) => g.status === 'rejected')) return null;
  return { assuming: 'the repeated entries removed', context: { ...context, repaired: () => null } };
}
