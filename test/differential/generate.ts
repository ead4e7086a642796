/**
 * Random small clusters for the differential test (test/differential/run.ts), deterministic from
 * a seed: the same (seed, index) always gives the same case.
 *
 * Objects are written as the API server stores them: CRD defaults applied (BGPPeer `peerPort:
 * 179`, `disableMP` / `dualStackAddressFamily: false`; BGPAdvertisement `aggregationLength: 32` /
 * `aggregationLengthV6: 128`; IPAddressPool `autoAssign: true` / `avoidBuggyIPs: false`),
 * Services with their defaulted spec (clusterIPs, ipFamilies, ipFamilyPolicy, ports with
 * protocol and targetPort, externalTrafficPolicy on LoadBalancer/NodePort) and
 * `status.loadBalancer.ingress[].ipMode: VIP`, and only values the CRD schemas accept (types,
 * enums, minimums, CEL rules). Within that, configurations MetalLB's parser rejects are generated
 * on purpose now and then (overlapping pools, bad CIDRs, duplicate selectors, unknown Secrets or
 * BFD profiles, bad timers, conflicting peers, LOCAL_PREF clashes, invalid communities,
 * `bgpextras`), for the accept/reject comparison.
 */
import type { KubeObject, LabelSelector } from '../../src/core/kube.ts';

/** xorshift128+ style PRNG (mulberry32 seeded per case): deterministic, no dependency. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 0x9e3779b9;
  }
  /** [0, 1) */
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** integer in [lo, hi] */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  /** weighted pick: [[value, weight], …] */
  weighted<T>(items: ReadonlyArray<readonly [T, number]>): T {
    const total = items.reduce((s, [, w]) => s + w, 0);
    let x = this.next() * total;
    for (const [v, w] of items) {
      if ((x -= w) < 0) return v;
    }
    return items[items.length - 1]![0];
  }
  /** a random subset (each kept with probability p), order kept */
  subset<T>(items: readonly T[], p = 0.5): T[] {
    return items.filter(() => this.chance(p));
  }
  shuffle<T>(items: readonly T[]): T[] {
    const a = [...items];
    for (let i = a.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [a[i], a[j]] = [a[j]!, a[i]!];
    }
    return a;
  }
}

/** One generated cluster and how to run MetalLB's components on it. */
export interface DifferentialCase {
  readonly id: string;
  /** the run's seed and the case's index: generateCase(seed, index) gives it again */
  readonly seed: number;
  readonly index: number;
  /** MetalLB's namespace (`--namespace`) */
  readonly namespace: string;
  /** frr-k8s's namespace: the speaker's (Secrets passed through) or another (converted) */
  readonly frrk8sNamespace: string;
  readonly ignoreExcludeLB: boolean;
  /** `--lb-class` ("" = MetalLB's default) */
  readonly lbClass: string;
  /** the memberlist view; null: memberlist disabled (every Node) */
  readonly speakers: readonly string[] | null;
  /** the nodes whose speaker is compared */
  readonly nodes: readonly string[];
  readonly resources: readonly KubeObject[];
}

const NS = 'metallb-system';
const APP_NAMESPACES = ['default', 'team-a', 'team-b'] as const;
const EXCLUDE_LABEL = 'node.kubernetes.io/exclude-from-external-load-balancers';

interface Family {
  v4: boolean;
  v6: boolean;
}

/** An address block of a pool: what to pick addresses from. */
interface Block {
  readonly v6: boolean;
  /** first and last address, as numbers (IPv4) or bigints (IPv6) */
  readonly first: bigint;
  readonly last: bigint;
}

function v4(n: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.');
}

function v6(n: bigint): string {
  const groups: string[] = [];
  for (let s = 112n; s >= 0n; s -= 16n) groups.push(((n >> s) & 0xffffn).toString(16));
  // RFC 5952: the longest run of zero groups (2+) becomes ::
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i >= 2) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}

function ipString(b: { v6: boolean }, n: bigint): string {
  return b.v6 ? v6(n) : v4(n);
}

const V4_BASE = 10n << 24n;
const V6_BASE = (0x2001n << 112n) | (0x0db8n << 96n);

/** The i-th /24 (IPv4) or /64 (IPv6) region a pool may take its addresses from. */
function region(v6f: boolean, i: number): bigint {
  return v6f ? V6_BASE | (BigInt(i) << 64n) : V4_BASE | (BigInt(i) << 8n);
}

