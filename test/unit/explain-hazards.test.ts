/**
 * Dangerous configurations MetalLB accepts are warned about, in explain and validate (issue #12
 * item 5), on a snapshot shaped after MetalLB users' home-lab reports
 * (test/unit/fixtures/issue12/hazards.yaml): a pool holding the nodes' own addresses (one of them
 * given to a Service), pools overlapping the Pod and the Service ranges, speakers answering on
 * wlan0, cilium_vxlan and tailscale0 with no L2Advertisement restricting interfaces. Variants
 * (no interface names known, a custom exclusion list, restricted interfaces, no kubernetes
 * Service) run on the core.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT, runCliAsync } from '../helpers/cli.ts';
import { head, type Finding } from '../helpers/explain-text.ts';
import { clusterStateFromObjects, type KubeObject } from '../../src/core/kube.ts';
import { controllerConfig } from '../../src/core/explain/context.ts';
import { configHazards, riskyInterfaceKind } from '../../src/core/explain/hazards.ts';

const FILE = join(ROOT, 'test/unit/fixtures/issue12/hazards.yaml');
const NS = 'metallb-system';

function objects(): KubeObject[] {
  return parseAllDocuments(readFileSync(FILE, 'utf8'))
    .map((d) => d.toJS() as KubeObject)
    .filter(Boolean);
}

function hazards(objs: KubeObject[]) {
  const state = clusterStateFromObjects(objs);
  return configHazards(state, controllerConfig(state, NS), NS);
}

test('hazards through the CLI: first lines and JSON', { concurrency: 4 }, async (t) => {
  await t.test("a Service holding a node's own address: the hazard is the Why, though the Service is announced", async () => {
    const [tx, js] = await Promise.all([runCliAsync(['explain', 'home/pihole', '-f', FILE]), runCliAsync(['explain', 'home/pihole', '-f', FILE, '-o', 'json'])]);
    assert.equal(tx.status, 0, tx.stderr);
    const h = head(tx.stdout);
    assert.equal(h.Verdict, 'announced by rpi-1 over layer2: 192.168.1.11');
    assert.match(
      h.Why!,
      /^192\.168\.1\.11, this Service's address, is the InternalIP of rpi-2, and rpi-1 answers ARP\/NDP for it: traffic for rpi-2 goes to rpi-1 \(IPAddressPool home contains 192\.168\.1\.10 \(InternalIP of rpi-1\), 192\.168\.1\.11 \(InternalIP of rpi-2\): MetalLB accepts it/,
    );
    assert.equal(h.Fix, "keep the nodes' addresses out of pool home: list a range of free addresses (outside the nodes' and the DHCP server's), e.g. split 192.168.1.0/24 around 192.168.1.10, 192.168.1.11");
    const f = (JSON.parse(js.stdout) as { findings: Finding[] }).findings;
    assert.deepEqual([f[0]!.id, f[0]!.severity, f[0]!.message], ['pool-contains-node-address', 'error', h.Why]);
  });

  await t.test('a healthy Service in that pool: the pool and the interfaces are warnings', async () => {
    const [tx, js] = await Promise.all([runCliAsync(['explain', 'media/jellyfin', '-f', FILE]), runCliAsync(['explain', 'media/jellyfin', '-f', FILE, '-o', 'json'])]);
    assert.equal(tx.status, 0, tx.stderr);
    const h = head(tx.stdout);
    assert.equal(h.Verdict, 'announced by rpi-1 over layer2: 192.168.1.50');
    assert.match(h.Warning!, /^pool-contains-node-address: IPAddressPool home contains 192\.168\.1\.10 \(InternalIP of rpi-1\)/);
    const f = (JSON.parse(js.stdout) as { findings: Finding[] }).findings;
    assert.deepEqual(
      f.map((x) => [x.id, x.severity]),
      [
        ['pool-contains-node-address', 'warning'],
        ['l2-unintended-interfaces', 'warning'],
      ],
    );
    assert.equal(
      f[1]!.message,
      'rpi-1 answers ARP/NDP for 192.168.1.50 on wlan0 (wireless), cilium_vxlan (overlay/CNI), tailscale0 (VPN/tunnel) too (ServiceL2Status lists eth0, wlan0, cilium_vxlan, tailscale0): '
        + "MetalLB's default exclusion list does not exclude them and L2Advertisement home-l2, which selects this Service, does not restrict spec.interfaces, so the address leaks into those networks and clients there may learn the wrong MAC for it",
    );
    assert.equal(
      f[1]!.fix,
      'set spec.interfaces on L2Advertisement home-l2 to the interfaces clients reach the Service through: [eth0] (the other interface the speakers list); '
        + 'or add ^wlan.*, ^cilium_.*, ^tailscale.* to announcedInterfacesToExclude in ConfigMap metallb-system/metallb-excludel2 (the speakers read it at start: restart them)',
    );
  });

  await t.test('validate lists every hazard with its object', async () => {
    const r = await runCliAsync(['validate', '-f', FILE, '-o', 'json']);
    assert.equal(r.status, 0, r.stderr);
    const w = (JSON.parse(r.stdout) as { warnings: Array<{ id: string; object: string; message: string; source?: string }> }).warnings;
    assert.deepEqual(
      w.map((x) => [x.id, x.object]),
      [
        ['pool-contains-node-address', 'metallb-system/IPAddressPool/home'],
        ['pool-overlaps-pod-cidr', 'metallb-system/IPAddressPool/extra'],
        ['pool-overlaps-service-cidr', 'metallb-system/IPAddressPool/svc'],
        ['l2-unintended-interfaces', 'metallb-system/L2Advertisement/home-l2'],
      ],
    );
    assert.match(w[1]!.message, /overlaps the Pod range 10\.244\.1\.0\/24 \(rpi-2\)/);
    assert.match(w[2]!.message, /at least 10\.96\.0\.0\/20, from the kubernetes Service's cluster IP .*; it contains the cluster IP 10\.96\.0\.210/);
    assert.match(w[0]!.source ?? '', /hazards\.yaml:\d+$/);
  });
});

test('hazards: no interface names in the snapshot, no interface warning', () => {
  const hs = hazards(objects().filter((o) => o.kind !== 'ServiceL2Status'));
  assert.ok(!hs.some((h) => h.id === 'l2-unintended-interfaces'));
  assert.equal(hs.length, 3);
});

test('hazards: the exclusion list in force and spec.interfaces are honoured', () => {
  const cm: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'metallb-excludel2', namespace: NS },
    data: { 'excludel2.yaml': 'announcedInterfacesToExclude: ["^docker.*", "^lo$", "^wl.*", "^cilium_.*"]' },
  };
  const withList = hazards([...objects(), cm]).find((h) => h.id === 'l2-unintended-interfaces')!;
  assert.deepEqual(
    withList.interfaces!.map((i) => i.name),
    ['tailscale0'],
  );
  assert.match(withList.message, /which ConfigMap metallb-system\/metallb-excludel2 does not exclude/);
  const restricted = objects().map((o) => (o.kind === 'L2Advertisement' ? { ...o, spec: { ...(o.spec as object), interfaces: ['eth0'] } } : o));
  assert.ok(!hazards(restricted).some((h) => h.id === 'l2-unintended-interfaces'));
});

test('hazards: without the kubernetes Service only the cluster IPs a pool contains count; without podCIDRs nothing about Pods', () => {
  const objs = objects()
    .filter((o) => !(o.kind === 'Service' && o.metadata?.name === 'kubernetes'))
    .map((o) => (o.kind === 'Node' ? { ...o, spec: {} } : o));
  const hs = hazards(objs);
  const svc = hs.find((h) => h.id === 'pool-overlaps-service-cidr')!;
  assert.doesNotMatch(svc.message, /at least/);
  assert.match(svc.message, /contains the cluster IP 10\.96\.0\.210/);
  assert.ok(!hs.some((h) => h.id === 'pool-overlaps-pod-cidr'));
});

test('riskyInterfaceKind: wireless, VPN and overlay names; ordinary NICs are not', () => {
  assert.deepEqual(['wlan0', 'wlp2s0', 'wg0', 'tailscale0', 'cilium_vxlan', 'vxlan.calico', 'flannel.1', 'eth0', 'enp3s0', 'bond0', 'ens192'].map(riskyInterfaceKind), [
    'wireless',
    'wireless',
    'VPN/tunnel',
    'VPN/tunnel',
    'overlay/CNI',
    'overlay/CNI',
    'overlay/CNI',
    null,
    null,
    null,
    null,
  ]);
});

/** A Cilium cluster after metallb/metallb#2329, as `kubectl get -o yaml` Lists (test/unit/fixtures/issue12/cilium-interfaces.yaml). */
const CILIUM = join(ROOT, 'test/unit/fixtures/issue12/cilium-interfaces.yaml');

