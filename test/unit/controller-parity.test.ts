/**
 * The dry run and the daemon agree: for each state, allocateAll (what `allocate --dry-run` and
 * `explain` use) and the ControllerLoop started on the same objects (a restart, on FakeCluster)
 * end with the same addresses and pool for every Service. The states are the ones where they
 * once could not: a shrunk pool (restart order), a second pass MetalLB asks for, a Service MetalLB
 * rewrites forever, pool order by sortPools. Plus the pool status backoff.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/core/config/index.ts';
import { allocateAll, type AllocateAllResult } from '../../src/core/controller/index.ts';
import { emptyClusterState, type IPAddressPool, type Service } from '../../src/core/kube.ts';
import { ExponentialBackoff } from '../../src/controller/queue.ts';
import { FakeCluster, NS, run, settle, tick } from '../helpers/controller-cluster.ts';

function pool(name: string, spec: NonNullable<IPAddressPool['spec']>): IPAddressPool {
  return { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: NS, generation: 1 }, spec } as IPAddressPool;
}

let n = 0;
function svc(ns: string, name: string, o: { ips?: string[]; annotations?: Record<string, string>; labels?: Record<string, string>; policy?: string; clusterIPs?: string[]; ts?: string } = {}): Service {
  n++;
  const clusterIPs = o.clusterIPs ?? [`10.96.1.${n}`];
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: ns,
      uid: `uid-${ns}-${name}`,
      creationTimestamp: o.ts ?? `2024-01-01T00:00:${String(n % 60).padStart(2, '0')}Z`,
      ...(o.annotations ? { annotations: o.annotations } : {}),
      ...(o.labels ? { labels: o.labels } : {}),
    },
    spec: {
      type: 'LoadBalancer',
      clusterIP: clusterIPs[0],
      clusterIPs,
      ports: [{ port: 80, protocol: 'TCP' }],
      ipFamilies: clusterIPs.map((ip) => (ip.includes(':') ? 'IPv6' : 'IPv4')),
      ...(o.policy ? { ipFamilyPolicy: o.policy } : {}),
    },
    status: o.ips ? { loadBalancer: { ingress: o.ips.map((ip) => ({ ip })) } } : { loadBalancer: {} },
  } as Service;
}

function dryRun(pools: IPAddressPool[], services: Service[]): AllocateAllResult {
  const config = parseConfig({ ...emptyClusterState(), ipAddressPools: pools, namespaces: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } }] });
  return allocateAll(config, services);
}

const scenarios: Array<{ name: string; pools: IPAddressPool[]; services: () => Service[]; check?: (r: AllocateAllResult) => void }> = [
  {
    name: 'a pool shrunk under four Services while two others hold addresses now outside it',
    pools: [pool('lab', { addresses: ['192.0.2.0/30'] })],
    services: () => [
      svc('default', 'a-moved', { ips: ['192.0.2.4'], annotations: { 'metallb.io/ip-allocated-from-pool': 'lab' } }),
      svc('default', 'b-moved', { ips: ['192.0.2.5'], annotations: { 'metallb.io/ip-allocated-from-pool': 'lab' } }),
      svc('default', 'c-kept', { ips: ['192.0.2.0'], annotations: { 'metallb.io/ip-allocated-from-pool': 'lab' } }),
      svc('default', 'd-kept', { ips: ['192.0.2.1'], annotations: { 'metallb.io/ip-allocated-from-pool': 'lab' } }),
      svc('default', 'e-kept', { ips: ['192.0.2.2'], annotations: { 'metallb.io/ip-allocated-from-pool': 'lab' } }),
      svc('default', 'f-kept', { ips: ['192.0.2.3'], annotations: { 'metallb.io/ip-allocated-from-pool': 'lab' } }),
    ],
    check: (r) =>
      assert.deepEqual(
        r.services.filter((s) => s.ips.length === 0).map((s) => s.service),
        ['default/a-moved', 'default/b-moved'],
      ),
  },
  {
    name: 'PreferDualStack with IPv4-only clusterIPs (second pass; MetalLB never settles)',
    pools: [pool('public', { addresses: ['10.0.0.0/29', '2001:db8:1::/126'] })],
    services: () => [svc('default', 'web', { ips: ['10.0.0.4'], policy: 'PreferDualStack', clusterIPs: ['10.96.0.10'], annotations: { 'metallb.io/allow-shared-ip': 'k1' } })],
    check: (r) => {
      assert.deepEqual(r.services[0]!.ips, ['10.0.0.0']);
      assert.ok(r.services[0]!.oscillates);
    },
  },
  {
    name: 'selector pools at one priority and a negative priority',
    pools: [
      pool('a-pool', { addresses: ['10.0.1.0/30'], serviceAllocation: { serviceSelectors: [{ matchLabels: { app: 'web' } }] } }),
      pool('b-pool', { addresses: ['10.0.2.0/30'], serviceAllocation: { serviceSelectors: [{ matchLabels: { app: 'web' } }] } }),
      pool('neg', { addresses: ['10.0.3.0/30'], serviceAllocation: { priority: -1, namespaces: ['other'] } }),
    ],
    services: () => [svc('default', 'web', { labels: { app: 'web' } }), svc('other', 'api', { labels: { app: 'web' } })],
    // other/api: MetalLB's list is [neg (ByNamespace), a-pool, b-pool]; the insertion sort moves
    // a-pool, then b-pool, in front of everything (the comparator answers true): b-pool first.
    check: (r) =>
      assert.deepEqual(
        r.services.map((s) => [s.service, s.pool]),
        [
          ['default/web', 'b-pool'],
          ['other/api', 'b-pool'],
        ],
      ),
  },
  {
    name: 'Services sharing a key (every allocation key changes: a second pass)',
    pools: [pool('p', { addresses: ['192.0.2.0/30'] })],
    services: () => [svc('default', 'http', { annotations: { 'metallb.io/allow-shared-ip': 'k' } }), svc('default', 'https', { annotations: { 'metallb.io/allow-shared-ip': 'k' }, ips: ['192.0.2.3'] })],
  },
];

describe('dry run and daemon agree', () => {
  for (const sc of scenarios) {
    test(sc.name, async () => {
      const predicted = dryRun(sc.pools, sc.services());
      sc.check?.(predicted);
      const c = new FakeCluster();
      for (const p of sc.pools) c.put(p);
      c.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other' } } as never);
      for (const s of sc.services()) c.put(s);
      await tick(2);
      const loop = await run(c);
      await settle(loop);
      for (const s of predicted.services) {
        assert.deepEqual({ ips: c.ipsOf(s.service), pool: c.ipsOf(s.service).length > 0 ? c.poolOf(s.service) : undefined }, { ips: [...s.ips], pool: s.ips.length > 0 ? s.pool : undefined }, s.service);
      }
      await loop.stop();
    });
  }
});

describe('ControllerLoop: a Service MetalLB rewrites forever', () => {
  test('the loop writes the repeated state, logs once, and stops reacting to its own writes', async () => {
    const c = new FakeCluster();
    c.put(pool('public', { addresses: ['10.0.0.0/29', '2001:db8:1::/126'] }));
    c.put(svc('default', 'web', { ips: ['10.0.0.4'], policy: 'PreferDualStack', clusterIPs: ['10.96.0.10'], annotations: { 'metallb.io/allow-shared-ip': 'k1' } }));
    await tick(2);
    const lines: Array<Record<string, unknown>> = [];
    const logger = { level: 'info', with: () => logger, debug: () => {}, info: () => {}, warn: () => {}, error: (o: Record<string, unknown>) => lines.push(o) };
    const loop = await run(c, { logger: logger as never });
    await tick(50);
    await settle(loop);
    assert.deepEqual(c.ipsOf('default/web'), ['10.0.0.0']);
    assert.equal(loop.stats.cycles, 1);
    // pass 1 [10.0.0.4, v6], pass 2 [10.0.0.0], its echo [10.0.0.0, v6], its echo [10.0.0.0] (the cycle): then nothing
    assert.equal(c.serviceWrites.length, 4);
    assert.deepEqual(
      lines.filter((l) => l.event === 'serviceNeverConverges').map((l) => l.states),
      [[['10.0.0.0'], ['10.0.0.0', '2001:db8:1::']]],
    );
    // A change by someone else (a label) makes the loop look again: [10.0.0.0, v6], [10.0.0.0],
    // then [10.0.0.0, v6] again closes the cycle there.
    const cur = c.services.get('default/web')!;
    c.put({ ...cur, metadata: { ...cur.metadata, labels: { touched: 'yes' } } });
    await tick(50);
    await settle(loop);
    assert.equal(c.serviceWrites.length, 7);
    assert.equal(loop.stats.cycles, 2);
    assert.deepEqual(c.ipsOf('default/web'), ['10.0.0.0', '2001:db8:1::']);
    await loop.stop();
  });
});

describe('ControllerLoop: pool status writes back off', () => {
  test('a failing pool status write is retried with growing delays, not on every change', async () => {
    const c = new FakeCluster();
    c.poolWriteError = Object.assign(new Error('ipaddresspools.metallb.io "p" is forbidden'), { statusCode: 403 });
    c.put(pool('p', { addresses: ['192.0.2.0/28'] }));
    for (let i = 0; i < 5; i++) c.put(svc('default', `s${i}`));
    await tick(2);
    const loop = await run(c, { poolStatusBackoff: new ExponentialBackoff(20, 10_000), settle: false });
    await tick(400);
    const attempts = c.poolWriteAttempts.slice();
    // 20, 40, 80, 160 ms: at most 5–6 attempts in 400 ms (retrying every 1 ms, as before, would be hundreds).
    assert.ok(attempts.length >= 2 && attempts.length <= 6, `attempts: ${attempts.length}`);
    // A timer never fires early (a loaded machine only makes it late): gap i is at least 20·2^i ms.
    const gaps = attempts.slice(1).map((t, i) => t - attempts[i]!);
    gaps.forEach((g, i) => {
      assert.ok(g >= 20 * 2 ** i - 2, `delays grow: ${gaps.map((x) => x.toFixed(0)).join(', ')}`);
    });
    assert.ok(loop.stats.poolStatusErrors >= 2);
    c.poolWriteError = null;
    await tick(700);
    await settle(loop);
    assert.deepEqual(c.pools.get(`${NS}/p`)!.status, { assignedIPv4: 5, assignedIPv6: 0, availableIPv4: 11, availableIPv6: 0 });
    await loop.stop();
  });
});
