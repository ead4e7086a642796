/**
 * allocateAll's `focus` shortcuts (keeperAnswer, the first-pass early stop, finalAt) against
 * clusters built to break them: hostname-only and mixed ingress entries (1-3), dual-stack
 * Services of every policy with pools of both families, sharing keys with same/different ports
 * and selectors, requested addresses and pools (current and deprecated annotations,
 * spec.loadBalancerIP), pools with autoAssign false, avoidBuggyIPs, serviceAllocation
 * (namespaces, namespace and service selectors, priority), the ip-allocated-from-pool annotation
 * right/wrong/absent, other LoadBalancer classes and Service types, missing clusterIPs, status
 * addresses outside every pool, nearly full pools; and tight clusters (tightCluster) where a few
 * dual-stack addresses are claimed, shared and requested at once. For every handled Service of
 * every cluster, the focused outcome equals the full run's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allocateAll } from '../../src/core/controller/index.ts';
import type { Config } from '../../src/core/config/types.ts';
import { controllerConfig } from '../../src/core/explain/context.ts';
import { clusterStateFromObjects, type KubeObject, type Service } from '../../src/core/kube.ts';
import { mulberry32 } from '../helpers/rng.ts';

/**
 * Pool address blocks to draw from (tiny, so that pools are nearly full; some overlap), each with
 * the addresses it holds.
 */
const POOL_BLOCKS: readonly { readonly addresses: readonly string[]; readonly ips: readonly string[] }[] = [
  { addresses: ['192.0.2.0/30'], ips: ['192.0.2.0', '192.0.2.1', '192.0.2.2', '192.0.2.3'] },
  { addresses: ['192.0.2.4-192.0.2.6'], ips: ['192.0.2.4', '192.0.2.5', '192.0.2.6'] },
  { addresses: ['192.0.2.2/31'], ips: ['192.0.2.2', '192.0.2.3'] },
  { addresses: ['198.51.100.0/31'], ips: ['198.51.100.0', '198.51.100.1'] },
  { addresses: ['2001:db8::/126'], ips: ['2001:db8::', '2001:db8::1', '2001:db8::2', '2001:db8::3'] },
  { addresses: ['2001:db8::1-2001:db8::2'], ips: ['2001:db8::1', '2001:db8::2'] },
  { addresses: ['203.0.113.0/31', '2001:db8:1::/127'], ips: ['203.0.113.0', '203.0.113.1', '2001:db8:1::', '2001:db8:1::1'] },
  { addresses: ['10.0.0.254-10.0.1.1'], ips: ['10.0.0.254', '10.0.0.255', '10.0.1.0', '10.0.1.1'] },
  { addresses: ['203.0.113.10/32', '2001:db8:1::10/128'], ips: ['203.0.113.10', '2001:db8:1::10'] },
];

/** Addresses Services hold or ask for: in the pools above, and outside every one. */
const V4 = ['192.0.2.0', '192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.5', '198.51.100.0', '198.51.100.1', '203.0.113.0', '203.0.113.10', '10.0.0.255', '10.0.1.0', '10.0.1.1', '172.16.0.1'];
const V6 = ['2001:db8::', '2001:db8::1', '2001:db8::2', '2001:db8::3', '2001:db8:1::', '2001:db8:1::1', '2001:db8:1::10', '2001:db8:ff::1'];

