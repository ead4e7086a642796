/**
 * What MetalLB v0.16.1 accepts silently but is most likely a mistake: advertisements naming
 * pools that do not exist, pools no advertisement covers, node selectors that select no usable
 * node, and deprecated or misspelled Service annotations. Never errors: MetalLB runs with these.
 */
import type { ClusterState, KubeObject, LabelSelector } from '../kube.ts';
import { EXCLUDE_LB_LABEL, objectRef } from '../kube.ts';
import { parseSelector } from '../labels.ts';
import { parseConfig } from './parse.ts';
import type { Config, Selector } from './types.ts';

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

/** The Service annotations MetalLB v0.16.1 reads or writes. */
export const KNOWN_SERVICE_ANNOTATIONS = [
  'metallb.io/address-pool',
  'metallb.io/loadBalancerIPs',
  'metallb.io/allow-shared-ip',
  'metallb.io/ip-allocated-from-pool',
] as const;

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

/** The known annotation a key is probably a misspelling of (case-insensitive distance <= 3), or undefined. */
export function closestKnownAnnotation(key: string): string | undefined {
  let best: string | undefined;
  let bestDistance = 4;
  for (const known of KNOWN_SERVICE_ANNOTATIONS) {
    const dist = editDistance(key.toLowerCase(), known.toLowerCase());
    if (dist < bestDistance) {
      best = known;
      bestDistance = dist;
    }
  }
  return best;
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
 * - `deprecated-annotation`: a Service annotation under `metallb.universe.tf/`.
 * - `unknown-annotation`: an unknown `metallb.io/` Service annotation close to a known one.
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
      } else if (selected.every((n) => Object.prototype.hasOwnProperty.call(n.metadata?.labels ?? {}, EXCLUDE_LB_LABEL))) {
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
    for (const key of Object.keys(svc.metadata?.annotations ?? {})) {
      if (key.startsWith(DEPRECATED_PREFIX)) {
        const replacement = `metallb.io/${key.slice(DEPRECATED_PREFIX.length)}`;
        out.push({
          id: 'deprecated-annotation',
          object: objectRef(svc),
          message: `annotation ${key} is deprecated`,
          fix: `use ${replacement} instead`,
        });
      } else if (key.startsWith('metallb.io/') && !(KNOWN_SERVICE_ANNOTATIONS as readonly string[]).includes(key)) {
        const close = closestKnownAnnotation(key);
        if (!close) continue;
        out.push({
          id: 'unknown-annotation',
          object: objectRef(svc),
          message: `unknown annotation ${key}: MetalLB ignores it`,
          fix: `did you mean ${close}?`,
        });
      }
    }
  }
  return out;
}
