/**
 * Refusals explained (issue #12 item 4), through the CLI on a snapshot shaped after MetalLB users'
 * reports (test/unit/fixtures/issue12/refusals.yaml): an IPv6 Service whose only pool is IPv4 (a
 * family mismatch, not an exhausted pool: where the family comes from and what to change), an
 * exhausted pool (another pool with room this Service may use, and the sharing key that lets it
 * share an address), Services without a selector (endpoints managed by hand).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, runCliAsync } from '../helpers/cli.ts';
import { head, type Finding } from '../helpers/explain-text.ts';

const FILE = join(ROOT, 'test/unit/fixtures/issue12/refusals.yaml');

async function explain(target: string): Promise<{ status: number | null; h: Record<string, string>; findings: Finding[] }> {
  const [t, j] = await Promise.all([runCliAsync(['explain', target, '-f', FILE]), runCliAsync(['explain', target, '-f', FILE, '-o', 'json'])]);
  assert.equal(t.stderr, '');
  assert.equal(t.status, j.status);
  const findings = (JSON.parse(j.stdout) as { findings: Finding[] }).findings;
  const h = head(t.stdout);
  // What the text's first lines say is the JSON's first error finding.
  const first = findings.find((f) => f.severity === 'error');
  if (first) {
    assert.equal(h.Why, first.message);
    assert.equal(h.Fix, first.fix);
  }
  return { status: t.status, h, findings };
}

test('refusals explained: first lines and JSON', { concurrency: 4 }, async (t) => {
  await t.test('an IPv6 Service and an IPv4-only pool: a family mismatch, with where the family comes from', async () => {
    const r = await explain('dns/coredns-v6');
    assert.equal(r.status, 1);
    assert.equal(r.h.Verdict, 'pending: the controller gives it no address, so nobody announces it');
    assert.equal(
      r.h.Why,
      'MetalLB reports: no available IPs. It means: no pool gives this IPv6 Service an address; pools tried: reserved: autoAssign is false; lan: no IPv6 address at all (it has IPv4 only). The Service is IPv6: MetalLB takes its family from spec.clusterIPs [fd00:10:96::a53], which the API server set from spec.ipFamilies [IPv6] and spec.ipFamilyPolicy SingleStack',
    );
    assert.equal(
      r.h.Fix,
      'add an IPv6 range to pool lan (or a new IPv6 IPAddressPool), or make the Service IPv4 (spec.ipFamilies: [IPv4]; the primary family of an existing Service cannot change: recreate it)',
    );
    assert.equal(r.findings[0]!.id, 'pool-lacks-family');
    // The IPv4-only reserved pool is no way out for an IPv6 Service: not proposed.
    assert.doesNotMatch(r.h.Fix!, /reserved/);
  });

  await t.test('an exhausted pool: the pool with room this Service may request, and the sharing key', async () => {
    const r = await explain('shop/web');
    assert.equal(r.status, 1);
    assert.equal(r.h.Verdict, 'pending: the controller gives it no address, so nobody announces it');
    assert.match(
      r.h.Why!,
      /^MetalLB reports: no available IPs\. It means: no pool gives this IPv4 Service an address; pools tried: reserved: autoAssign is false; lan: no available IPs \(4 addresses in use\)$/,
    );
    assert.match(r.h.Fix!, /^add addresses to pool lan \(or a new IPAddressPool\), or delete Services that no longer need theirs, /);
    assert.match(r.h.Fix!, /share 192\.168\.10\.0 with shop\/api: set metallb\.io\/allow-shared-ip: "shop-edge" on this Service \(the key it has; no port in common\)/);
    assert.match(r.h.Fix!, /or request pool reserved explicitly with the annotation metallb\.io\/address-pool: reserved \(it has autoAssign: false\), which has free addresses$/);
    assert.equal(r.findings[0]!.id, 'pool-exhausted');
  });

  await t.test('no selector, an Endpoints object without nodeName, externalTrafficPolicy Local', async () => {
    const r = await explain('db/postgres-external');
    assert.equal(r.status, 1);
    assert.equal(r.h.Verdict, 'nobody announces 192.168.20.10');
    assert.match(r.h.Why!, /^externalTrafficPolicy is Local, and the Service has no selector, so Kubernetes makes no endpoints for it: they are managed by hand/);
    assert.match(r.h.Why!, /EndpointSlice postgres-external-8f2kq \(mirrored from an Endpoints object\) lists 192\.168\.0\.50 without a nodeName, so no node hosts a local endpoint/);
    assert.match(r.h.Fix!, /^set externalTrafficPolicy: Cluster \(backends such as 192\.168\.0\.50 outside the cluster run on no node\)/);
    assert.equal(r.findings[0]!.id, 'local-no-endpoint-on-candidate');
    assert.doesNotMatch(r.h.Fix!, /schedule the pods/);
  });

  await t.test('no selector and no endpoints at all: "create an Endpoints object", not "check the selector"', async () => {
    const r = await explain('db/redis-external');
    assert.equal(r.status, 1);
    assert.equal(r.h.Verdict, 'nobody announces 192.168.20.11');
    assert.match(r.h.Why!, /^the Service has no selector, so Kubernetes makes no endpoints for it: they are managed by hand .*; there are none, so no speaker announces it/);
    assert.equal(
      r.h.Fix,
      "create an Endpoints object db/redis-external listing the backends' addresses and ports (or an EndpointSlice labelled kubernetes.io/service-name: redis-external), or give the Service a selector",
    );
    assert.equal(r.findings[0]!.id, 'no-ready-endpoints');
  });
});