/** One adversarial cluster (objects for clusterStateFromObjects) and the controller's --lb-class. */
export function adversarialCluster(seed: number): { objects: KubeObject[]; lbClass: string; mode: string } {
  const r = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const chance = (p: number): boolean => r() < p;
  // Calm clusters (half): the odd cases a quarter as often, so that the shortcuts get their chance.
  const calm = chance(0.5);
  // Tidy clusters (a fifth): rarer still, as in a cluster that runs well.
  const tidy = calm && chance(0.4);
  // Crowded clusters (a quarter): one or two pools, many Services, mostly one ingress entry each.
  const crowded = chance(0.25);
  const odd = (p: number): boolean => r() < (tidy ? p / 12 : calm ? p / 4 : p);
  // An address as written, at times in another spelling of the same address (upper case, zeros
  // written out, IPv4-mapped IPv6).
  const spelled = (ip: string): string => {
    if (!odd(0.1)) return ip;
    if (ip.includes(':')) return chance(0.5) ? ip.toUpperCase() : ip.replace('::', ':0:0:').replace(/:$/, ':0');
    return `::ffff:${ip}`;
  };
  const objects: KubeObject[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns1', labels: { team: 'a' } } },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns2', labels: { team: 'b' } } },
  ];
  const poolNames: string[] = [];
  const nPools = 1 + Math.floor(r() * (crowded ? 2 : 4));
  // (calm: blocks that do not overlap)
  const blocks = (calm ? POOL_BLOCKS.filter((_, k) => ![2, 5].includes(k)) : [...POOL_BLOCKS]).sort(() => r() - 0.5);
  for (let i = 0; i < nPools; i++) {
    const name = `p${i}`;
    poolNames.push(name);
    const spec: Record<string, unknown> = { addresses: blocks[i]!.addresses };
    if (odd(0.2)) spec.autoAssign = false;
    if (odd(0.25)) spec.avoidBuggyIPs = true;
    if (odd(0.35)) {
      const alloc: Record<string, unknown> = {};
      if (chance(0.6)) alloc.priority = 1 + Math.floor(r() * 3);
      if (chance(0.3)) alloc.namespaces = [pick(['ns1', 'ns2'])];
      if (chance(0.2)) alloc.namespaceSelectors = [{ matchLabels: { team: pick(['a', 'b']) } }];
      if (chance(0.3)) alloc.serviceSelectors = [{ matchLabels: { app: pick(['x', 'y']) } }];
      spec.serviceAllocation = alloc;
    }
    objects.push({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: 'metallb-system' }, spec } as KubeObject);
  }
  const lbClass = odd(0.1) ? 'other' : '';
  const n = crowded ? 8 + Math.floor(r() * 10) : 3 + Math.floor(r() * 10);
  // Addresses already in a status (keepers mostly take others).
  const used = new Set<string>();
  for (let i = 0; i < n; i++) {
    const annotations: Record<string, string> = {};
    const spec: Record<string, unknown> = {};
    const status: Record<string, string>[] = [];
    // Family of the Service's clusterIPs and its policy.
    const fam = odd(0.12) ? 'none' : calm ? pick(['v4', 'v4', 'v4', 'v6', 'dual'] as const) : pick(['v4', 'v4', 'v4', 'v6', 'dual', 'dual'] as const);
    const policy = odd(0.2) ? 'PreferDualStack' : fam === 'dual' ? pick(['RequireDualStack', 'RequireDualStack', 'SingleStack', undefined]) : odd(0.1) ? 'RequireDualStack' : pick([undefined, 'SingleStack']);
    if (fam !== 'none') {
      spec.clusterIPs = fam === 'v4' ? ['10.96.0.10'] : fam === 'v6' ? ['fd00::10'] : chance(0.5) ? ['10.96.0.10', 'fd00::10'] : ['fd00::10', '10.96.0.10'];
      if (chance(0.5)) spec.clusterIP = (spec.clusterIPs as string[])[0];
      spec.ipFamilies = (spec.clusterIPs as string[]).map((c) => (c.includes(':') ? 'IPv6' : 'IPv4'));
    } else if (chance(0.3)) spec.clusterIP = 'None';
    if (policy) spec.ipFamilyPolicy = policy;
    // A single-stack Service has one cluster IP, mostly (the API server's defaulting).
    if (fam === 'dual' && (policy === 'SingleStack' || policy === undefined) && !odd(0.5)) {
      spec.clusterIPs = (spec.clusterIPs as string[]).slice(0, 1);
      spec.ipFamilies = (spec.ipFamilies as string[]).slice(0, 1);
    }
    spec.type = !odd(0.1) ? 'LoadBalancer' : pick(['ClusterIP', 'NodePort']);
    if (odd(0.1)) spec.loadBalancerClass = pick(['other', 'third']);
    const app = pick(['x', 'y']);
    spec.selector = { app: chance(0.8) ? app : 'z' };
    if (chance(0.3)) spec.externalTrafficPolicy = 'Local';
    spec.ports = chance(0.2)
      ? [
          { name: 'a', protocol: 'TCP', port: 80 },
          { name: 'b', protocol: 'UDP', port: 53 },
        ]
      : [{ protocol: pick(['TCP', 'TCP', 'UDP']), port: pick([80, 443]) }];
    // Status: a keeper's own addresses (one per family), or entries of any kind.
    const keeper = chance(tidy ? 0.95 : calm ? 0.85 : 0.55);
    const entries = chance(calm ? 0.6 : 0.2) ? 0 : chance(crowded ? 0.9 : 0.6) ? 1 : chance(0.6) ? 2 : 3;
    const ips: string[] = [];
    if (keeper && fam !== 'none') {
      // One address per family.
      const first = (spec.clusterIPs as string[])[0]!.includes(':') ? 'v6' : 'v4';
      const families = fam !== 'dual' ? [first] : policy === 'SingleStack' || policy === undefined ? [first] : !odd(0.15) ? ['v4', 'v6'] : [pick(['v4', 'v6'])];
      // A configured pool with every family needed and room left, mostly.
      const fits = blocks.slice(0, nPools).filter((b) => families.every((f) => b.ips.some((ip) => ip.includes(':') === (f === 'v6') && !used.has(ip))));
      const home = fits.length > 0 && !odd(0.2) ? pick(fits) : undefined;
      // (tidy: a Service without room stays pending)
      for (const f of tidy && !home ? [] : families) {
        const own = (home?.ips ?? []).filter((ip) => ip.includes(':') === (f === 'v6') && !used.has(ip));
        const ip = own.length > 0 ? pick(own) : pick(f === 'v6' ? V6 : V4);
        used.add(ip);
        ips.push(ip);
      }
      for (const ip of ips.map(spelled)) status.push(odd(0.1) ? { ip, hostname: 'lb.example' } : { ip });
      if (odd(0.15)) status.push({ hostname: 'extra.example' });
    } else {
      for (let e = 0; e < entries; e++) {
        const kind = r();
        if (kind < 0.2) status.push({ hostname: `h${e}.example` });
        else status.push({ ip: spelled(chance(0.7) ? pick(V4) : pick(V6)) });
        if (odd(0.05)) status.push({ ...status[status.length - 1]! });
      }
    }
    const statusIPs = status.flatMap((s) => (s.ip ? [s.ip] : []));
    // Requests.
    const lbIPsKey = chance(0.8) ? 'metallb.io/loadBalancerIPs' : 'metallb.universe.tf/loadBalancerIPs';
    const req = calm ? r() * 4 : r();
    if (req < 0.1 && statusIPs.length > 0) annotations[lbIPsKey] = (chance(0.5) ? [...statusIPs].reverse() : statusIPs).join(chance(0.2) ? ', ' : ',');
    else if (req < 0.18) annotations[lbIPsKey] = chance(0.7) ? pick(V4) : `${pick(V4)},${pick(V6)}`;
    else if (req < 0.24) spec.loadBalancerIP = statusIPs[0] ?? pick(V4);
    else if (req < 0.27) {
      annotations[lbIPsKey] = pick(V4);
      spec.loadBalancerIP = pick(V4);
    } else if (req < 0.29) annotations[lbIPsKey] = 'not-an-ip';
    if (odd(0.15)) annotations[chance(0.8) ? 'metallb.io/address-pool' : 'metallb.universe.tf/address-pool'] = chance(0.9) ? pick(poolNames) : 'missing';
    if (odd(0.3)) annotations[chance(0.8) ? 'metallb.io/allow-shared-ip' : 'metallb.universe.tf/allow-shared-ip'] = pick(['k', 'k', 'j']);
    const ann = r();
    if (statusIPs.length > 0 && ann < 0.6) {
      // Mostly the pool the first address lies in (the first block holding it), else another.
      const owner = poolNames.find((_, idx) => blocks[idx]!.ips.includes(statusIPs[0]!));
      annotations['metallb.io/ip-allocated-from-pool'] = owner && !odd(0.15) ? owner : pick([...poolNames, 'gone']);
    } else if (ann < 0.7) annotations['metallb.io/ip-allocated-from-pool'] = pick(poolNames);
    const name = `s${i}`;
    objects.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        namespace: pick(['ns1', 'ns2']),
        name,
        labels: { app },
        ...(chance(0.9) ? { creationTimestamp: `2025-01-0${1 + Math.floor(r() * 3)}T00:00:00Z` } : {}),
        annotations,
      },
      spec,
      status: { loadBalancer: { ingress: status } },
    } as KubeObject);
  }
  return { objects, lbClass, mode: `${tidy ? 'tidy' : calm ? 'calm' : 'wild'}${crowded ? ' crowded' : ''}` };
}

