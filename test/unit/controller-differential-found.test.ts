/**
 * The controller's restart (allocateAll, `allocate --dry-run`) on the clusters the differential
 * test found disagreeing with MetalLB v0.16.1 (test/differential/found/, KNOWN.md): each test
 * asserts MetalLB's answer, and the `nondeterministic` flag exactly where MetalLB's answer varies.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { clusterStateFromObjects, type KubeObject, type Service } from '../../src/core/kube.ts';
import { allocateAll, type AllocateAllResult, type ServiceAllocationOutcome } from '../../src/core/controller/index.ts';
import { ingressEntries, processingOrder } from '../../src/core/controller/allocate-all.ts';
import { controllerConfig } from '../../src/core/explain/index.ts';
import { ROOT } from '../helpers/cli.ts';

function restart(file: string): { result: AllocateAllResult; by: Record<string, ServiceAllocationOutcome> } {
  const items = (parse(readFileSync(`${ROOT}test/differential/found/${file}`, 'utf8')) as { items: KubeObject[] }).items;
  const state = clusterStateFromObjects(items);
  const result = allocateAll(controllerConfig(state, 'metallb-system'), state.services);
  return { result, by: Object.fromEntries(result.services.map((s) => [s.service, s])) };
}

test('K6: hostname-only ingress entries count in the restart order; the Service with more entries keeps the claimed address, certainly', () => {
  const { by } = restart('controller-hostname-ingress-restart-order.yaml');
  assert.deepEqual(by['shop/web']!.ips, ['10.0.1.0']);
  assert.equal(by['shop/web']!.nondeterministic, undefined);
  assert.deepEqual(by['shop/api']!.ips, []);
  assert.equal(by['shop/api']!.nondeterministic, undefined);
  assert.deepEqual(
    by['shop/api']!.events.map((e) => e.reason),
    ['ClearAssignment', 'AllocationFailed'],
  );
});

test('processingOrder sorts by ingress entries, hostname-only ones included', () => {
  const svc = (name: string, ingress: Array<{ ip?: string; hostname?: string }>): Service => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'ns' },
    spec: { type: 'LoadBalancer' },
    status: { loadBalancer: { ingress } },
  });
  const a = svc('a', [{ ip: '10.0.0.1' }]);
  const b = svc('b', [{ ip: '10.0.0.2' }, { hostname: 'b.example.com' }]);
  const c = svc('c', [{ hostname: 'c.example.com' }]);
  assert.equal(ingressEntries(b), 2);
  assert.deepEqual(
    processingOrder([a, c, b]).map((s) => s.metadata?.name),
    ['b', 'a', 'c'],
  );
});

test('K2: metallb.io/loadBalancerIPs not in text order ends sorted by text in the status (isEqualIPs sorts in place)', () => {
  const { by } = restart('controller-loadbalancerips-sorted.yaml');
  const svc = Object.values(by).find((o) => o.ips.length === 2)!;
  assert.deepEqual(svc.ips, ['10.0.1.0', '2001:db8:0:4::1']);
  assert.equal(svc.nondeterministic, undefined);
});

test('K3: an invalid address request leaves no ip-allocated-from-pool annotation (the reconcile fails before setting it)', () => {
  const { by } = restart('controller-invalid-requested-ips-pool-annotation.yaml');
  const svc = Object.values(by).find((o) => o.ips.length > 0)!;
  assert.deepEqual(svc.ips, ['10.0.3.4']);
  assert.equal(svc.pool, null);
  assert.match(svc.error ?? '', /can not have both/);
});

test('K1: two pending Services sharing a pool are flagged: either may come first after a restart', () => {
  const { by } = restart('controller-restart-order-pending.yaml');
  assert.deepEqual([by['team-a/svc-3']!.ips, by['default/svc-2']!.ips].flat().sort(), ['10.0.2.0', '10.0.2.1']);
  assert.match(by['team-a/svc-3']!.nondeterministic ?? '', /random \(Go map\) order; in another such order this Service gets 10\.0\.2\.1/);
  assert.match(by['default/svc-2']!.nondeterministic ?? '', /in another such order this Service gets 10\.0\.2\.0/);
});

test('K1: two Services that must both re-allocate are flagged; the one keeping the claimed address is not', () => {
  const { by } = restart('controller-restart-order-reallocate.yaml');
  assert.ok(by['team-a/svc-2']!.nondeterministic);
  assert.ok(by['team-a/svc-5']!.nondeterministic);
  assert.deepEqual(by['default/svc-4']!.ips.includes('10.0.1.0'), true);
  assert.equal(by['default/svc-4']!.nondeterministic, undefined);
});

test('K7: a random pool choice ends a PreferDualStack oscillation: the dry run answers where MetalLB ends, flagged', () => {
  const { by } = restart('controller-random-pool-escapes-oscillation.yaml');
  const o = by['default/svc-4']!;
  assert.deepEqual(o.ips, ['2001:db8:0:8::']);
  assert.equal(o.pool, 'pool-b');
  assert.equal(o.oscillates, undefined);
  assert.match(o.nondeterministic ?? '', /in pool-a it never settles, in pool-b it does, so it ends there/);
});

test("K1: a PreferDualStack Service that keeps its status is flagged when its group's order lets it take another Service's address", () => {
  const { by } = restart('controller-restart-order-prefer-dual-stack.yaml');
  assert.deepEqual(by['default/svc-3']!.ips, ['10.0.1.6']);
  assert.match(by['default/svc-3']!.nondeterministic ?? '', /in another such order this Service gets 10\.0\.1\.0/);
});

test('K1: Services of one group that lose a status address claimed by a Service of another group are flagged', () => {
  const { by } = restart('controller-restart-order-claimed-address.yaml');
  for (const k of ['default/svc-1', 'team-a/svc-2', 'team-a/svc-3']) assert.match(by[k]!.nondeterministic ?? '', /in another such order this Service gets 10\.0\.1\.[012]/, k);
  assert.equal(by['team-a/svc-4']!.nondeterministic, undefined);
});

test('K8: two tie groups whose orders combine: each group permuted alone flags the pending Service', () => {
  const { by } = restart('controller-restart-order-two-groups.yaml');
  // Name order: svc-5 keeps 10.0.1.0, svc-3 gets none, the pending two take 10.0.2.1 and 10.0.2.2.
  assert.deepEqual(by['default/svc-5']!.ips, ['10.0.1.0']);
  assert.deepEqual(by['team-a/svc-1']!.ips, ['10.0.2.1']);
  assert.deepEqual(by['default/svc-4']!.ips, ['10.0.2.2']);
  assert.match(by['default/svc-4']!.nondeterministic ?? '', /random \(Go map\) order; in another such order this Service gets 10\.0\.2\.[13]/);
});

test('K8: PreferDualStack Services placed first in their group take a kept status address: the keeper is flagged', () => {
  const { by } = restart('controller-restart-order-prefer-dual-stack-first.yaml');
  assert.deepEqual(by['team-a/svc-5']!.ips, ['10.0.3.3']);
  assert.match(by['team-a/svc-5']!.nondeterministic ?? '', /in another such order this Service gets 10\.0\.3\.4/);
  assert.ok(by['team-b/svc-2']!.oscillates);
});

test("K8: the restart order combined with another Service's random pool choice flags the Service that can lose its address", () => {
  const { by } = restart('controller-restart-order-random-pool.yaml');
  assert.deepEqual(by['default/svc-3']!.ips, ['10.0.3.0']);
  assert.match(by['default/svc-3']!.nondeterministic ?? '', /in random order; in another such order, with team-a\/svc-5 taking pool-c, this Service gets 10\.0\.1\.0/);
  assert.deepEqual(by['team-a/svc-5']!.ips, ['10.0.1.0']);
});

test("K8: a PreferDualStack cycle whose IPv6 address depends on another Service's random pool choice is flagged", () => {
  const { by } = restart('controller-random-pool-oscillation-address.yaml');
  const o = by['team-a/svc-2']!;
  assert.deepEqual(o.oscillates, [['10.0.1.0'], ['10.0.1.0', '2001:db8:0:4::3']]);
  assert.match(o.nondeterministic ?? '', /with other such choices \(team-a\/svc-4 taking pool-b\) this Service never settles, cycling through 10\.0\.1\.0 \/ 10\.0\.1\.0, 2001:db8:0:4::2/);
});
