/**
 * The FRRConfiguration MetalLB v0.16.1's speaker writes for its node in frr-k8s mode
 * (`internal/bgp/frrk8s/frrk8s.go` updateConfig), as a pure function of the node's sessions, the
 * routes it announces and the BFD profiles; and the comparison the writer uses to skip writes
 * that change nothing once the apiserver has applied the CRD's defaults.
 */
import type { BFDProfileConfig, Peer } from '../config/types.ts';
import { formatDurationNs, secondsToNs } from '../config/duration.ts';
import { compareStrings } from '../labels.ts';
import type { BGPRoute } from '../bgp/routes.ts';
import { routerKey, sessionKey, sessionPassword, type SecretHandling } from '../bgp/sessions.ts';
import { FRR_CONFIGURATION_KIND, FRRK8S_API_VERSION, type FRRBFDProfile, type FRRConfiguration, type FRRConfigurationSpec, type FRRNeighbor, type FRRRouter } from './types.ts';

/** MetalLB `ConfigName`: the object's name for `node`. */
export function frrConfigurationName(node: string): string {
  return `metallb-${node}`;
}

/** The node label frr-k8s selects the node by; MetalLB puts the node *name* in it. */
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/** Input of frrConfiguration. */
export interface FRRConfigurationInput {
  /** the speaker's node name */
  readonly node: string;
  /** the frr-k8s namespace (`--frrk8s-namespace`, default the speaker's) */
  readonly namespace: string;
  /** the peers with a session on the node (bgpSessions), in configuration order */
  readonly sessions: readonly Peer[];
  /** every route the node announces (routesFor of each announced service) */
  readonly routes: readonly BGPRoute[];
  /**
   * The BFD profiles the speaker last synced. MetalLB syncs them only when the configuration has
   * at least one, so after the last one is removed the old list stays (the caller keeps it).
   */
  readonly bfdProfiles: readonly BFDProfileConfig[];
  readonly secretHandling: SecretHandling;
}

function durationOf(seconds: number | undefined): string | undefined {
  return seconds === undefined ? undefined : formatDurationNs(secondsToNs(seconds));
}

function sortedUnique(list: readonly string[]): string[] {
  return [...new Set(list)].sort(compareStrings);
}

function neighborOf(p: Peer, handling: SecretHandling, routes: readonly BGPRoute[], routerPrefixes: Set<string>): FRRNeighbor {
  const { password, passwordSecret } = sessionPassword(p, handling);
  const n: FRRNeighbor = {
    ...(p.dynamicASN === '' ? (p.asn !== 0 ? { asn: p.asn } : {}) : { dynamicASN: p.dynamicASN }),
    ...(p.address ? { address: p.address } : {}),
    ...(p.interface ? { interface: p.interface } : {}),
    port: p.port,
    ...(password !== '' ? { password } : {}),
    passwordSecret,
    toAdvertise: { allowed: {} },
    toReceive: { allowed: {} },
  };
  const hold = durationOf(p.holdTimeSeconds);
  const keepalive = durationOf(p.keepaliveTimeSeconds);
  const connect = durationOf(p.connectTimeSeconds);
  if (hold !== undefined) n.holdTime = hold;
  if (keepalive !== undefined) n.keepaliveTime = keepalive;
  if (connect !== undefined) n.connectTime = connect;
  if (p.ebgpMultiHop) n.ebgpMultiHop = true;
  if (p.bfdProfile !== '') n.bfdProfile = p.bfdProfile;
  if (p.enableGracefulRestart) n.enableGracefulRestart = true;
  if (p.disableMP) n.disableMP = true;
  if (p.dualStackAddressFamily) n.dualStackAddressFamily = true;

  // Address-family filter: an IPv4 neighbor gets IPv4 prefixes only, IPv6 IPv6 only; an
  // interface (unnumbered) or dualStackAddressFamily neighbor gets both.
  const family = p.interface || p.dualStackAddressFamily ? null : (p.address ?? '').includes(':') ? 'ipv6' : 'ipv4';
  const allowed: string[] = [];
  const byCommunity = new Map<string, string[]>();
  const byLocalPref = new Map<number, string[]>();
  for (const r of routes) {
    if (!r.peers.includes(p.name)) continue;
    if (family !== null && r.family !== family) continue;
    allowed.push(r.prefix);
    routerPrefixes.add(r.prefix);
    for (const c of r.communities) {
      const list = byCommunity.get(c) ?? [];
      list.push(r.prefix);
      byCommunity.set(c, list);
    }
    if (r.localPref !== 0) {
      const list = byLocalPref.get(r.localPref) ?? [];
      list.push(r.prefix);
      byLocalPref.set(r.localPref, list);
    }
  }
  if (allowed.length > 0) n.toAdvertise.allowed.prefixes = sortedUnique(allowed);
  if (byLocalPref.size > 0) {
    n.toAdvertise.withLocalPref = [...byLocalPref].sort(([a], [b]) => a - b).map(([localPref, prefixes]) => ({ localPref, prefixes: sortedUnique(prefixes) }));
  }
  if (byCommunity.size > 0) {
    n.toAdvertise.withCommunity = [...byCommunity].sort(([a], [b]) => compareStrings(a, b)).map(([community, prefixes]) => ({ community, prefixes: sortedUnique(prefixes) }));
  }
  return n;
}