/** The addresses tightCluster's Services hold and ask for: its pools' (dual-stack, IPv4) and one outside both. */
const TIGHT = ['203.0.113.0', '203.0.113.1', '2001:db8:1::', '2001:db8:1::1', '192.0.2.0', '192.0.2.1', '192.0.2.9'];

/**
 * A tight cluster: a dual-stack pool of two addresses per family, an IPv4 pool of two (an IPv6
 * one at times), and 3-5 Services of every policy whose statuses (0-3 entries, hostname-only ones
 * too) and requests draw from those few addresses, so that claims, sharing and full pools meet.
 */
export function tightCluster(seed: number): KubeObject[] {
  const r = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const objects: KubeObject[] = [];
  const pools: [string, Record<string, unknown>][] = [
    ['d', { addresses: ['203.0.113.0/31', '2001:db8:1::/127'] }],
    ['v4', { addresses: ['192.0.2.0/31'] }],
  ];
  if (r() < 0.3) pools.push(['v6', { addresses: ['2001:db8:2::/127'] }]);
  for (const [name, spec] of pools) {
    if (r() < 0.15) spec.autoAssign = false;
    if (r() < 0.2) spec.serviceAllocation = { priority: pick([1, 2]), ...(r() < 0.3 ? { serviceSelectors: [{ matchLabels: { app: 'x' } }] } : {}) };
    objects.push({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: 'metallb-system' }, spec } as KubeObject);
  }
  const n = 3 + Math.floor(r() * 3);
  for (let i = 0; i < n; i++) {
    const kind = pick(['v4', 'v4', 'dualReq', 'dualPrefer', 'v4Prefer', 'v6']);
    const clusterIPs = kind === 'v4' || kind === 'v4Prefer' ? ['10.96.0.1'] : kind === 'v6' ? ['fd00::1'] : ['10.96.0.1', 'fd00::1'];
    const policy = kind === 'dualReq' ? 'RequireDualStack' : kind.endsWith('Prefer') ? 'PreferDualStack' : 'SingleStack';
    // Indexes into TIGHT, 'h' a hostname-only entry.
    const entries = pick<readonly (number | 'h')[]>([[], [0], [1], [4], [5], [6], [0, 2], [1, 3], [0, 3], [4, 2], ['h'], [0, 'h'], ['h', 'h'], [0, 2, 'h']]);
    const ingress = entries.map((x) => (x === 'h' ? { hostname: 'h.example' } : { ip: TIGHT[x]! }));
    const ips = ingress.flatMap((x) => ('ip' in x ? [x.ip] : []));
    const annotations: Record<string, string> = {};
    if (r() < 0.35) annotations['metallb.io/allow-shared-ip'] = 'k';
    const req = r();
    if (req < 0.15) annotations['metallb.io/loadBalancerIPs'] = pick(TIGHT);
    else if (req < 0.25 && ips.length > 0) annotations['metallb.io/loadBalancerIPs'] = ips.join(',');
    if (r() < 0.1) annotations['metallb.io/address-pool'] = pick(['d', 'v4', 'v6']);
    const ap = r();
    if (ap < 0.5) annotations['metallb.io/ip-allocated-from-pool'] = ips[0]?.startsWith('192.') ? 'v4' : 'd';
    else if (ap < 0.6) annotations['metallb.io/ip-allocated-from-pool'] = pick(['d', 'v4', 'v6']);
    objects.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { namespace: 'ns', name: `s${i}`, labels: { app: pick(['x', 'y']) }, annotations, creationTimestamp: `2025-01-0${1 + Math.floor(r() * 2)}T00:00:00Z` },
      spec: { type: 'LoadBalancer', clusterIPs, ipFamilyPolicy: policy, ports: [{ protocol: 'TCP', port: pick([80, 443]) }], selector: { app: 'x' } },
      status: { loadBalancer: { ingress } },
    } as KubeObject);
  }
  return objects;
}

