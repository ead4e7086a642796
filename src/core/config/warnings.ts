/**
 * What MetalLB v0.16.1 accepts silently but is most likely a mistake: advertisements naming
 * pools that do not exist, pools no advertisement covers, node selectors that select no usable
 * node, and deprecated or misspelled Service annotations. Never errors: MetalLB runs with these.
 */
import type { ClusterState, KubeObject, LabelSelector } from '../kube.ts';
import { carriesExclusionLabel, EXCLUDE_LB_LABEL, objectRef } from '../kube.ts';
import { parseSelector } from '../labels.ts';
import { parseConfig } from './parse.ts';
import type { Config, Selector } from './types.ts';
import { quote } from '../errors.ts';

/**
 * One warning. `id` is stable: `advertisement-unknown-pool`, `pool-not-advertised`,
 * `nodeselector-only-excluded`, `nodeselector-no-nodes`, `deprecated-annotation`,
 * `unknown-annotation`. `object` is the objectRef of the object to fix.
 */
export interface ConfigWarning {
  id: string;
  object: string;
  message: string;
  fix: string;
}

/**
 * The Service annotations MetalLB v0.16.1 reads (controller/service.go: the stable `metallb.io/`
 * keys, each falling back to its deprecated `metallb.universe.tf/` twin when absent). The only
 * annotations a did-you-mean ever proposes.
 */
export const READ_SERVICE_ANNOTATIONS = ['metallb.io/address-pool', 'metallb.io/loadBalancerIPs', 'metallb.io/allow-shared-ip'] as const;

/** The annotation MetalLB's controller writes on every Service it gives an address (never reads). */
export const WRITTEN_SERVICE_ANNOTATION = 'metallb.io/ip-allocated-from-pool';

/** The Service annotations MetalLB v0.16.1 reads or writes. */
export const KNOWN_SERVICE_ANNOTATIONS = [...READ_SERVICE_ANNOTATIONS, WRITTEN_SERVICE_ANNOTATION] as const;

const STABLE_PREFIX = 'metallb.io/';
const DEPRECATED_PREFIX = 'metallb.universe.tf/';

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** Words people use for each annotation MetalLB reads (`metallb.io/pool`, `metallb.io/ip`, `metallb.io/shared-ip`). */
const ANNOTATION_WORDS: ReadonlyArray<readonly [RegExp, (typeof READ_SERVICE_ANNOTATIONS)[number]]> = [
  [/pool/i, 'metallb.io/address-pool'],
  [/shar/i, 'metallb.io/allow-shared-ip'],
  [/(^|[^a-z])ips?$|loadbalancer|^ip-?addr(ess)?(es)?$|^address(es)?$/i, 'metallb.io/loadBalancerIPs'],
];

/**
 * The annotation MetalLB reads that `key` (any prefix) probably means, or undefined: the
 * `metallb.io/` key whose name is within a case-insensitive edit distance of 3, else the one whose
 * word the name carries (`pool`, `shar…`, `ip`/`ips`/`loadbalancer…`). Only ever one of
 * READ_SERVICE_ANNOTATIONS.
 */
export function closestKnownAnnotation(key: string): string | undefined {
  const name = key.slice(key.indexOf('/') + 1).toLowerCase();
  let best: string | undefined;
  let bestDistance = 4;
  for (const known of READ_SERVICE_ANNOTATIONS) {
    const dist = editDistance(name, known.slice(STABLE_PREFIX.length).toLowerCase());
    if (dist < bestDistance) {
      best = known;
      bestDistance = dist;
    }
  }
  if (best) return best;
  return ANNOTATION_WORDS.find(([re]) => re.test(name))?.[1];
}

/** One problem with a Service annotation MetalLB would otherwise be expected to read. */
export interface AnnotationProblem {
  /** `unknown-annotation` (MetalLB ignores it) or `deprecated-annotation` (read, or shadowed, with a deprecatedAnnotation event). */
  readonly id: 'unknown-annotation' | 'deprecated-annotation';
  readonly key: string;
  /** What MetalLB does with it. */
  readonly message: string;
  readonly fix: string;
  /** For unknown ones: the annotation MetalLB reads it probably means (did you mean). */
  readonly meant?: string;
  /** true when MetalLB does not read the value at all. */
  readonly ignored: boolean;
}

/** `metallb.io`, `metallb.universe.tf`, and near misses of them (`metalb.io`, `metallb.universe.io`, `metallb`). */
function looksLikeMetalLBPrefix(prefix: string): boolean {
  const p = prefix.toLowerCase();
  return /metal+b/.test(p) || editDistance(p, 'metallb.io') <= 2 || editDistance(p, 'metallb.universe.tf') <= 3;
}