interface PoolPlan {
  readonly name: string;
  readonly blocks: Block[];
  readonly obj: KubeObject;
}

interface ServicePlan {
  readonly ns: string;
  readonly name: string;
  readonly family: Family;
  readonly obj: KubeObject;
}

/** Label selectors over a small universe of labels; sometimes invalid or duplicated on purpose. */
function selector(rng: Rng, universe: Record<string, readonly string[]>, invalid: { p: number }): LabelSelector {
  const keys = Object.keys(universe);
  if (rng.chance(invalid.p)) {
    return rng.pick<LabelSelector>([
      { matchExpressions: [{ key: rng.pick(keys), operator: 'In', values: [] }] }, // In needs values
      { matchLabels: { 'bad key!': 'x' } }, // not a label key
      { matchExpressions: [{ key: rng.pick(keys), operator: 'Exists', values: ['x'] }] }, // Exists takes none
      { matchExpressions: [{ key: rng.pick(keys), operator: 'In', values: ['a', 'a'] }] }, // MetalLB: duplicate value
    ]);
  }
  if (rng.chance(0.05)) return {};
  const key = rng.pick(keys);
  const values = universe[key]!;
  if (rng.chance(0.6)) {
    const sel: LabelSelector = { matchLabels: { [key]: rng.pick(values) } };
    if (rng.chance(0.2)) {
      const k2 = rng.pick(keys);
      sel.matchLabels![k2] = rng.pick(universe[k2]!);
    }
    return sel;
  }
  const op = rng.weighted<string>([
    ['In', 4],
    ['NotIn', 2],
    ['Exists', 2],
    ['DoesNotExist', 1],
  ]);
  const vals = op === 'In' || op === 'NotIn' ? [...new Set(rng.subset(values, 0.5).concat([rng.pick(values)]))] : undefined;
  return { matchExpressions: [{ key, operator: op, ...(vals ? { values: vals } : {}) }] };
}

function selectors(rng: Rng, universe: Record<string, readonly string[]>, invalid: { p: number }, max = 2): LabelSelector[] {
  const out: LabelSelector[] = [];
  const n = rng.int(1, max);
  for (let i = 0; i < n; i++) out.push(selector(rng, universe, invalid));
  if (rng.chance(invalid.p / 2) && out.length > 0) out.push(structuredClone(out[0]!)); // duplicate: MetalLB rejects
  return out;
}

function meta(name: string, namespace: string | undefined, uid: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, ...(namespace ? { namespace } : {}), uid, resourceVersion: '1', creationTimestamp: '2024-01-01T00:00:00Z', ...extra };
}

/**
 * The case `index` of the run `seed`. About a quarter of the cases carry something MetalLB's
 * parser rejects (for some speakers, or everywhere).
 */
