// The controller loop reports every configuration load as MetalLB's PoolReconciler does
// (reportCondition → ConfigurationState `controller`, condition poolReconcilerValid): null when
// the IPAddressPools and Communities parse — also when nothing changed —, MetalLB's error text
// when they do not (the previous configuration stays in force), null again once fixed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IPAddressPool } from '../../src/core/kube.ts';
import { FakeCluster, NS, run, settle } from '../helpers/controller-cluster.ts';

function pool(name: string, addresses: string[], generation = 1): IPAddressPool {
  return { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name, namespace: NS, generation }, spec: { addresses } } as IPAddressPool;
}

test('onConfigResult: valid → null, broken → the error, fixed → null; its own pool status writes report nothing', async () => {
  const c = new FakeCluster();
  c.put(pool('a', ['192.0.2.0/28']));
  const reports: Array<string | null> = [];
  const loop = await run(c, { onConfigResult: (e) => reports.push(e) });
  assert.ok(reports.length >= 1 && reports.every((r) => r === null), 'the first load (and the late watch event of the pool)');

  reports.length = 0;
  c.put(pool('b', ['192.0.2.8/29']));
  await settle(loop);
  assert.equal(reports.length, 1);
  assert.match(reports[0]!, /^metallb-system\/IPAddressPool\/b: CIDR "192\.0\.2\.8\/29" in pool "b" overlaps with already defined CIDR "192\.0\.2\.0\/28"/);

  c.put(pool('b', ['192.0.2.64/29'], 2));
  await settle(loop);
  assert.deepEqual(reports.slice(1), [null], "fixed; the loop's own pool status writes (same generation) report nothing more");
  assert.ok(c.poolWrites.length > 0);

  await loop.stop();
});
