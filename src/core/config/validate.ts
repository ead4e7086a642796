/**
 * The BGP-implementation compatibility checks MetalLB v0.16.1 runs before parsing
 * (internal/config/validation.go: `DiscardFRROnly` for the native speaker, `DiscardNativeOnly`
 * for FRR and FRR-K8s), and the `resetTransientErrorsFields` transformation the admission
 * webhooks apply before validating the whole cluster (internal/config/validator.go).
 * Both checks read the raw objects; they do not parse the configuration.
 */
import { ConfigError, quote } from '../errors.ts';
import type { BGPPeer, ClusterState, KubeObject, LabelSelector, Node } from '../kube.ts';
import { objectRef } from '../kube.ts';
import { parseSelector } from '../labels.ts';
import { isCommunityError, parseCommunity } from './community.ts';
import { parseDurationNs } from './duration.ts';
import { parseAddressEntry } from './pool.ts';
import type { PoolBlock, Selector } from './types.ts';

/** Where violations go: `strict` throws the first, otherwise they are collected. */
interface Sink {
  readonly strict: boolean;
  readonly errors: ConfigError[];
}

function emit(sink: Sink | undefined, err: ConfigError): void {
  if (!sink || sink.strict) throw err;
  sink.errors.push(err);
}

function spec(p: KubeObject): Record<string, unknown> {
  return ((p as { spec?: unknown }).spec ?? {}) as Record<string, unknown>;
}

function durationNonZero(v: unknown): boolean {
  try {
    return parseDurationNs(v as string) !== 0n;
  } catch {
    return true;
  }
}

const NATIVE_PEER_RULES: Array<[test: (s: Record<string, unknown>) => boolean, what: string]> = [
  [(s) => !!s.bfdProfile, 'has bfdProfile set'],
  [(s) => s.keepaliveTime != null && durationNonZero(s.keepaliveTime), 'has keepaliveTime set'],
  [(s) => !!s.vrf, 'has vrf set'],
  [(s) => s.connectTime != null, 'has connectTime set'],
  [(s) => s.enableGracefulRestart === true, 'has enableGracefulRestart set'],
  [(s) => s.disableMP === true, 'has disableMP set'],
  [(s) => s.dualStackAddressFamily === true, 'has dualStackAddressFamily set'],
  [(s) => !!s.dynamicASN, 'has dynamicASN set'],
  [(s) => !!s.interface, 'has interface set'],
  [(s) => typeof s.localASN === 'number' && s.localASN !== 0, 'has localASN set'],
];

/**
 * The native BGP speaker's check (MetalLB `DiscardFRROnly`), in order: per BGPPeer the FRR-only
 * fields (bfdProfile, non-zero keepaliveTime, vrf, connectTime, enableGracefulRestart,
 * disableMP, dualStackAddressFamily, dynamicASN, interface, localASN); any BFDProfile; an IPv6
 * block in a pool some BGPAdvertisement advertises (entries parsed as for IPAddressPool, invalid
 * entries and invalid pool selectors rejected); a large community in a BGPAdvertisement or a
 * Community alias value (unparseable strings ignored).
 *
 * @param sink internal: collect instead of throwing (collectConfigErrors).
 * @throws ConfigError naming the object, at the first violation.
 */
export function validateNative(state: ClusterState, sink?: Sink): void {
  for (const p of state.bgpPeers) {
    const s = spec(p);
    for (const [test, what] of NATIVE_PEER_RULES) {
      if (test(s)) {
        emit(sink, new ConfigError(`${what}, not supported by the native BGP mode (use the frr or frr-k8s mode)`, objectRef(p)));
        break;
      }
    }
  }
  if (state.bfdProfiles.length > 0) {
    emit(sink, new ConfigError('BFD profiles are not supported by the native BGP mode', objectRef(state.bfdProfiles[0])));
  }
  if (state.bgpAdvertisements.length > 0) {
    let all = false;
    const names = new Set<string>();
    const selectors: Selector[] = [];
    for (const adv of state.bgpAdvertisements) {
      const pools = adv.spec?.ipAddressPools ?? [];
      const sels = adv.spec?.ipAddressPoolSelectors ?? [];
      if (pools.length === 0 && sels.length === 0) {
        all = true;
        break;
      }
      for (const n of pools) names.add(n);
      for (const sel of sels) {
        try {
          selectors.push(parseSelector(sel));
        } catch (err) {
          emit(sink, new ConfigError(`invalid ipAddressPoolSelectors ${quote(sel)}: ${(err as Error).message}`, objectRef(adv)));
        }
      }
    }
    for (const pool of state.ipAddressPools) {
      const name = pool.metadata?.name ?? '';
      const advertised = all || (names.size === 0 && selectors.length === 0) || names.has(name) || selectors.some((s) => s.matches(pool.metadata?.labels));
      if (!advertised) continue;
      for (const entry of pool.spec?.addresses ?? []) {
        let blocks: PoolBlock[];
        try {
          blocks = parseAddressEntry(entry);
        } catch (err) {
          emit(sink, new ConfigError(`invalid CIDR ${quote(entry)} in pool "${name}": ${(err as Error).message}`, objectRef(pool)));
          continue;
        }
        const v6 = blocks.find((b) => b.cidr.family === 'ipv6');
        if (v6) {
          emit(sink, new ConfigError(`pool "${name}" has IPv6 address ${quote(entry)} advertised by BGP, native BGP mode does not support IPv6`, objectRef(pool)));
          break;
        }
      }
    }
  }
  for (const adv of state.bgpAdvertisements) {
    for (const c of adv.spec?.communities ?? []) {
      const parsed = parseCommunity(c);
      if (!isCommunityError(parsed) && parsed.kind === 'large') {
        emit(sink, new ConfigError(`native BGP mode only supports legacy communities, community "${c}" is a large community`, objectRef(adv)));
      }
    }
  }
  for (const co of state.communities) {
    for (const alias of co.spec?.communities ?? []) {
      const parsed = parseCommunity(alias?.value ?? '');
      if (!isCommunityError(parsed) && parsed.kind === 'large') {
        emit(sink, new ConfigError(`native BGP mode only supports legacy communities, alias "${alias?.name ?? ''}" is a large community`, objectRef(co)));
      }
    }
  }
}