/** What checkCluster counted: focused runs compared, and those that stopped early (`partial`). */
export interface Counts {
  clusters: number;
  focused: number;
  partial: number;
}

/**
 * Every handled Service of one cluster as the focus: the focused outcome deep-equals the full
 * run's; a partial run holds that outcome only, a whole one has the full run's pools and passes. Returns the first mismatch's description, or
 * undefined; adds to `counts`.
 */
export function checkCluster(config: Config, services: readonly Service[], lbClass: string, counts: Counts, maxPasses?: number): string | undefined {
  counts.clusters++;
  const opts = { loadBalancerClass: lbClass, ...(maxPasses !== undefined ? { maxPasses } : {}) };
  const full = allocateAll(config, services, opts);
  for (const o of full.services) {
    const focused = allocateAll(config, services, { ...opts, focus: o.service });
    counts.focused++;
    if (focused.partial) {
      counts.partial++;
      if (focused.services.length !== 1) return `${o.service}: a partial run holds ${focused.services.length} outcomes`;
      if (o.error !== null) return `${o.service}: a partial run for a Service whose full run fails (${o.error})`;
    }
    const mine = focused.services.find((x) => x.service === o.service);
    try {
      assert.deepEqual(mine, o);
    } catch {
      return `${o.service}${focused.partial ? ' (partial)' : ''}: focused ${JSON.stringify(mine)}\n  full ${JSON.stringify(o)}`;
    }
    // A whole focused run (not partial) has the full run's pools and passes too.
    if (!focused.partial && (JSON.stringify(focused.pools) !== JSON.stringify(full.pools) || focused.passes !== full.passes)) {
      return `${o.service}: pools or passes differ: focused ${JSON.stringify([focused.pools, focused.passes])}\n  full ${JSON.stringify([full.pools, full.passes])}`;
    }
  }
  return undefined;
}

