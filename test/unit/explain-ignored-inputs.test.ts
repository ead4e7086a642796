/**
 * Inputs MetalLB ignores are named (issue #12 item 3), through the CLI on snapshots shaped after
 * MetalLB users' reports (test/unit/fixtures/issue12): misspelled or unknown annotations under
 * metallb.io/ and metallb.universe.tf/ (the did-you-mean only proposes an annotation MetalLB
 * reads), spec.externalIPs (explain and whois say MetalLB does not handle them), and addresses
 * another implementation wrote (k3s ServiceLB, kube-vip, Cilium) — never with the advice to add
 * them to a pool. The first lines of the text and the JSON carry the same findings.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, runCliAsync } from '../helpers/cli.ts';
import { head, type Finding } from '../helpers/explain-text.ts';

const DIR = join(ROOT, 'test/unit/fixtures/issue12');
const K3S = join(DIR, 'k3s-servicelb.yaml');
const INPUTS = join(DIR, 'ignored-inputs.yaml');

async function explain(file: string, target: string): Promise<{ status: number | null; text: string; json: { findings: Finding[]; allocation: { status: string; pool: string | null } } }> {
  const [t, j] = await Promise.all([runCliAsync(['explain', target, '-f', file]), runCliAsync(['explain', target, '-f', file, '-o', 'json'])]);
  assert.equal(t.stderr, '');
  assert.equal(t.status, j.status);
  return { status: t.status, text: t.stdout, json: JSON.parse(j.stdout) };
}

/** No finding advises adding an address to a pool (only "Do not add …"). */
function noPoolAdvice(findings: readonly Finding[], ips: readonly string[]): void {
  for (const f of findings) {
    for (const ip of ips) {
      const advice = f.fix.replace(/Do not add [^.]*/g, '');
      assert.doesNotMatch(advice, new RegExp(`add[^;.]*${ip.replace(/\./g, '\\.')}[^;.]*(to|in) an IPAddressPool`), `${f.id}: ${f.fix}`);
    }
    assert.doesNotMatch(f.fix.replace(/Do not add [^.]*/g, ''), /add the address to an IPAddressPool/, `${f.id}: ${f.fix}`);
  }
}