/**
 * The annotations of a Service MetalLB v0.16.1 ignores or reads only as deprecated, each with what
 * MetalLB does and a fix:
 * - `metallb.io/X` other than address-pool, loadBalancerIPs, allow-shared-ip and the
 *   ip-allocated-from-pool it writes itself: ignored (case matters: `loadbalancerIPs` is ignored);
 * - `metallb.universe.tf/X` for those three: read when the `metallb.io/` twin is absent, shadowed
 *   otherwise; every other `metallb.universe.tf/` key is ignored. MetalLB's controller emits a
 *   `deprecatedAnnotation` Warning event for every key with that prefix;
 * - a key whose prefix is a near miss of the two (`metalb.io/…`, `metallb.universe.io/…`): ignored.
 * The did-you-mean (`meant`) only ever names an annotation MetalLB reads. Object order of keys.
 */
export function serviceAnnotationProblems(annotations: Readonly<Record<string, string>> | undefined | null): AnnotationProblem[] {
  const out: AnnotationProblem[] = [];
  const a = annotations ?? {};
  const read = READ_SERVICE_ANNOTATIONS as readonly string[];
  const readNames = read.map((k) => k.slice(STABLE_PREFIX.length));
  for (const key of Object.keys(a)) {
    const slash = key.indexOf('/');
    if (slash < 0) continue;
    const prefix = key.slice(0, slash + 1);
    const name = key.slice(slash + 1);
    if (prefix === STABLE_PREFIX) {
      if (read.includes(key) || key === WRITTEN_SERVICE_ANNOTATION) continue;
      const meant = closestKnownAnnotation(key);
      out.push({
        id: 'unknown-annotation',
        key,
        ignored: true,
        ...(meant ? { meant } : {}),
        message: `MetalLB ignores annotation ${key}: it reads only ${read.join(', ')} (names are case-sensitive)`,
        fix: meant ? `did you mean ${meant}? rename the annotation to it` : `remove it; MetalLB reads only ${read.join(', ')}`,
      });
    } else if (prefix === DEPRECATED_PREFIX) {
      const i = readNames.indexOf(name);
      if (i >= 0) {
        const stable = read[i]!;
        const shadowed = Object.hasOwn(a, stable);
        out.push({
          id: 'deprecated-annotation',
          key,
          ignored: shadowed,
          message: shadowed
            ? `annotation ${key} is deprecated and ignored here: ${stable} is also set${a[stable] !== a[key] ? ` (${quote(a[stable])}, not ${quote(a[key])})` : ''} and wins; MetalLB's controller still emits a deprecatedAnnotation Warning event for it`
            : `annotation ${key} is deprecated: MetalLB v0.16.1 still reads it (${stable} is absent) and emits a deprecatedAnnotation Warning event for it`,
          fix: shadowed ? `remove ${key}` : `use ${stable} instead`,
        });
      } else {
        const meant = closestKnownAnnotation(key);
        const leftOver = name === 'ip-allocated-from-pool';
        out.push({
          id: 'unknown-annotation',
          key,
          ignored: true,
          ...(meant && !leftOver ? { meant } : {}),
          message: leftOver
            ? `MetalLB ignores annotation ${key}: an older MetalLB wrote it; v0.16.1 writes ${WRITTEN_SERVICE_ANNOTATION} instead (and emits a deprecatedAnnotation Warning event for the old key)`
            : `MetalLB ignores annotation ${key}: of the deprecated ${DEPRECATED_PREFIX} keys it reads only address-pool, loadBalancerIPs and allow-shared-ip (and emits a deprecatedAnnotation Warning event for every key with that prefix)`,
          fix: leftOver ? `remove ${key}` : meant ? `did you mean ${meant}? rename the annotation to it` : `remove it; MetalLB reads only ${read.join(', ')}`,
        });
      }
    } else if (looksLikeMetalLBPrefix(prefix.slice(0, -1))) {
      const meant = closestKnownAnnotation(key);
      out.push({
        id: 'unknown-annotation',
        key,
        ignored: true,
        ...(meant ? { meant } : {}),
        message: `MetalLB ignores annotation ${key}: its prefix is not ${STABLE_PREFIX} (MetalLB reads only ${read.join(', ')})`,
        fix: meant ? `did you mean ${meant}? rename the annotation to it` : `use one of ${read.join(', ')}`,
      });
    }
  }
  return out;
}

function selectorsOf(list: readonly LabelSelector[] | null | undefined): Selector[] {
  const out: Selector[] = [];
  for (const s of list ?? []) {
    try {
      out.push(parseSelector(s));
    } catch {
      // Invalid selectors are errors (collectConfigErrors), not warnings.
    }
  }
  return out;
}

type Adv = KubeObject & { spec?: { ipAddressPools?: string[] | null; ipAddressPoolSelectors?: LabelSelector[] | null; nodeSelectors?: LabelSelector[] | null } };

/** Names of the pools an advertisement covers, by MetalLB's attachment rule on the raw objects. */
function coveredPools(adv: Adv, state: ClusterState): Set<string> {
  const names = adv.spec?.ipAddressPools ?? [];
  const sels = adv.spec?.ipAddressPoolSelectors ?? [];
  const all = names.length === 0 && sels.length === 0;
  const parsed = selectorsOf(sels);
  const out = new Set<string>();
  for (const p of state.ipAddressPools) {
    const n = p.metadata?.name ?? '';
    if (all || names.includes(n) || parsed.some((s) => s.matches(p.metadata?.labels))) out.add(n);
  }
  return out;
}