/** MetalLB `PeerIdentifier`: peerAddress (or interface without address), `-<vrf>` appended when set. */
export function peerIdentifier(p: BGPPeer): string {
  const s = spec(p);
  const address = typeof s.peerAddress === 'string' ? s.peerAddress : '';
  const id = address !== '' ? address : typeof s.interface === 'string' ? s.interface : '';
  return s.vrf ? `${id}-${String(s.vrf)}` : id;
}

/** Names of the Nodes a peer's nodeSelectors select (all Nodes without selectors). @throws Error on an invalid selector. */
function peerNodes(p: BGPPeer, nodes: readonly Node[]): Set<string> {
  const sels = ((spec(p).nodeSelectors ?? []) as LabelSelector[]).map((s) => parseSelector(s));
  return new Set(nodes.filter((n) => sels.length === 0 || sels.some((s) => s.matches(n.metadata?.labels))).map((n) => n.metadata?.name ?? ''));
}

/**
 * The FRR / FRR-K8s check (MetalLB `DiscardNativeOnly`): each BGPPeer against every earlier one
 * it shares a node with (always when there are no Node objects), rejected when the routerIDs
 * differ, when the peer identifiers (address or interface, plus `-vrf`) are equal, or when
 * myASN differs within the same VRF. An invalid nodeSelector is rejected when evaluated.
 *
 * @param sink internal: collect instead of throwing (collectConfigErrors).
 * @throws ConfigError naming the later peer, at the first violation.
 */
export function validateFRR(state: ClusterState, sink?: Sink): void {
  const peers = state.bgpPeers;
  const nodeSets: Array<Set<string> | undefined> = [];
  const nodesOf = (i: number): Set<string> => {
    if (!nodeSets[i]) nodeSets[i] = peerNodes(peers[i], state.nodes);
    return nodeSets[i]!;
  };
  const broken = new Set<number>();
  for (let i = 0; i < peers.length; i++) {
    for (let j = 0; j < i; j++) {
      if (broken.has(i)) break;
      if (broken.has(j)) continue;
      const p = peers[i];
      const q = peers[j];
      let shares = true;
      if (state.nodes.length > 0) {
        let a: Set<string>;
        let b: Set<string>;
        try {
          a = nodesOf(i);
        } catch (err) {
          broken.add(i);
          emit(sink, new ConfigError(`invalid nodeSelectors: ${(err as Error).message}`, objectRef(p)));
          break;
        }
        try {
          b = nodesOf(j);
        } catch (err) {
          broken.add(j);
          emit(sink, new ConfigError(`invalid nodeSelectors: ${(err as Error).message}`, objectRef(q)));
          continue;
        }
        shares = [...a].some((n) => b.has(n));
      }
      if (!shares) continue;
      const ps = spec(p);
      const qs = spec(q);
      const qName = q.metadata?.name ?? '';
      if ((ps.routerID ?? '') !== (qs.routerID ?? '')) {
        emit(
          sink,
          new ConfigError(
            `routerID "${String(ps.routerID ?? '')}" differs from "${String(qs.routerID ?? '')}" of BGPPeer ${qName}; in FRR mode peers selecting the same node must all have the same routerID`,
            objectRef(p),
          ),
        );
      } else if (peerIdentifier(p) === peerIdentifier(q)) {
        emit(sink, new ConfigError(`peer ${peerIdentifier(p)} already exists (BGPPeer ${qName}); FRR mode doesn't support duplicate BGPPeers selecting the same node`, objectRef(p)));
      } else if ((ps.myASN ?? 0) !== (qs.myASN ?? 0) && (ps.vrf ?? '') === (qs.vrf ?? '')) {
        emit(sink, new ConfigError(`myASN differs from BGPPeer ${qName}; in FRR mode peers selecting the same node must have the same myASN within the same VRF`, objectRef(p)));
      }
    }
  }
}

/**
 * MetalLB `resetTransientErrorsFields`, on copies: every BGPPeer loses `spec.bfdProfile` and
 * `spec.passwordSecret`; every BGPAdvertisement keeps only the `spec.communities` entries that
 * contain `:` (an emptied list is removed). Other objects are returned unchanged; order kept.
 * Used before the webhooks' whole-cluster validation, so that references to objects created
 * later do not fail it.
 */
export function resetTransient<T extends KubeObject>(objects: readonly T[]): T[] {
  return objects.map((o) => {
    if (o.kind === 'BGPPeer') {
      const copy = structuredClone(o) as KubeObject & { spec?: Record<string, unknown> };
      if (copy.spec) {
        delete copy.spec.bfdProfile;
        delete copy.spec.passwordSecret;
      }
      return copy as T;
    }
    if (o.kind === 'BGPAdvertisement') {
      const copy = structuredClone(o) as KubeObject & { spec?: { communities?: string[] | null } };
      if (copy.spec && 'communities' in copy.spec) {
        const kept = (copy.spec.communities ?? []).filter((c) => typeof c === 'string' && c.includes(':'));
        if (kept.length > 0) copy.spec.communities = kept;
        else delete copy.spec.communities;
      }
      return copy as T;
    }
    return o;
  });
}
