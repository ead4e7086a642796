/**
 * allocateAll's `focus` (explain's dry run): on random clusters, the focused Service's outcome and
 * the pools equal those of the full run, for every Service as the focus; and the focus does skip
 * the other executions on some of them (other Services then lack notes), so the shortcut is tested.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allocateAll } from '../../src/core/controller/index.ts';
import { parsePool } from '../../src/core/config/index.ts';
import type { Config, Pool } from '../../src/core/config/types.ts';
import { controllerConfig } from '../../src/core/explain/context.ts';
import { clusterStateFromObjects, type KubeObject, type Service } from '../../src/core/kube.ts';
import { generateCase } from '../differential/generate.ts';
import { mulberry32 } from '../helpers/rng.ts';

/** What checkEveryFocus saw: focused runs that skipped other executions, and runs that stopped early (`partial`). */
interface FocusCounts {
  skipped: number;
  partial: number;
}

/**
 * Checks every Service of one cluster as the focus: its outcome equals the full run's; a whole
 * focused run has the full run's pools and passes too, a `partial` one holds the focused outcome
 * only, without a failure. Adds to `counts`.
 */
function checkEveryFocus(config: Config, services: readonly Service[], lbClass: string, label: string, counts: FocusCounts): void {
  const full = allocateAll(config, services, { loadBalancerClass: lbClass });
  for (const o of full.services) {
    const focused = allocateAll(config, services, { loadBalancerClass: lbClass, focus: o.service });
    assert.deepEqual(
      focused.services.find((x) => x.service === o.service),
      o,
      `${label}: ${o.service}`,
    );
    if (focused.partial) {
      counts.partial++;
      assert.deepEqual(
        focused.services.map((x) => x.service),
        [o.service],
        `${label}: a partial run holds the focused outcome only, focus ${o.service}`,
      );
      assert.equal(o.error, null, `${label}: a partial run's focus has no failure, focus ${o.service}`);
      continue;
    }
    assert.deepEqual(focused.pools, full.pools, `${label}: pools, focus ${o.service}`);
    assert.equal(focused.passes, full.passes, `${label}: passes, focus ${o.service}`);
    if (focused.services.some((x, i) => x.nondeterministic !== full.services[i]!.nondeterministic)) counts.skipped++;
  }
}

function pool(name: string, addresses: string[], autoAssign: boolean): Pool {
  return parsePool({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: 'm' }, spec: { addresses, autoAssign } }, []);
}

/**
 * A small cluster built to make restart order matter: two or three tiny pools (one IPv6 or
 * overlapping at times), and Services with 0-2 status addresses (in a pool, out of every pool, or
 * claimed twice), pending ones, requested addresses and pools, shared addresses, PreferDualStack.
 */
function randomCluster(seed: number): { config: Config; services: Service[] } {
  const r = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const pools: Pool[] = [pool('a', ['192.0.2.0/29'], true), pool('b', [r() < 0.3 ? '192.0.2.4/30' : '198.51.100.0/30'], r() < 0.8)];
  if (r() < 0.4) pools.push(pool('c', ['2001:db8::/126'], true));
  const config: Config = { pools: new Map(pools.map((p) => [p.name, p])), peers: new Map(), bfdProfiles: new Map(), poolsByNamespace: new Map(), poolsByServiceSelector: [] };
  const addrs = ['192.0.2.0', '192.0.2.1', '192.0.2.2', '192.0.2.5', '192.0.2.7', '198.51.100.1', '198.51.100.2', '203.0.113.9', '2001:db8::1', '2001:db8::2'];
  const services: Service[] = [];
  const n = 4 + Math.floor(r() * 10);
  for (let i = 0; i < n; i++) {
    const entries = r() < 0.3 ? 0 : r() < 0.8 ? 1 : 2;
    const status = Array.from({ length: entries }, () => pick(addrs));
    const annotations: Record<string, string> = {};
    if (r() < 0.15) annotations['metallb.io/loadBalancerIPs'] = pick(addrs);
    if (r() < 0.15) annotations['metallb.io/address-pool'] = pick(['a', 'b', 'c']);
    if (r() < 0.2) annotations['metallb.io/allow-shared-ip'] = 'k';
    if (r() < 0.2) annotations['metallb.io/ip-allocated-from-pool'] = pick(['a', 'b']);
    const dual = r() < 0.15;
    services.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { namespace: 'default', name: `s${i}`, creationTimestamp: `2025-01-0${1 + Math.floor(r() * 3)}T00:00:00Z`, annotations },
      spec: {
        type: 'LoadBalancer',
        clusterIPs: dual ? ['10.96.0.10', 'fd00::10'] : ['10.96.0.10'],
        ...(dual ? { ipFamilyPolicy: 'PreferDualStack', ipFamilies: ['IPv4', 'IPv6'] } : {}),
        ports: [{ protocol: 'TCP', port: r() < 0.5 ? 80 : 443 }],
      },
      status: { loadBalancer: { ingress: status.map((ip) => ({ ip })) } },
    });
  }
  return { config, services };
}

test('focus: the focused outcome and the pools equal the full run on 120 clusters built for restart-order ties', () => {
  const counts: FocusCounts = { skipped: 0, partial: 0 };
  for (let seed = 1; seed <= 120; seed++) {
    const { config, services } = randomCluster(seed);
    checkEveryFocus(config, services, '', `seed ${seed}`, counts);
  }
  console.log(`restart-order clusters: ${counts.skipped} focused runs skipped other executions, ${counts.partial} stopped early`);
  assert.ok(counts.skipped >= 25, `the focus skipped the other executions ${counts.skipped} times`);
  assert.ok(counts.partial >= 15, `the focus stopped the run early ${counts.partial} times`);
});

test('focus: the focused outcome and the pools equal the full run on 150 differential-test clusters', () => {
  const counts: FocusCounts = { skipped: 0, partial: 0 };
  for (let i = 0; i < 150; i++) {
    const c = generateCase(11, i);
    const state = clusterStateFromObjects(c.resources as KubeObject[]);
    let config: Config;
    try {
      config = controllerConfig(state, c.namespace);
    } catch {
      continue; // a configuration the controller rejects: no dry run
    }
    checkEveryFocus(config, state.services, c.lbClass, `case ${c.id}`, counts);
  }
  console.log(`differential clusters: ${counts.skipped} focused runs skipped other executions, ${counts.partial} stopped early`);
  assert.ok(counts.partial >= 25, `the focus stopped the run early ${counts.partial} times`);
});