/**
 * Warnings about a configuration MetalLB accepts silently:
 *
 * - `advertisement-unknown-pool`: an L2/BGPAdvertisement names, in `ipAddressPools`, a pool
 *   that does not exist (MetalLB ignores the name).
 * - `pool-not-advertised`: no L2Advertisement or BGPAdvertisement covers a pool, so its IPs are
 *   assigned but never announced. Uses `config` (or parseConfig(state) when it succeeds, so a
 *   BGPAdvertisement rejected for a pool does not count), otherwise the raw attachment rules.
 * - `nodeselector-only-excluded` / `nodeselector-no-nodes`: an advertisement with
 *   `nodeSelectors` that select only Nodes labelled `node.kubernetes.io/exclude-from-external-load-balancers`
 *   (by key) or no Node at all (only when the state has Node objects).
 * - `deprecated-annotation`: a Service annotation MetalLB reads under `metallb.universe.tf/` (or
 *   ignores there because its `metallb.io/` twin is set).
 * - `unknown-annotation`: a Service annotation MetalLB ignores under `metallb.io/`,
 *   `metallb.universe.tf/` or a near miss of them (serviceAnnotationProblems), with a did-you-mean.
 *
 * Order: advertisements, pools, node selectors, Services; each in object order.
 */
export function configWarnings(state: ClusterState, config?: Config): ConfigWarning[] {
  const out: ConfigWarning[] = [];
  const advs: Array<{ kind: 'L2Advertisement' | 'BGPAdvertisement'; obj: Adv }> = [
    ...state.l2Advertisements.map((obj) => ({ kind: 'L2Advertisement' as const, obj })),
    ...state.bgpAdvertisements.map((obj) => ({ kind: 'BGPAdvertisement' as const, obj })),
  ];
  const poolNames = new Set(state.ipAddressPools.map((p) => p.metadata?.name ?? ''));

  for (const { kind, obj } of advs) {
    for (const name of obj.spec?.ipAddressPools ?? []) {
      if (poolNames.has(name)) continue;
      out.push({
        id: 'advertisement-unknown-pool',
        object: objectRef(obj),
        message: `${kind} names IPAddressPool "${name}", which does not exist; MetalLB ignores the name`,
        fix: `create IPAddressPool "${name}" or correct the name in spec.ipAddressPools`,
      });
    }
  }

  let effective = config;
  if (!effective) {
    try {
      effective = parseConfig(state);
    } catch {
      effective = undefined;
    }
  }
  const covered = new Set<string>();
  if (effective) {
    for (const p of effective.pools.values()) {
      if (p.l2Advertisements.length > 0 || p.bgpAdvertisements.length > 0) covered.add(p.name);
    }
  } else {
    for (const { obj } of advs) for (const n of coveredPools(obj, state)) covered.add(n);
  }
  for (const p of state.ipAddressPools) {
    const name = p.metadata?.name ?? '';
    if (!name || covered.has(name)) continue;
    if (effective && !effective.pools.has(name)) continue;
    out.push({
      id: 'pool-not-advertised',
      object: objectRef(p),
      message: `no L2Advertisement or BGPAdvertisement covers IPAddressPool "${name}": its IPs are assigned to Services but never announced`,
      fix: `create an L2Advertisement or BGPAdvertisement listing "${name}" in spec.ipAddressPools (or with no pool selection at all)`,
    });
  }

  if (state.nodes.length > 0) {
    for (const { kind, obj } of advs) {
      const sels = obj.spec?.nodeSelectors ?? [];
      if (sels.length === 0) continue;
      const parsed = selectorsOf(sels);
      if (parsed.length !== sels.length) continue;
      const selected = state.nodes.filter((n) => parsed.some((s) => s.matches(n.metadata?.labels)));
      if (selected.length === 0) {
        out.push({
          id: 'nodeselector-no-nodes',
          object: objectRef(obj),
          message: `${kind} nodeSelectors select no Node: nothing is announced through it`,
          fix: 'correct spec.nodeSelectors so that they match the labels of the Nodes that should announce',
        });
      } else if (selected.every(carriesExclusionLabel)) {
        out.push({
          id: 'nodeselector-only-excluded',
          object: objectRef(obj),
          message: `${kind} nodeSelectors select only Nodes labelled ${EXCLUDE_LB_LABEL} (${selected.map((n) => n.metadata?.name ?? '').join(', ')}), which MetalLB never announces from`,
          fix: `select Nodes without the ${EXCLUDE_LB_LABEL} label, or remove that label from the Nodes`,
        });
      }
    }
  }

  for (const svc of state.services) {
    for (const p of serviceAnnotationProblems(svc.metadata?.annotations)) {
      out.push({ id: p.id, object: objectRef(svc), message: p.message, fix: p.fix });
    }
  }
  return out;
}
