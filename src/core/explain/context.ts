/**
 * What the diagnostic commands (`explain`, `whois`, `allocate --dry-run`) compute once per
 * snapshot before answering: the effective configuration, the live-speaker list and where it came
 * from, the controller's dry run and the election index.
 */
import { parseConfig, resetTransient } from '../config/index.ts';
import type { Config } from '../config/types.ts';
import { allocateAll, type AllocateAllResult } from '../controller/index.ts';
import { aliveSpeakers, buildElectionIndex, type ElectionIndex } from '../election/index.ts';
import { ConfigError } from '../errors.ts';
import { DEFAULT_METALLB_NAMESPACE, type ClusterState, type KubeObject, type LabelSelector } from '../kube.ts';
import type { SpeakersSource } from './explain.ts';

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
}

/** ClusterState lists MetalLB reads from its own namespace only (internal/k8s/k8s.go caches them there). */
const NAMESPACED_CONFIG_LISTS = [
  'ipAddressPools', 'l2Advertisements', 'bgpAdvertisements', 'bgpPeers', 'communities', 'bfdProfiles', 'secrets', 'configMaps',
] as const;

/**
 * What MetalLB sees of a state: its CRs, Secrets and ConfigMaps only from `metallbNamespace`
 * (objects without a namespace, as in hand-written manifests, count as being there), and the
 * objects it ignores for that reason, so `validate` can say so.
 */
export function metallbView(state: ClusterState, metallbNamespace: string = DEFAULT_METALLB_NAMESPACE): { state: ClusterState; ignored: KubeObject[] } {
  const ignored: KubeObject[] = [];
  const view: ClusterState = { ...state };
  for (const list of NAMESPACED_CONFIG_LISTS) {
    const objects = state[list] as readonly KubeObject[];
    const kept = objects.filter((o) => {
      const ns = o.metadata?.namespace;
      const mine = !ns || ns === metallbNamespace;
      if (!mine && list !== 'secrets' && list !== 'configMaps') ignored.push(o);
      return mine;
    });
    (view as unknown as Record<string, KubeObject[]>)[list] = kept;
  }
  return { state: view, ignored };
}

/** Everything explainService / whoisIP need besides the Service or address. */
export interface DiagnosticContext {
  readonly state: ClusterState;
  readonly config: Config;
  /** MetalLB's error when it rejects the configuration for repeated entries only (see diagnosticConfig). */
  readonly configRejected: ConfigError | null;
  /** metallb.io objects outside MetalLB's namespace, which MetalLB never sees. */
  readonly ignoredObjects: readonly KubeObject[];
  readonly speakers: readonly string[] | null;
  readonly speakersSource: SpeakersSource;
  readonly ignoreExcludeLB: boolean;
  /** MetalLB's `--lb-class` ("" = only Services without a class). */
  readonly loadBalancerClass: string;
  readonly dryRun: AllocateAllResult;
  readonly index: ElectionIndex;
}

/** The configuration the diagnostics explain with, and whether MetalLB would reject the real one. */
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
    const exprs = (sel.matchExpressions ?? []).map((e) => (e.values ? { ...e, values: [...new Set(e.values)] } : e))
      .filter((e) => { const k = JSON.stringify([e.key, e.operator, [...(e.values ?? [])].sort()]); return exprSeen.has(k) ? false : (exprSeen.add(k), true); });
    out.push(sel.matchExpressions ? { ...sel, matchExpressions: exprs } : sel);
  }
  return out;
}

function dedupeStrings(list: readonly string[] | null | undefined): string[] | null | undefined {
  return list ? [...new Set(list)] : list;
}

/** The state with repeated selector and list entries of pools and advertisements removed. */
function withoutRepeats(state: ClusterState): ClusterState {
  const ads = <T extends { spec?: Record<string, any> }>(objs: readonly T[]): T[] => objs.map((o) => (o.spec ? {
    ...o, spec: { ...o.spec,
      ...('ipAddressPools' in o.spec ? { ipAddressPools: dedupeStrings(o.spec.ipAddressPools) } : {}),
      ...('ipAddressPoolSelectors' in o.spec ? { ipAddressPoolSelectors: dedupeSelectors(o.spec.ipAddressPoolSelectors) } : {}),
      ...('nodeSelectors' in o.spec ? { nodeSelectors: dedupeSelectors(o.spec.nodeSelectors) } : {}),
      ...('serviceSelectors' in o.spec ? { serviceSelectors: dedupeSelectors(o.spec.serviceSelectors) } : {}),
      ...('peers' in o.spec ? { peers: dedupeStrings(o.spec.peers) } : {}),
    } } : o));
  const pools = state.ipAddressPools.map((p) => {
    const sa = p.spec?.serviceAllocation;
    if (!sa) return p;
    return { ...p, spec: { ...p.spec, serviceAllocation: { ...sa, namespaces: dedupeStrings(sa.namespaces),
      namespaceSelectors: dedupeSelectors(sa.namespaceSelectors), serviceSelectors: dedupeSelectors(sa.serviceSelectors) } } };
  });
  return { ...state, ipAddressPools: pools, l2Advertisements: ads(state.l2Advertisements), bgpAdvertisements: ads(state.bgpAdvertisements) };
}

/**
 * The configuration as the diagnostics use it: MetalLB's parser over the snapshot's CRs in
 * `metallbNamespace` (metallbView), after
 * clearing the BGPPeer references a snapshot often lacks the targets of (password Secrets,
 * BFDProfiles: MetalLB's webhook "transient" fields; `validate` reports those). When MetalLB
 * rejects the configuration only for repeated entries, the speakers keep their previous
 * configuration, which a snapshot cannot show: the diagnostics then explain the configuration
 * without the repeats and report MetalLB's error (`rejected`).
 * @throws ConfigError (exit 2) naming the object, for any other configuration MetalLB would reject.
 */
export function diagnosticConfig(state: ClusterState, metallbNamespace: string = DEFAULT_METALLB_NAMESPACE): DiagnosticConfig {
  state = metallbView(state, metallbNamespace).state;
  const cleared = { ...state, bgpPeers: resetTransient(state.bgpPeers) };
  try {
    return { config: parseConfig(cleared), rejected: null };
  } catch (err) {
    if (!(err instanceof ConfigError) || !/duplicate definition of/.test(err.message)) throw err;
    let config: Config;
    try {
      config = parseConfig(withoutRepeats(cleared));
    } catch {
      throw err;
    }
    return { config, rejected: err };
  }
}

/**
 * Builds the context once per snapshot. Speakers: `--speakers` when given; else a running
 * speaker's memberlist view (`memberlist`) when given; else the nodes whose speaker pod is Ready
 * when the snapshot has speaker pods; else every Node (as MetalLB with memberlist disabled).
 * @throws ConfigError for a configuration MetalLB would reject.
 */
export function diagnosticContext(state: ClusterState, opts: DiagnosticOptions = {}): DiagnosticContext {
  const metallbNamespace = opts.metallbNamespace ?? DEFAULT_METALLB_NAMESPACE;
  const { config, rejected } = diagnosticConfig(state, metallbNamespace);
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
  return {
    state, config, configRejected: rejected, ignoredObjects: metallbView(state, metallbNamespace).ignored,
    speakers, speakersSource, ignoreExcludeLB: opts.ignoreExcludeLB === true, loadBalancerClass,
    dryRun: allocateAll(config, state.services, { loadBalancerClass }),
    index: buildElectionIndex(state, speakers),
  };
}