/** The cluster of `seed` checked (with allocateAll's `maxPasses`, when given) (undefined: equal everywhere, or a configuration the controller rejects). */
export function checkSeed(seed: number, counts: Counts, maxPasses?: number): string | undefined {
  const { objects, lbClass } = adversarialCluster(seed);
  return checkObjects(objects, lbClass, counts, maxPasses);
}

/** checkCluster on these objects' Services with the controller's configuration (undefined, unchecked, when it rejects it). */
function checkObjects(objects: KubeObject[], lbClass: string, counts: Counts, maxPasses?: number): string | undefined {
  const state = clusterStateFromObjects(objects);
  let config: Config;
  try {
    config = controllerConfig(state);
  } catch {
    return undefined;
  }
  return checkCluster(config, state.services, lbClass, counts, maxPasses);
}

test('focus: the focused outcome equals the full run on 250 adversarial clusters, and the partial shortcuts answer often', () => {
  const counts: Counts = { clusters: 0, focused: 0, partial: 0 };
  for (let seed = 1; seed <= 250; seed++) {
    const mismatch = checkSeed(seed, counts);
    assert.equal(mismatch, undefined, `seed ${seed}: ${mismatch}`);
  }
  console.log(`adversarial clusters: ${counts.clusters} checked, ${counts.focused} focused runs, ${counts.partial} partial`);
  assert.ok(counts.clusters >= 225, `${counts.clusters} clusters had a configuration the controller accepts`);
  assert.ok(counts.partial >= 140, `the focus answered early (partial) ${counts.partial} times`);
});

test('focus: the focused outcome equals the full run on 500 tight dual-stack clusters, and the partial shortcuts answer often', () => {
  const counts: Counts = { clusters: 0, focused: 0, partial: 0 };
  for (let seed = 1; seed <= 500; seed++) {
    const mismatch = checkObjects(tightCluster(seed), '', counts);
    assert.equal(mismatch, undefined, `tight seed ${seed}: ${mismatch}`);
  }
  console.log(`tight clusters: ${counts.clusters} checked, ${counts.focused} focused runs, ${counts.partial} partial`);
  assert.ok(counts.clusters >= 490, `${counts.clusters} clusters had a configuration the controller accepts`);
  assert.ok(counts.partial >= 80, `the focus answered early (partial) ${counts.partial} times`);
});