test('Cilium: the speaker answers on cilium_host, cilium_net and cilium_vxlan (explain, -o json, whois, validate)', { concurrency: 4 }, async (t) => {
  const message =
    'k8s-w1 answers ARP/NDP for 192.168.88.230 on cilium_net (overlay/CNI), cilium_host (overlay/CNI), cilium_vxlan (overlay/CNI) too (ServiceL2Status lists enp3s0, cilium_net, cilium_host, cilium_vxlan): '
    + "MetalLB's default exclusion list does not exclude them and L2Advertisement l2adv, which selects this Service, does not restrict spec.interfaces, so the address leaks into those networks and clients there may learn the wrong MAC for it";
  const fix =
    'set spec.interfaces on L2Advertisement l2adv to the interfaces clients reach the Service through: [enp3s0] (the other interface the speakers list); '
    + 'or add ^cilium_.* to announcedInterfacesToExclude in ConfigMap metallb-system/metallb-excludel2 (the speakers read it at start: restart them)';

  await t.test('explain: the first warning is the interfaces, with its fix; -o json carries the same finding', async () => {
    const [tx, js] = await Promise.all([
      runCliAsync(['explain', 'ingress-nginx/ingress-nginx-controller', '-f', CILIUM]),
      runCliAsync(['explain', 'ingress-nginx/ingress-nginx-controller', '-f', CILIUM, '-o', 'json']),
    ]);
    assert.equal(tx.status, 0, tx.stderr);
    const h = head(tx.stdout);
    assert.equal(h.Verdict, 'announced by k8s-w1 over layer2: 192.168.88.230');
    assert.equal(h.Warning, `l2-unintended-interfaces: ${message}`);
    assert.equal(h.Fix, fix);
    const f = (JSON.parse(js.stdout) as { findings: Finding[] }).findings;
    // kubeadm's exclusion label on the control plane is meant: information, not a warning.
    assert.deepEqual(
      f.map((x) => [x.id, x.severity]),
      [
        ['l2-unintended-interfaces', 'warning'],
        ['exclusion-label-empty-value', 'info'],
      ],
    );
    assert.deepEqual([f[0]!.message, f[0]!.fix], [message, fix]);
  });

  await t.test('whois on the address repeats the warning and its fix', async () => {
    const [tx, js] = await Promise.all([runCliAsync(['whois', '192.168.88.230', '-f', CILIUM]), runCliAsync(['whois', '192.168.88.230', '-f', CILIUM, '-o', 'json'])]);
    assert.equal(tx.status, 0, tx.stderr);
    assert.ok(tx.stdout.includes(`Warning:      ingress-nginx/ingress-nginx-controller: l2-unintended-interfaces: ${message}\nFix:          ${fix}\n`), tx.stdout);
    const holders = (JSON.parse(js.stdout) as { holders: Array<{ warnings: Array<{ id: string; message: string; fix: string }> }> }).holders;
    assert.deepEqual(
      holders.map((x) => x.warnings),
      [[{ id: 'l2-unintended-interfaces', message, fix }]],
    );
  });

  await t.test('a Service whose L2Advertisement lists wg0 on purpose: no warning, though another advertisement is open', async () => {
    const js = await runCliAsync(['explain', 'vpn/wg-gateway', '-f', CILIUM, '-o', 'json']);
    assert.equal(js.status, 0, js.stderr);
    const f = (JSON.parse(js.stdout) as { findings: Finding[] }).findings;
    assert.ok(!f.some((x) => x.id === 'l2-unintended-interfaces'), JSON.stringify(f));
  });

  await t.test('validate: one warning on l2adv naming the cilium interfaces, not wg0', async () => {
    const r = await runCliAsync(['validate', '-f', CILIUM, '-o', 'json']);
    const hs = (JSON.parse(r.stdout) as { warnings: Array<{ id: string; object: string; message: string }> }).warnings;
    const mine = hs.filter((x) => x.id === 'l2-unintended-interfaces');
    assert.deepEqual(
      mine.map((x) => x.object),
      ['metallb-system/L2Advertisement/l2adv'],
      r.stdout,
    );
    assert.match(mine[0]!.message, /^the speakers answer ARP\/NDP on cilium_host \(overlay\/CNI; k8s-w1\), cilium_net \(overlay\/CNI; k8s-w1\), cilium_vxlan \(overlay\/CNI; k8s-w1\) \(ServiceL2Status\)/);
  });
});