export function generateCase(seed: number, index: number): DifferentialCase {
  const rng = new Rng((Math.imul(seed, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0);
  const broken = rng.chance(0.2); // this case may carry invalid configuration
  const inv = { p: broken ? 0.12 : 0 };
  let uidN = 0;
  const uid = (): string => `00000000-0000-4000-8000-${String(++uidN).padStart(12, '0')}`;
  const resources: KubeObject[] = [];

  // ---- namespaces
  const nsLabels: Record<string, Record<string, string>> = {
    [NS]: {},
    default: {},
    'team-a': { team: 'a', env: 'prod' },
    'team-b': { team: 'b', env: rng.pick(['dev', 'prod']) },
  };
  for (const [name, labels] of Object.entries(nsLabels)) {
    resources.push({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: meta(name, undefined, uid(), { labels: { 'kubernetes.io/metadata.name': name, ...labels } }),
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    });
  }
  const nsUniverse = { team: ['a', 'b', 'c'], env: ['prod', 'dev'], 'kubernetes.io/metadata.name': [...APP_NAMESPACES] } as const;

  // ---- nodes
  const nodeCount = rng.weighted([
    [1, 1],
    [2, 3],
    [3, 4],
    [4, 3],
    [5, 2],
  ]);
  const nodeNames = Array.from({ length: nodeCount }, (_, i) => (rng.chance(0.1) ? `node-${String.fromCharCode(97 + i)}` : `n${i + 1}`));
  const nodeUniverse = { zone: ['a', 'b', 'c'], role: ['edge', 'worker'], 'kubernetes.io/hostname': nodeNames, [EXCLUDE_LABEL]: ['', 'true'] };
  nodeNames.forEach((name, i) => {
    const labels: Record<string, string> = { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' };
    if (rng.chance(0.8)) labels.zone = rng.pick(['a', 'b']);
    if (rng.chance(0.6)) labels.role = rng.pick(['edge', 'worker']);
    if (rng.chance(0.12)) labels[EXCLUDE_LABEL] = rng.pick(['', 'true']);
    const conditions: Array<Record<string, string>> = [{ type: 'Ready', status: rng.chance(0.9) ? 'True' : 'False' }];
    if (rng.chance(0.25)) conditions.unshift({ type: 'NetworkUnavailable', status: rng.chance(0.4) ? 'True' : 'False', reason: 'RouteCreated' });
    resources.push({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: meta(name, undefined, uid(), { labels }),
      spec: {},
      status: {
        conditions,
        addresses: [
          { type: 'InternalIP', address: `192.168.0.${10 + i}` },
          { type: 'Hostname', address: name },
        ],
      },
    });
  });

  // ---- pools
  const poolCount = rng.weighted([
    [0, 1],
    [1, 6],
    [2, 6],
    [3, 3],
    [4, 1],
  ]);
  const pools: PoolPlan[] = [];
  const poolUniverse = { tier: ['public', 'private'], site: ['x', 'y'] } as const;
  for (let p = 0; p < poolCount; p++) {
    const name = `pool-${String.fromCharCode(97 + p)}`;
    const fam = rng.weighted<Family>([
      [{ v4: true, v6: false }, 4],
      [{ v4: false, v6: true }, 1.5],
      [{ v4: true, v6: true }, 4.5],
    ]);
    const addresses: string[] = [];
    const blocks: Block[] = [];
    // overlap on purpose: reuse the previous pool's region
    const reg = broken && p > 0 && rng.chance(0.12) ? p : p + 1;
    for (const isV6 of [false, true]) {
      if (isV6 ? !fam.v6 : !fam.v4) continue;
      const entries = rng.weighted([
        [1, 4],
        [2, 1],
      ]);
      for (let e = 0; e < entries; e++) {
        const base = isV6 ? region(true, reg * 4 + e) : region(false, reg) + BigInt(e) * 64n;
        const hostBits = isV6 ? 128 : 32;
        if (rng.chance(0.3)) {
          // a range first-last
          const a = BigInt(rng.int(0, 3));
          const b = a + BigInt(rng.int(0, 6));
          const spaced = rng.chance(0.1) ? ' - ' : '-';
          addresses.push(`${ipString({ v6: isV6 }, base + a)}${spaced}${ipString({ v6: isV6 }, base + b)}`);
          blocks.push({ v6: isV6, first: base + a, last: base + b });
        } else {
          const prefix = isV6 ? rng.pick([124, 125, 126, 127, 128, 64]) : rng.pick([28, 29, 30, 31, 32]);
          const size = 1n << BigInt(hostBits - prefix);
          addresses.push(`${ipString({ v6: isV6 }, base)}/${prefix}`);
          blocks.push({ v6: isV6, first: base, last: base + size - 1n });
        }
      }
    }
    if (broken && rng.chance(0.08)) addresses.push(rng.pick(['10.250.0.300/32', '10.250.0.9-10.250.0.1', 'not-a-cidr', '10.250.0.1/33', '2001:db8:fa::/129']));
    if (broken && rng.chance(0.03)) addresses.push(addresses[0]!); // the same CIDR twice: overlap
    const spec: Record<string, unknown> = { addresses, autoAssign: rng.chance(0.85), avoidBuggyIPs: rng.chance(0.15) };
    if (rng.chance(0.35)) {
      const alloc: Record<string, unknown> = {};
      if (rng.chance(0.6)) alloc.priority = rng.pick([-1, 0, 1, 2, 5, 10]);
      if (rng.chance(0.5)) {
        const nss = rng.subset(APP_NAMESPACES, 0.5);
        if (broken && rng.chance(0.1) && nss.length > 0) nss.push(nss[0]!);
        alloc.namespaces = nss.length ? nss : [rng.pick(APP_NAMESPACES)];
      }
      if (rng.chance(0.3)) alloc.namespaceSelectors = selectors(rng, nsUniverse, inv, 1);
      if (rng.chance(0.35)) alloc.serviceSelectors = selectors(rng, { app: ['web', 'db', 'dns'], tier: ['front', 'back'] }, inv, 2);
      spec.serviceAllocation = alloc;
    }
    const labels: Record<string, string> = {};
    if (rng.chance(0.6)) labels.tier = rng.pick(poolUniverse.tier);
    if (rng.chance(0.3)) labels.site = rng.pick(poolUniverse.site);
    const poolNs = rng.chance(0.03) ? 'default' : NS; // outside MetalLB's namespace: ignored
    const obj: KubeObject = { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: meta(name, poolNs, uid(), Object.keys(labels).length ? { labels } : {}), spec };
    resources.push(obj);
    if (poolNs === NS) pools.push({ name, blocks, obj });
  }
  const poolNames = pools.map((p) => p.name);
  const poolRef = (): string => (rng.chance(inv.p > 0 ? 0.1 : 0.04) || poolNames.length === 0 ? 'pool-zz' : rng.pick(poolNames));

  // ---- communities
  const communityNames: string[] = [];
  if (rng.chance(0.3)) {
    const comms: Array<{ name: string; value: string }> = [
      { name: 'golden', value: '65000:100' },
      { name: 'big', value: 'large:65000:1:2' },
    ];
    if (broken && rng.chance(0.15)) comms.push({ name: 'bogus', value: rng.pick(['65000:999999', 'large:1:2', 'x:y']) });
    if (broken && rng.chance(0.1)) comms.push({ name: 'golden', value: '65000:200' });
    communityNames.push(...comms.map((c) => c.name));
    resources.push({ apiVersion: 'metallb.io/v1beta1', kind: 'Community', metadata: meta('communities', NS, uid()), spec: { communities: comms } });
  }

  // ---- BFD profiles
  const bfdNames: string[] = [];
  if (rng.chance(0.2)) {
    const n = rng.int(1, 2);
    for (let i = 0; i < n; i++) {
      const name = `bfd-${i + 1}`;
      bfdNames.push(name);
      const spec: Record<string, unknown> = {};
      if (rng.chance(0.5)) spec.receiveInterval = rng.pick([10, 300, 60000]);
      if (rng.chance(0.5)) spec.transmitInterval = rng.pick([10, 300, 500]);
      if (rng.chance(0.4)) spec.detectMultiplier = rng.pick([2, 3, 255]);
      if (rng.chance(0.3)) spec.echoInterval = rng.pick([10, 50]);
      if (rng.chance(0.3)) spec.echoMode = rng.chance(0.5);
      if (rng.chance(0.3)) spec.passiveMode = rng.chance(0.5);
      if (rng.chance(0.3)) spec.minimumTtl = rng.pick([1, 254]);
      resources.push({ apiVersion: 'metallb.io/v1beta1', kind: 'BFDProfile', metadata: meta(name, NS, uid()), spec });
    }
  }

  // ---- BGP peers (v1beta2, the storage version)
  const peerNames: string[] = [];
  const secrets: KubeObject[] = [];
  // FRR mode wants one routerID and one myASN (per VRF) on a node: keep them consistent unless broken
  const caseRouterID = rng.chance(0.25) ? '10.10.10.1' : undefined;
  if (rng.chance(0.65)) {
    const n = rng.weighted([
      [1, 4],
      [2, 3],
      [3, 2],
    ]);
    for (let i = 0; i < n; i++) {
      const name = `peer-${i + 1}`;
      peerNames.push(name);
      const spec: Record<string, unknown> = {
        myASN: broken && rng.chance(0.05) ? 0 : broken && rng.chance(0.15) ? 64501 : 64500,
        peerPort: rng.chance(0.9) ? 179 : 1179,
        disableMP: rng.chance(0.1),
        dualStackAddressFamily: rng.chance(0.2),
      };
      const asnMode = rng.weighted([
        ['asn', 8],
        ['dyn', 2],
        ['both', broken ? 0.3 : 0],
        ['none', broken ? 0.3 : 0],
      ]);
      if (asnMode === 'asn' || asnMode === 'both')
        spec.peerASN = rng.weighted([
          [64600 + i, 6],
          [64500, 2],
          [4200000000, 1],
        ]);
      if (asnMode === 'dyn' || asnMode === 'both') spec.dynamicASN = rng.pick(['internal', 'external']);
      const where = rng.weighted([
        ['v4', 6],
        ['v6', 2],
        ['iface', 1],
        ['bad', broken ? 0.3 : 0],
        ['both', broken ? 0.2 : 0],
      ]);
      if (where === 'v4' || where === 'both') spec.peerAddress = rng.chance(broken ? 0.2 : 0.04) ? '192.168.1.1' : `192.168.1.${i + 1}`;
      if (where === 'v6') spec.peerAddress = rng.pick([`fd00::${i + 1}`, `FD00:0:0::${i + 1}`]);
      if (where === 'iface' || where === 'both') spec.interface = rng.pick(['eth1', 'eth2']);
      if (where === 'bad') spec.peerAddress = 'not-an-ip';
      if (rng.chance(0.15) && (broken || spec.peerASN !== spec.myASN)) spec.ebgpMultiHop = true; // iBGP + multihop: rejected
      if (rng.chance(0.3)) {
        const t = rng.weighted<[string | undefined, string | undefined]>([
          [['90s', undefined], 3],
          [[undefined, '30s'], 2],
          [['1m30s', '30s'], 2],
          [['0s', undefined], 1],
          [['3s', '1s'], 1],
          [['2s', undefined], broken ? 1 : 0],
          [['30s', '60s'], broken ? 1 : 0],
        ]);
        if (t[0] !== undefined) spec.holdTime = t[0];
        if (t[1] !== undefined) spec.keepaliveTime = t[1];
      }
      if (rng.chance(0.15)) spec.connectTime = rng.pick(['10s', '1m']);
      if (caseRouterID) spec.routerID = caseRouterID;
      if (broken && rng.chance(0.1)) spec.routerID = rng.pick(['10.10.10.2', 'bad-id']);
      if (rng.chance(0.08)) spec.sourceAddress = rng.pick(['192.168.0.10', 'fd00::10']);
      if (rng.chance(0.1)) {
        spec.vrf = 'red';
        if (rng.chance(0.5)) spec.myASN = 64510; // another VRF may have another ASN
      }
      if (rng.chance(0.35)) spec.nodeSelectors = selectors(rng, nodeUniverse, inv, 2);
      if (rng.chance(0.1)) spec.enableGracefulRestart = true;
      if (rng.chance(0.05)) spec.localASN = 65010;
      if (bfdNames.length > 0 || broken) {
        if (rng.chance(0.4)) spec.bfdProfile = bfdNames.length > 0 && !(broken && rng.chance(0.2)) ? rng.pick(bfdNames) : 'bfd-missing';
      }
      const pw = rng.weighted([
        ['none', 7],
        ['inline', 1.5],
        ['secret', 1.5],
        ['both', broken ? 0.3 : 0],
      ]);
      if (pw === 'inline' || pw === 'both') spec.password = `pw-${i + 1}`;
      if (pw === 'secret' || pw === 'both') {
        const sname = `bgp-secret-${i + 1}`;
        spec.passwordSecret = { name: sname, namespace: NS };
        const kind = rng.weighted([
          ['ok', 8],
          ['missing', broken ? 1.5 : 0],
          ['opaque', broken ? 1 : 0],
          ['nokey', broken ? 1 : 0],
        ]);
        if (kind !== 'missing') {
          secrets.push({
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: meta(sname, NS, uid()),
            type: kind === 'opaque' ? 'Opaque' : 'kubernetes.io/basic-auth',
            data: kind === 'nokey' ? { username: Buffer.from('u').toString('base64') } : { password: Buffer.from(`s3cret-${i + 1}`).toString('base64') },
          });
        }
      }
      resources.push({ apiVersion: 'metallb.io/v1beta2', kind: 'BGPPeer', metadata: meta(name, NS, uid()), spec });
    }
  }
  resources.push(...secrets);

  // ---- BGP advertisements
  if (peerNames.length > 0 ? rng.chance(0.9) : rng.chance(0.1)) {
    const n = rng.weighted([
      [1, 5],
      [2, 3],
      [3, 1],
    ]);
    for (let i = 0; i < n; i++) {
      const spec: Record<string, unknown> = { aggregationLength: 32, aggregationLengthV6: 128 };
      const serviceSelected = rng.chance(0.2);
      if (!serviceSelected) {
        // shorter than a pool's own prefixes is rejected: mostly only in broken cases
        if (rng.chance(broken ? 0.25 : 0.12)) spec.aggregationLength = rng.pick(broken ? [24, 28, 29, 30, 31] : [28, 28, 30]);
        if (rng.chance(broken ? 0.2 : 0.1)) spec.aggregationLengthV6 = rng.pick(broken ? [64, 120, 124, 126] : [64, 124]);
        if (broken && rng.chance(0.05)) spec.aggregationLength = 33;
      } else {
        spec.serviceSelectors = selectors(rng, { app: ['web', 'db', 'dns'], tier: ['front', 'back'] }, inv, 1);
      }
      if (rng.chance(0.3)) spec.localPref = rng.pick([100, 200]);
      if (rng.chance(0.3)) {
        const pool: string[] = ['65000:1', '65000:2', 'large:65000:7:7', ...communityNames];
        if (broken) pool.push('bad-community', '70000:1');
        const comms = [...new Set(rng.subset(pool, 0.35).concat(rng.pick(pool)))];
        if (broken && rng.chance(0.1)) comms.push(comms[0]!);
        spec.communities = comms;
      }
      if (rng.chance(0.01)) {
        // more than the 63 communities frr-k8s's session accepts on one advertisement
        spec.communities = Array.from({ length: 64 }, (_, k) => `65000:${k + 1}`);
      }
      if (peerNames.length > 0 && rng.chance(0.3)) {
        const ps = rng.subset(peerNames, 0.5);
        if (rng.chance(0.1)) ps.push('peer-unknown');
        spec.peers = ps.length ? ps : [rng.pick(peerNames)];
      }
      if (rng.chance(0.3)) spec.nodeSelectors = selectors(rng, nodeUniverse, inv, 2);
      const poolSel = rng.weighted([
        ['all', 5],
        ['names', 4],
        ['selector', 2],
        ['both', 1],
      ]);
      if (poolSel === 'names' || poolSel === 'both') {
        const names = [...new Set([poolRef(), ...(rng.chance(0.3) ? [poolRef()] : [])])];
        if (broken && rng.chance(0.05)) names.push(names[0]!);
        spec.ipAddressPools = names;
      }
      if (poolSel === 'selector' || poolSel === 'both') spec.ipAddressPoolSelectors = selectors(rng, poolUniverse, inv, 1);
      resources.push({ apiVersion: 'metallb.io/v1beta1', kind: 'BGPAdvertisement', metadata: meta(`bgp-adv-${i + 1}`, NS, uid()), spec });
    }
  }

  // ---- L2 advertisements
  if (rng.chance(0.7)) {
    const n = rng.weighted([
      [1, 5],
      [2, 3],
      [3, 1],
    ]);
    for (let i = 0; i < n; i++) {
      const spec: Record<string, unknown> = {};
      const poolSel = rng.weighted([
        ['all', 5],
        ['names', 4],
        ['selector', 2],
      ]);
      if (poolSel === 'names') spec.ipAddressPools = [...new Set([poolRef(), ...(rng.chance(0.3) ? [poolRef()] : [])])];
      if (poolSel === 'selector') spec.ipAddressPoolSelectors = selectors(rng, poolUniverse, inv, 1);
      if (rng.chance(0.35)) spec.nodeSelectors = selectors(rng, nodeUniverse, inv, 2);
      if (rng.chance(0.2)) spec.serviceSelectors = selectors(rng, { app: ['web', 'db', 'dns'], tier: ['front', 'back'] }, inv, 1);
      if (rng.chance(0.2)) spec.interfaces = rng.pick([['eth0'], ['eth0', 'eth1']]);
      resources.push({ apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: meta(`l2-adv-${i + 1}`, NS, uid()), spec });
    }
  }

  // ---- bgpextras (frr-k8s mode refuses a non-empty one)
  if (rng.chance(broken ? 0.08 : 0.02)) {
    resources.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('bgpextras', NS, uid()), data: { extras: broken ? 'router bgp 64500\n' : '' } });
  }

  // ---- services
  const allAddresses = (blocks: readonly Block[], isV6: boolean): Array<() => string> =>
    blocks
      .filter((b) => b.v6 === isV6)
      .map((b) => () => {
        const span = b.last - b.first + 1n;
        const off = span > 16n ? BigInt(rng.int(0, 15)) : BigInt(rng.int(0, Number(span) - 1));
        return ipString(b, b.first + off);
      });
  const pickIP = (isV6: boolean, poolName?: string): string | undefined => {
    let candidates = pools.filter((p) => (poolName ? p.name === poolName : true)).flatMap((p) => allAddresses(p.blocks, isV6));
    if (candidates.length === 0) candidates = pools.flatMap((p) => allAddresses(p.blocks, isV6));
    if (candidates.length === 0 || rng.chance(0.08)) return isV6 ? `2001:db8:ff::${rng.int(1, 9)}` : `192.0.2.${rng.int(1, 9)}`; // in no pool
    return rng.pick(candidates)();
  };
  const services: ServicePlan[] = [];
  const usedIPs: string[] = [];
  const svcCount = rng.weighted([
    [1, 2],
    [2, 3],
    [3, 3],
    [4, 3],
    [5, 2],
    [6, 1],
  ]);
  const lbClass = rng.chance(0.04) ? 'example.com/lb' : '';
  for (let i = 0; i < svcCount; i++) {
    const ns = rng.pick(APP_NAMESPACES);
    const name = `svc-${i + 1}`;
    const type = rng.weighted([
      ['LoadBalancer', 17],
      ['ClusterIP', 1],
      ['NodePort', 1],
    ]);
    const policy = rng.weighted([
      ['SingleStack', 6],
      ['PreferDualStack', 2.5],
      ['RequireDualStack', 1.5],
    ]);
    let families: Array<'IPv4' | 'IPv6'>;
    if (policy === 'SingleStack') families = [rng.chance(0.75) ? 'IPv4' : 'IPv6'];
    else if (policy === 'RequireDualStack') families = rng.chance(0.7) ? ['IPv4', 'IPv6'] : ['IPv6', 'IPv4'];
    else
      families = rng.weighted<Array<'IPv4' | 'IPv6'>>([
        [['IPv4', 'IPv6'], 3],
        [['IPv6', 'IPv4'], 1],
        [['IPv4'], 1.5],
        [['IPv6'], 0.5],
      ]);
    const clusterIPs = families.map((f) => (f === 'IPv4' ? `10.96.0.${10 + i}` : `fd00:96::${(10 + i).toString(16)}`));
    const labels: Record<string, string> = {};
    if (rng.chance(0.7)) labels.app = rng.pick(['web', 'db', 'dns']);
    if (rng.chance(0.4)) labels.tier = rng.pick(['front', 'back']);
    const annotations: Record<string, string> = {};
    const sharing = rng.chance(0.25) ? rng.pick(['shared-1', 'shared-2']) : undefined;
    if (sharing) annotations[rng.chance(0.9) ? 'metallb.io/allow-shared-ip' : 'metallb.universe.tf/allow-shared-ip'] = sharing;
    if (rng.chance(0.15)) annotations[rng.chance(0.9) ? 'metallb.io/address-pool' : 'metallb.universe.tf/address-pool'] = poolRef();
    const udp = rng.chance(0.25);
    const port = rng.pick([80, 443, 53, 8080]);
    const spec: Record<string, unknown> = {
      type,
      clusterIP: clusterIPs[0],
      clusterIPs,
      ipFamilies: families,
      ipFamilyPolicy: policy,
      ports: [{ name: 'p', protocol: udp ? 'UDP' : 'TCP', port, targetPort: port, ...(type !== 'ClusterIP' ? { nodePort: 30000 + i } : {}) }],
      selector: { app: labels.app ?? `x${i}` },
      sessionAffinity: 'None',
      internalTrafficPolicy: 'Cluster',
    };
    if (type !== 'ClusterIP') spec.externalTrafficPolicy = rng.chance(0.3) ? 'Local' : 'Cluster';
    if (type === 'LoadBalancer') {
      spec.allocateLoadBalancerNodePorts = true;
      if (spec.externalTrafficPolicy === 'Local') spec.healthCheckNodePort = 32000 + i;
      if (lbClass !== '' ? rng.chance(0.5) : rng.chance(0.04)) spec.loadBalancerClass = 'example.com/lb';
      // requested addresses
      const req = rng.weighted([
        ['none', 8],
        ['annotation', 1.2],
        ['spec', 0.6],
        ['both', 0.1],
      ]);
      if (req !== 'none') {
        const ips = families.slice(0, rng.chance(0.8) ? families.length : 1).map((f) => pickIP(f === 'IPv6')!);
        if (rng.chance(0.2) && usedIPs.length > 0) ips[0] = rng.pick(usedIPs);
        if (req === 'annotation' || req === 'both') annotations[rng.chance(0.9) ? 'metallb.io/loadBalancerIPs' : 'metallb.universe.tf/loadBalancerIPs'] = ips.join(',');
        if (req === 'spec' || req === 'both') spec.loadBalancerIP = ips[0];
      }
    }
    // status as a running controller may have left it
    const status: Record<string, unknown> = { loadBalancer: {} };
    if (type === 'LoadBalancer' && rng.chance(0.65)) {
      let fams = families.slice(0, rng.chance(0.85) ? families.length : 1);
      const has = (f: string): boolean => pools.some((p) => p.blocks.some((b) => b.v6 === (f === 'IPv6')));
      if (fams.length > 1 && !fams.every(has) && policy !== 'RequireDualStack' && rng.chance(0.8)) fams = fams.filter(has).slice(0, 1);
      // mostly a pool that has every family the Service wants (as MetalLB would have allocated)
      const fitting = pools.filter((p) => fams.every((f) => p.blocks.some((b) => b.v6 === (f === 'IPv6')))).map((p) => p.name);
      const poolName = rng.chance(0.9) && fitting.length ? rng.pick(fitting) : poolNames.length && rng.chance(0.5) ? rng.pick(poolNames) : undefined;
      let ips = fams.map((f) => pickIP(f === 'IPv6', poolName)!);
      if (usedIPs.length > 0 && rng.chance(sharing ? 0.5 : 0.1)) ips = [rng.pick(usedIPs)];
      const ingress: Array<Record<string, unknown>> = ips.map((ip) => ({ ip, ipMode: 'VIP' }));
      if (rng.chance(0.02)) ingress.push({ hostname: 'lb.example.com' });
      if (ingress.length > 0) status.loadBalancer = { ingress }; // an empty list is not stored
      usedIPs.push(...ips);
      if (poolName && rng.chance(0.9)) annotations['metallb.io/ip-allocated-from-pool'] = poolName;
    }
    const ts = `2024-01-01T00:${String(10 + rng.int(0, 40)).padStart(2, '0')}:${String(rng.int(0, 59)).padStart(2, '0')}Z`;
    const obj: KubeObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { ...meta(name, ns, uid()), creationTimestamp: ts, ...(Object.keys(labels).length ? { labels } : {}), ...(Object.keys(annotations).length ? { annotations } : {}) },
      spec,
      status,
    };
    resources.push(obj);
    services.push({ ns, name, family: { v4: families.includes('IPv4'), v6: families.includes('IPv6') }, obj });
  }

  // ---- endpoint slices
  for (const s of services) {
    if (rng.chance(0.15)) continue; // no slice at all
    const fams = [s.family.v4 ? 'IPv4' : null, s.family.v6 ? 'IPv6' : null].filter((x): x is string => x !== null);
    for (const addressType of fams) {
      const n = rng.weighted([
        [0, 1],
        [1, 4],
        [2, 3],
        [3, 2],
      ]);
      const endpoints: Array<Record<string, unknown>> = [];
      for (let e = 0; e < n; e++) {
        const conditions: Record<string, boolean> = {};
        const state = rng.weighted([
          ['ready', 6],
          ['notready', 1.5],
          ['terminating-serving', 1],
          ['terminating', 1],
          ['unset', 0.5],
        ]);
        if (state === 'ready') Object.assign(conditions, { ready: true, serving: true, terminating: false });
        if (state === 'notready') Object.assign(conditions, { ready: false, serving: false, terminating: false });
        if (state === 'terminating-serving') Object.assign(conditions, { ready: false, serving: true, terminating: true });
        if (state === 'terminating') Object.assign(conditions, { ready: false, serving: false, terminating: true });
        const node = rng.weighted<string | undefined>([
          [rng.pick(nodeNames), 9],
          ['ghost-node', 0.3],
          [undefined, 0.3],
        ]);
        const noAddress = rng.chance(0.03);
        endpoints.push({
          addresses: noAddress ? [] : [addressType === 'IPv4' ? `10.244.${s.name.length}.${e + 1}` : `fd00:244::${e + 1}`],
          conditions,
          ...(node ? { nodeName: node } : {}),
        });
      }
      resources.push({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        addressType,
        metadata: meta(`${s.name}-${addressType.toLowerCase()}`, s.ns, uid(), { labels: { 'kubernetes.io/service-name': s.name, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' } }),
        endpoints,
        ports: [{ name: 'p', port: 8080, protocol: 'TCP' }],
      });
    }
  }

  const speakers = rng.chance(0.2) ? rng.subset(nodeNames, 0.7) : null;
  return {
    id: `s${seed}-c${index}`,
    seed,
    index,
    namespace: NS,
    frrk8sNamespace: rng.chance(0.2) ? 'frr-k8s-system' : NS,
    ignoreExcludeLB: rng.chance(0.1),
    lbClass,
    speakers,
    nodes: nodeNames,
    resources,
  };
}