function bfdProfileOf(b: BFDProfileConfig): FRRBFDProfile {
  const out: FRRBFDProfile = { name: b.name, echoMode: b.echoMode, passiveMode: b.passiveMode };
  if (b.receiveInterval !== undefined) out.receiveInterval = b.receiveInterval;
  if (b.transmitInterval !== undefined) out.transmitInterval = b.transmitInterval;
  if (b.detectMultiplier !== undefined) out.detectMultiplier = b.detectMultiplier;
  if (b.echoInterval !== undefined) out.echoInterval = b.echoInterval;
  if (b.minimumTtl !== undefined) out.minimumTtl = b.minimumTtl;
  return out;
}

/**
 * The FRRConfiguration `metallb-<node>` exactly as MetalLB's speaker sends it. Pure.
 *
 * - one router per `<myASN>@<routerID>@<vrf>`, routers and neighbors ordered by their key
 *   *as a string* (so ASN 100000 sorts before 64500); two sessions with the same key are one
 *   neighbor, the later one wins;
 * - each neighbor: the BGPPeer's fields (timers as Go durations, both present when either is
 *   set), its password as SecretHandling says, and the prefixes of the routes that go to it
 *   after the address-family filter (sorted, deduplicated), with `withLocalPref` (sorted by
 *   value) and `withCommunity` (sorted by the community string, large ones `large:a:b:c`);
 * - `sourceAddress` and `localASN` are not passed on (MetalLB v0.16.1 does not);
 * - `bfdProfiles`: every profile given, sorted by name, `echoMode`/`passiveMode` always present.
 */
export function frrConfiguration(input: FRRConfigurationInput): FRRConfiguration {
  const bySession = new Map<string, Peer>();
  for (const p of input.sessions) bySession.set(sessionKey(p), p);
  const routers = new Map<string, { router: FRRRouter; neighbors: Map<string, FRRNeighbor>; prefixes: Set<string> }>();
  for (const [key, p] of bySession) {
    const rk = routerKey(p);
    let r = routers.get(rk);
    if (!r) {
      const router: FRRRouter = { asn: p.myASN };
      if (p.routerID) router.id = p.routerID;
      if (p.vrf !== '') router.vrf = p.vrf;
      routers.set(rk, (r = { router, neighbors: new Map(), prefixes: new Set() }));
    }
    r.neighbors.set(key, neighborOf(p, input.secretHandling, input.routes, r.prefixes));
  }
  const byKey = <T>(m: Map<string, T>): T[] => [...m].sort(([a], [b]) => compareStrings(a, b)).map(([, v]) => v);
  const routerList = byKey(routers).map(({ router, neighbors, prefixes }) => {
    const out: FRRRouter = { ...router };
    if (neighbors.size > 0) out.neighbors = byKey(neighbors);
    if (prefixes.size > 0) out.prefixes = [...prefixes].sort(compareStrings);
    return out;
  });
  const bfd = [...input.bfdProfiles].sort((a, b) => compareStrings(a.name, b.name)).map(bfdProfileOf);
  const spec: FRRConfigurationSpec = {
    bgp: {
      ...(routerList.length > 0 ? { routers: routerList } : {}),
      ...(bfd.length > 0 ? { bfdProfiles: bfd } : {}),
    },
    raw: {},
    nodeSelector: { matchLabels: { [HOSTNAME_LABEL]: input.node } },
  };
  return {
    apiVersion: FRRK8S_API_VERSION,
    kind: FRR_CONFIGURATION_KIND,
    metadata: { name: frrConfigurationName(input.node), namespace: input.namespace },
    spec,
  };
}

/**
 * The spec with frr-k8s v0.0.25's CRD defaults applied (what the apiserver stores for it):
 * `toAdvertise.allowed.mode` and `toReceive.allowed.mode` `filtered`, `disableMP` and
 * `dualStackAddressFamily` false on every neighbor; empty structs and lists as absent.
 */
export function withCRDDefaults(spec: unknown): unknown {
  return normalise(spec, []);
}

function normalise(v: unknown, path: string[]): unknown {
  if (Array.isArray(v)) {
    const items = v.map((x) => normalise(x, [...path, '[]']));
    return items.length === 0 ? undefined : items;
  }
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v as object).sort()) {
      const x = normalise((v as Record<string, unknown>)[k], [...path, k]);
      if (x !== undefined) out[k] = x;
    }
    const where = path.join('.');
    if (where === 'bgp.routers.[].neighbors.[]') {
      out.disableMP ??= false;
      out.dualStackAddressFamily ??= false;
      out.toAdvertise ??= {};
      out.toReceive ??= {};
      for (const side of ['toAdvertise', 'toReceive'] as const) {
        const s = out[side] as Record<string, unknown>;
        const allowed = { ...((s.allowed as Record<string, unknown> | undefined) ?? {}) };
        allowed.mode ??= 'filtered';
        out[side] = Object.fromEntries(Object.entries({ ...s, allowed: Object.fromEntries(Object.entries(allowed).sort(([a], [b]) => (a < b ? -1 : 1))) }).sort(([a], [b]) => (a < b ? -1 : 1)));
      }
    }
    if (Object.keys(out).length === 0 && where !== '') return undefined;
    return Object.fromEntries(
      Object.keys(out)
        .sort()
        .map((k) => [k, out[k]]),
    );
  }
  if (v === false && !path.at(-1)?.match(/^(disableMP|dualStackAddressFamily|echoMode|passiveMode)$/)) return undefined;
  if (v === '' || (v === 0 && path.at(-1) !== 'asn')) return undefined;
  return v;
}

/** Whether two FRRConfiguration specs are the same once the CRD's defaults are applied to both. */
export function specsEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(withCRDDefaults(a)) === JSON.stringify(withCRDDefaults(b));
}