test('ignored inputs: first lines and JSON', { concurrency: 4 }, async (t) => {
  await t.test('k3s ServiceLB wrote the nodes\' own addresses: named, and never "add them to a pool"', async () => {
    const r = await explain(K3S, 'kube-system/traefik');
    assert.equal(r.status, 1);
    const h = head(r.text);
    assert.equal(h.Verdict, 'nobody announces 192.168.1.11, 192.168.1.12');
    assert.match(
      h.Why!,
      /^status\.loadBalancer\.ingress \(192\.168\.1\.11, 192\.168\.1\.12\) was written by k3s's ServiceLB \(klipper-lb\), not MetalLB: k3s runs svclb-traefik-4f7c2b9e-7xq2m for it, and 192\.168\.1\.11 \(InternalIP of k3s-server\)/,
    );
    assert.match(h.Why!, /MetalLB's controller replaces them with 192\.168\.1\.240 from pool first-pool, and the other implementation writes its own again/);
    assert.match(h.Fix!, /^let one implementation own the Service: start k3s with --disable=servicelb .*Do not add 192\.168\.1\.11, 192\.168\.1\.12 to an IPAddressPool \(they are nodes' own addresses\)$/);
    // The addresses are in no pool: none is named for them.
    assert.match(r.text, /\nAddresses: +192\.168\.1\.11, 192\.168\.1\.12 \(assigned\): from status\.loadBalancer\.ingress\n/);
    assert.equal(r.json.allocation.pool, null);
    assert.equal(r.json.findings[0]!.id, 'ingress-from-other-controller');
    assert.equal(r.json.findings[0]!.message, h.Why);
    assert.ok(!r.json.findings.some((f) => f.id === 'ip-not-in-pool' || f.id === 'status-ip-not-kept'));
    noPoolAdvice(r.json.findings, ['192.168.1.11', '192.168.1.12']);
  });

  await t.test('a misspelled deprecated-prefix pool annotation is the cause of a pending Service; the did-you-mean is metallb.io/address-pool', async () => {
    const r = await explain(INPUTS, 'shop/web');
    assert.equal(r.status, 1);
    const h = head(r.text);
    assert.equal(h.Verdict, 'pending: the controller gives it no address, so nobody announces it');
    assert.match(h.Why!, /^MetalLB ignores annotation metallb\.universe\.tf\/adress-pool: of the deprecated metallb\.universe\.tf\/ keys it reads only address-pool, loadBalancerIPs and allow-shared-ip/);
    assert.match(h.Why!, /The Service asks for pool "dmz" with metallb\.universe\.tf\/adress-pool, which MetalLB never reads, so the controller allocates as if nothing were requested: no available IPs$/);
    assert.equal(h.Fix, 'did you mean metallb.io/address-pool? rename the annotation to it');
    assert.deepEqual(
      r.json.findings.slice(0, 1).map((f) => [f.id, f.severity]),
      [['unknown-annotation', 'error']],
    );
  });

  await t.test('a wrong-case annotation on an announced Service is a warning on the first lines', async () => {
    const r = await explain(INPUTS, 'shop/grafana');
    assert.equal(r.status, 0);
    const h = head(r.text);
    assert.equal(h.Verdict, 'announced by node-2 over layer2: 192.168.1.240');
    assert.equal(
      h.Warning,
      'unknown-annotation: MetalLB ignores annotation metallb.io/loadbalancerIPs: it reads only metallb.io/address-pool, metallb.io/loadBalancerIPs, metallb.io/allow-shared-ip (names are case-sensitive)',
    );
    const f = r.json.findings.find((x) => x.id === 'unknown-annotation')!;
    assert.equal(f.severity, 'warning');
    assert.match(f.fix, /^did you mean metallb\.io\/loadBalancerIPs\?/);
    // MetalLB writes ip-allocated-from-pool itself: never named.
    assert.ok(!r.json.findings.some((x) => /ip-allocated-from-pool/.test(x.message)));
  });

  await t.test('spec.externalIPs of a ClusterIP Service: MetalLB does not handle them, and the pool holding the address is named', async () => {
    const r = await explain(INPUTS, 'legacy/db');
    assert.equal(r.status, 1);
    const h = head(r.text);
    assert.equal(h.Verdict, 'ignored: MetalLB does not handle this Service');
    assert.match(
      h.Why!,
      /^MetalLB does not handle spec\.externalIPs \(192\.168\.1\.245\): it neither allocates nor announces them .* MetalLB handles only Services of type LoadBalancer \(this one is ClusterIP\); pool lan contains 192\.168\.1\.245, so MetalLB may also give it to a LoadBalancer Service/,
    );
    assert.equal(
      h.Fix,
      'to have MetalLB announce 192.168.1.245: set spec.type: LoadBalancer, request it with the annotation metallb.io/loadBalancerIPs: 192.168.1.245 and remove it from spec.externalIPs; otherwise route it to a node yourself',
    );
    assert.deepEqual(
      r.json.findings.map((f) => f.id),
      ['external-ips-not-handled', 'not-load-balancer'],
    );
  });

  await t.test('whois on an external IP says MetalLB does not handle it (text and JSON)', async () => {
    const [t1, j1] = await Promise.all([runCliAsync(['whois', '192.168.1.245', '-f', INPUTS]), runCliAsync(['whois', '192.168.1.245', '-f', INPUTS, '-o', 'json'])]);
    assert.equal(t1.status, 1);
    const lines = t1.stdout.split('\n');
    assert.equal(lines[0], 'IP:           192.168.1.245');
    assert.equal(lines[1], 'Pool:         lan');
    assert.match(lines[2]!, /^External IP: +in spec\.externalIPs of legacy\/db \(ClusterIP\): MetalLB does not handle spec\.externalIPs: it neither allocates nor announces 192\.168\.1\.245/);
    const w = JSON.parse(j1.stdout) as { holders: unknown[]; externalIPs: Array<{ service: string; type: string; note: string }> };
    assert.deepEqual(w.holders, []);
    assert.deepEqual(
      w.externalIPs.map((x) => [x.service, x.type]),
      [['legacy/db', 'ClusterIP']],
    );
    assert.match(w.externalIPs[0]!.note, /pool lan contains it/);
  });

  await t.test('another loadBalancerClass: the address its implementation wrote lies in a MetalLB pool too', async () => {
    const r = await explain(INPUTS, 'edge/cilium-gw');
    assert.equal(r.status, 1);
    const h = head(r.text);
    assert.equal(h.Verdict, 'ignored: MetalLB does not handle this Service');
    assert.match(h.Why!, /^spec\.loadBalancerClass is "io\.cilium\/l2-announcer"/);
    const f = r.json.findings.find((x) => x.id === 'foreign-address-in-pool')!;
    assert.match(f.message, /^192\.168\.1\.253 in the status was written by the implementation of class "io\.cilium\/l2-announcer", yet MetalLB's pool lan contains it too/);
    assert.match(f.fix, /^split the ranges: remove 192\.168\.1\.253 from pool lan/);
    noPoolAdvice(r.json.findings, ['192.168.1.253']);
  });

  await t.test('spec.loadBalancerIP written by kube-vip-cloud-provider: named, never "add it to a pool"', async () => {
    const r = await explain(INPUTS, 'web/nginx');
    assert.equal(r.status, 1);
    const h = head(r.text);
    assert.equal(h.Verdict, 'pending: the controller gives it no address, so nobody announces it');
    assert.equal(
      h.Why,
      'spec.loadBalancerIP 192.168.2.50 was written by kube-vip, not for MetalLB: the Service carries kube-vip\'s annotation kube-vip.io/loadbalancerIPs. No IPAddressPool of MetalLB contains it, so MetalLB\'s controller refuses the request (["192.168.2.50"] is not allowed in config)',
    );
    assert.match(h.Fix!, /^let one implementation own the Service: remove kube-vip-cloud-provider .* Do not add 192\.168\.2\.50 to an IPAddressPool: it belongs to kube-vip's range$/);
    assert.deepEqual(
      r.json.findings.map((f) => f.id),
      ['load-balancer-ip-from-other-controller'],
    );
    noPoolAdvice(r.json.findings, ['192.168.2.50']);
  });
});

test('validate names the ignored annotations of the snapshot, with the same did-you-mean', async () => {
  const r = await runCliAsync(['validate', '-f', INPUTS, '-o', 'json']);
  const report = JSON.parse(r.stdout) as { warnings: Array<{ id: string; object: string; fix: string }> };
  const ann = report.warnings.filter((w) => w.id === 'unknown-annotation').map((w) => [w.object, w.fix]);
  assert.deepEqual(ann, [
    ['shop/Service/web', 'did you mean metallb.io/address-pool? rename the annotation to it'],
    ['shop/Service/grafana', 'did you mean metallb.io/loadBalancerIPs? rename the annotation to it'],
  ]);
});
