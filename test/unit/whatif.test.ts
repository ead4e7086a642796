/**
 * `whatif` (issue #12 item 9): what changes for every LoadBalancer Service when nodes go down,
 * labels change, the speakers' --ignore-exclude-lb flips or manifests are applied — on the example
 * cluster (its expected election is tabled in examples/README.md) and small BGP and Layer 2
 * snapshots; the core and the command (spawned), exit codes included.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, runCliAsync } from '../helpers/cli.ts';
import { loadSnapshot } from '../../src/kube/snapshot.ts';
import { clusterStateFromObjects, type ClusterState, type KubeObject } from '../../src/core/kube.ts';
import { UserError } from '../../src/core/errors.ts';
import { whatIfText } from '../../src/render/whatif.ts';
import { palette } from '../../src/render/color.ts';
import { classify, parseLabelEdits, verdictText, whatIf, CHANGE_ORDER, type ServiceState, type WhatIfReport } from '../../src/core/explain/whatif.ts';

const EXAMPLE = join(ROOT, 'examples/cluster.yaml');
const CP_ONLY = join(ROOT, 'examples/cluster-cp-only.yaml');
const NS = 'metallb-system';
const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-whatif-'));
const write = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

const example = await loadSnapshot([EXAMPLE]);
const cpOnly = await loadSnapshot([CP_ONLY]);

/** `namespace/name` → the after announcer, for the Services whose change is `kind`. */
function byChange(r: WhatIfReport, kind: string): Record<string, string | null> {
  return Object.fromEntries(r.services.filter((s) => s.change === kind).map((s) => [s.service, s.after?.announcer ?? null]));
}

// The ten healthy Services of examples/cluster.yaml and their announcer (examples/README.md).
const ON_B = ['monitoring/alertmanager', 'monitoring/grafana', 'platform/wiki', 'shop/api-gateway', 'shop/frontend', 'storage/minio'];
const ON_A = ['monitoring/prometheus', 'platform/git', 'platform/registry', 'shop/checkout'];

test('node down: its Services move to the other worker, nothing else changes (exit 0 case)', () => {
  const r = whatIf(example, { nodesDown: ['lab-worker-b'] });
  assert.equal(r.verdict, '6 Services change announcer, 8 unchanged');
  assert.equal(r.breaks, false);
  assert.deepEqual(byChange(r, 'changesAnnouncer'), Object.fromEntries(ON_B.map((s) => [s, 'lab-worker-a'])));
  for (const s of r.services) {
    assert.deepEqual(s.after?.ips, s.before?.ips, `${s.service}: addresses do not depend on nodes`);
    if (ON_B.includes(s.service)) assert.equal(s.before?.announcer, 'lab-worker-b');
  }
  assert.equal(r.speakers.source, 'speaker-pods');
  assert.equal(r.speakers.before?.length, 8);
  assert.deepEqual(
    r.speakers.after,
    r.speakers.before!.filter((n) => n !== 'lab-worker-b'),
  );
});

test('both workers down: their endpoints turn not ready, every announced Service loses its announcer', () => {
  const r = whatIf(example, { nodesDown: ['lab-worker-a', 'lab-worker-b'] });
  assert.equal(r.verdict, '10 Services lose their announcer, 4 unchanged');
  assert.equal(r.breaks, true);
  const lost = r.services.filter((s) => s.change === 'losesAnnouncer');
  assert.deepEqual(lost.map((s) => s.service).sort(), [...ON_A, ...ON_B].sort());
  for (const s of lost) {
    assert.deepEqual(s.after!.ips, s.before!.ips);
    assert.match(s.after!.why!, /no ready or serving endpoint/);
  }
});

test('memberlist disabled: a dead announcer is never replaced', () => {
  const r = whatIf(example, { nodesDown: ['lab-worker-b'] }, { memberlist: { speakers: null } });
  assert.equal(r.speakers.source, 'memberlist-disabled');
  assert.equal(r.speakers.after, null);
  assert.equal(r.verdict, '6 Services lose their announcer, 8 unchanged');
  for (const s of r.services.filter((x) => x.change === 'losesAnnouncer')) {
    assert.ok(ON_B.includes(s.service), s.service);
    assert.match(s.after!.why!, /lab-worker-b is down but still first in the hash order: memberlist is disabled/);
  }
});

test('labels: removing the selected label loses every announcer, adding it to a GPU node moves two', () => {
  const removed = whatIf(example, { labels: parseLabelEdits(['lab-worker-a', 'node-role/worker-', 'lab-worker-b', 'node-role/worker-']) });
  assert.equal(removed.verdict, '10 Services lose their announcer, 4 unchanged');
  for (const s of removed.services.filter((x) => x.change === 'losesAnnouncer')) {
    assert.match(s.after!.why!, /lab-l2\) select no node by their nodeSelectors/);
  }
  const added = whatIf(example, { labels: [{ node: 'lab-gpu-a', key: 'node-role/worker', value: 'true' }] });
  assert.equal(added.breaks, false);
  assert.deepEqual(byChange(added, 'changesAnnouncer'), { 'monitoring/prometheus': 'lab-gpu-a', 'shop/checkout': 'lab-gpu-a' });
  // Combined: one worker down, the other unlabelled; WHY names what dropped each former candidate.
  const both = whatIf(example, { nodesDown: ['lab-worker-a'], labels: [{ node: 'lab-worker-b', key: 'node-role/worker', value: null }] });
  assert.equal(both.verdict, '10 Services lose their announcer, 4 unchanged');
  assert.equal(both.services[0]!.after!.why, 'no candidate left: lab-worker-a: no live speaker on the node (not a memberlist member); lab-worker-b: no L2Advertisement applying to the service selects it');
  // The exclusion label on a worker takes it out of the election.
  const excluded = whatIf(example, { labels: [{ node: 'lab-worker-a', key: 'node.kubernetes.io/exclude-from-external-load-balancers', value: '' }] });
  assert.deepEqual(byChange(excluded, 'changesAnnouncer'), Object.fromEntries(ON_A.map((s) => [s, 'lab-worker-b'])));
});

test('a new worker Node applied: its speaker joins and wins some elections', () => {
  const worker: KubeObject = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'lab-worker-c', labels: { 'kubernetes.io/hostname': 'lab-worker-c', 'node-role/worker': 'true' } } };
  const r = whatIf(example, { apply: [worker] });
  assert.equal(r.reallocated, false);
  assert.ok(r.speakers.after!.includes('lab-worker-c'));
  const moved = r.services.filter((s) => s.change === 'changesAnnouncer');
  assert.ok(moved.length > 0 && moved.every((s) => s.after!.announcer === 'lab-worker-c'), JSON.stringify(moved.map((s) => s.after)));
  assert.equal(r.counts.unchanged, 14 - moved.length);
});

test('--ignore-exclude-lb on the exclusion trap: the control-plane nodes announce (examples/README.md)', () => {
  const r = whatIf(cpOnly, { ignoreExcludeLB: true });
  assert.equal(r.verdict, '10 Services get an announcer, 4 unchanged');
  assert.deepEqual(byChange(r, 'getsAnnouncer'), {
    'shop/frontend': 'lab-cp-3',
    'shop/checkout': 'lab-cp-3',
    'monitoring/prometheus': 'lab-cp-3',
    'platform/wiki': 'lab-cp-3',
    'shop/api-gateway': 'lab-cp-2',
    'monitoring/grafana': 'lab-cp-2',
    'monitoring/alertmanager': 'lab-cp-2',
    'platform/git': 'lab-cp-2',
    'platform/registry': 'lab-cp-1',
    'storage/minio': 'lab-cp-1',
  });
  // And back: speakers running with the flag now, without it after.
  const back = whatIf(cpOnly, { ignoreExcludeLB: false }, { ignoreExcludeLB: true });
  assert.equal(back.verdict, '10 Services lose their announcer, 4 unchanged');
  assert.deepEqual(back.change.ignoreExcludeLB, { before: true, after: false });
});

const lab = (kind: string, name: string, spec: Record<string, unknown>, namespace = NS): KubeObject => ({ apiVersion: 'metallb.io/v1beta1', kind, metadata: { name, namespace }, spec });

test('applied pool shrunk: the controller reprocesses; Services outside the pool lose their address', () => {
  const r = whatIf(example, { apply: [lab('IPAddressPool', 'lab-pool', { addresses: ['192.0.2.10-192.0.2.15'] })] });
  assert.equal(r.reallocated, true);
  assert.deepEqual(r.change.applied, [`${NS}/IPAddressPool/lab-pool`]);
  assert.equal(r.verdict, '8 Services lose their address, 6 unchanged');
  const lost = r.services.filter((s) => s.change === 'losesAddress');
  assert.deepEqual(
    lost.map((s) => s.service),
    ['ingest/admin-console', 'ingest/ingest-tcp', 'ingest/ingest-udp', 'ingest/metrics-relay', 'platform/git', 'platform/registry', 'platform/wiki', 'storage/minio'],
  );
  for (const s of lost) assert.equal(s.after!.why, 'no available IPs');
  assert.deepEqual(r.services.find((s) => s.service === 'platform/git')!.changes, ['losesAddress', 'losesAnnouncer']);
  // Restart-order uncertainty does not apply to a running controller's reprocess.
  assert.deepEqual(r.notes, []);
});

test('applied pool moved: every Service changes address, the announcers follow the new hash', () => {
  const r = whatIf(example, { apply: [lab('IPAddressPool', 'lab-pool', { addresses: ['198.51.100.0/26'] })] });
  assert.equal(r.counts.losesAddress, 0);
  assert.equal(r.counts.changesAddress, 14);
  for (const s of r.services) assert.match(s.after!.ips[0]!, /^198\.51\.100\./);
  // The four sharing Services keep sharing one address.
  const shared = new Set(r.services.filter((s) => s.namespace === 'ingest').map((s) => s.after!.ips[0]));
  assert.equal(shared.size, 1);
});

test('a new Service without cluster IPs gets the next free address; a deleted one is just gone', () => {
  const svc: KubeObject = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'new-web', namespace: 'shop' }, spec: { type: 'LoadBalancer', selector: { app: 'x' }, ports: [{ port: 80 }] } } as KubeObject;
  const r = whatIf(example, { apply: [svc] });
  const added = r.services.find((s) => s.service === 'shop/new-web')!;
  assert.equal(added.change, 'added');
  assert.deepEqual(added.after!.ips, ['192.0.2.20']);
  assert.equal(added.after!.pool, 'lab-pool');
  assert.equal(r.breaks, false);
  assert.ok(
    r.notes.some((n) => /^shop\/new-web: a new Service without cluster IPs: given SingleStack IPv4 as the API server would/.test(n)),
    r.notes.join('\n'),
  );
  const del = whatIf(example, { remove: [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'frontend', namespace: 'shop' } } as KubeObject] });
  assert.equal(del.verdict, '1 Service is deleted, 13 unchanged');
  assert.equal(del.breaks, false);
});

test('a Service edited to type ClusterIP loses its address; its status in the manifest is ignored', () => {
  const frontend = example.services.find((s) => s.metadata?.name === 'frontend')!;
  const edited = { ...frontend, spec: { ...frontend.spec, type: 'ClusterIP' }, status: { loadBalancer: { ingress: [{ ip: '203.0.113.9' }] } } };
  const r = whatIf(example, { apply: [edited as KubeObject] });
  const s = r.services.find((x) => x.service === 'shop/frontend')!;
  assert.deepEqual(s.changes, ['losesAddress', 'losesAnnouncer']);
  assert.equal(r.breaks, true);
  // Requesting another address of the pool: the controller moves it there.
  const moved = { ...frontend, metadata: { ...frontend.metadata, annotations: { 'metallb.io/loadBalancerIPs': '192.0.2.50' } } };
  const m = whatIf(example, { apply: [moved as KubeObject] }).services.find((x) => x.service === 'shop/frontend')!;
  assert.equal(m.change, 'changesAddress');
  assert.deepEqual(m.after!.ips, ['192.0.2.50']);
});

// A small BGP cluster: three nodes, router r1 everywhere, r2 on rack b only.
const node = (name: string, labels: Record<string, string> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } } });
function svc(name: string, ip: string, policy: 'Cluster' | 'Local'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default' },
    spec: { type: 'LoadBalancer', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], externalTrafficPolicy: policy, ports: [{ port: 80, protocol: 'TCP' }] },
    status: { loadBalancer: { ingress: [{ ip }] } },
  } as KubeObject;
}
const slice = (service: string, nodes: string[]): KubeObject =>
  ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${service}-x`, namespace: 'default', labels: { 'kubernetes.io/service-name': service } },
    endpoints: nodes.map((n, i) => ({ addresses: [`10.244.${i}.1`], nodeName: n, conditions: { ready: true } })),
  }) as KubeObject;
const BGP: ClusterState = clusterStateFromObjects([
  node('n1', { rack: 'a' }),
  node('n2', { rack: 'b' }),
  node('n3', { rack: 'a' }),
  lab('IPAddressPool', 'bgp-pool', { addresses: ['203.0.113.0/28'] }),
  lab('BGPAdvertisement', 'ad', {}),
  { apiVersion: 'metallb.io/v1beta2', kind: 'BGPPeer', metadata: { name: 'r1', namespace: NS }, spec: { myASN: 64500, peerASN: 64501, peerAddress: '10.0.0.1' } } as KubeObject,
  {
    apiVersion: 'metallb.io/v1beta2',
    kind: 'BGPPeer',
    metadata: { name: 'r2', namespace: NS },
    spec: { myASN: 64500, peerASN: 64501, peerAddress: '10.0.0.2', nodeSelectors: [{ matchLabels: { rack: 'b' } }] },
  } as KubeObject,
  svc('web', '203.0.113.1', 'Local'),
  slice('web', ['n1', 'n2']),
  svc('api', '203.0.113.2', 'Cluster'),
  slice('api', ['n1']),
]);

test('BGP: nodes and peers before and after a node down and a label', () => {
  const r = whatIf(BGP, { nodesDown: ['n1'] });
  const web = r.services.find((s) => s.name === 'web')!;
  assert.deepEqual(web.before!.bgp, [
    { node: 'n1', peers: ['r1'] },
    { node: 'n2', peers: ['r1', 'r2'] },
  ]);
  assert.deepEqual(web.after!.bgp, [{ node: 'n2', peers: ['r1', 'r2'] }]);
  assert.equal(web.change, 'changesAnnouncer');
  // api's only endpoint is on n1: with it not ready, no node advertises api at all.
  const api = r.services.find((s) => s.name === 'api')!;
  assert.equal(api.before!.bgp.length, 3);
  assert.deepEqual(api.after!.bgp, []);
  assert.equal(api.change, 'losesAnnouncer');
  assert.equal(r.speakers.source, 'all-nodes');
  assert.deepEqual(r.speakers.after, ['n2', 'n3']);
  assert.equal(r.breaks, true);

  const labelled = whatIf(BGP, { labels: [{ node: 'n3', key: 'rack', value: 'b' }] });
  const api2 = labelled.services.find((s) => s.name === 'api')!;
  assert.equal(api2.change, 'changesAnnouncer');
  assert.deepEqual(api2.after!.bgp.find((n) => n.node === 'n3')!.peers, ['r1', 'r2']);
  assert.equal(labelled.services.find((s) => s.name === 'web')!.change, 'unchanged');
  // Only the peers change: the table names them even without -o wide.
  const text = whatIfText(labelled, false, palette(false));
  assert.match(text, /^1 Service changes announcer, 1 unchanged\nIf: kubectl label node n3 rack=b\n/);
  assert.match(text, /default\/api\s+changes announcer\s+203\.0\.113\.2\s+BGP: n1 \(r1\), n2 \(r1, r2\), n3 \(r1\) → BGP: n1 \(r1\), n2 \(r1, r2\), n3 \(r1, r2\)\n/);
  assert.match(whatIfText(r, false, palette(false)), /default\/api\s+loses announcer\s+203\.0\.113\.2\s+BGP: n1, n2, n3 → <none>\s+/);
});

test('bad input: unknown nodes, missing labels and objects, nothing to change, a configuration the controller rejects', () => {
  const cases: Array<{ name: string; run: () => unknown; re: RegExp }> = [
    { name: 'unknown node down', run: () => whatIf(example, { nodesDown: ['lab-worker-z'] }), re: /^--node-down lab-worker-z: no Node lab-worker-z in the cluster state \(nodes: lab-cp-1, / },
    { name: 'unknown node labelled', run: () => whatIf(example, { labels: [{ node: 'x', key: 'a', value: 'b' }] }), re: /^--label x: no Node x/ },
    { name: 'label not there', run: () => whatIf(example, { labels: [{ node: 'lab-gpu-a', key: 'zone', value: null }] }), re: /node lab-gpu-a has no label zone/ },
    { name: 'deleted object not there', run: () => whatIf(example, { remove: [lab('IPAddressPool', 'nope', {})] }), re: /^--delete: metallb-system\/IPAddressPool\/nope is not in the cluster state/ },
    { name: 'nothing', run: () => whatIf(example, {}), re: /^nothing to change/ },
    {
      name: 'a new Service the API server refuses',
      run: () =>
        whatIf(example, { apply: [{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'dual', namespace: 'shop' }, spec: { type: 'LoadBalancer', ipFamilyPolicy: 'RequireDualStack' } } as KubeObject] }),
      re: /^--apply: shop\/Service\/dual: the API server would refuse to create it: ipFamilyPolicy RequireDualStack on a cluster that is single-stack/,
    },
    { name: 'flag as it is', run: () => whatIf(example, { ignoreExcludeLB: false }), re: /^nothing to change/ },
    {
      name: 'rejected after',
      run: () => whatIf(example, { apply: [lab('IPAddressPool', 'lab-pool', { addresses: ['192.0.2.300/24'] })] }),
      re: /^with the change, MetalLB's controller rejects the configuration: .*lab-pool/,
    },
  ];
  for (const c of cases) {
    assert.throws(c.run, (err: unknown) => err instanceof UserError && err.exitCode === 2 && c.re.test(err.message), c.name);
  }
});

test('parseLabelEdits: kubectl label syntax, several nodes and edits per --label', () => {
  assert.deepEqual(parseLabelEdits(['n1', 'a=b', 'example.com/c-', 'n2', 'd=']), [
    { node: 'n1', key: 'a', value: 'b' },
    { node: 'n1', key: 'example.com/c', value: null },
    { node: 'n2', key: 'd', value: '' },
  ]);
  const bad: Array<[string[], RegExp]> = [
    [['a=b'], /^--label a=b: name the node first/],
    [['n1'], /^--label n1: no label given/],
    [['n1', 'a=b', 'n2'], /^--label n2: no label given/],
    [['n1', '=b'], /invalid label key/],
    [['n1', 'Bad_Prefix/x=1'], /prefix "Bad_Prefix" is not a DNS subdomain/],
    [['n1', 'a=b c'], /invalid label value "b c"/],
  ];
  for (const [words, re] of bad)
    assert.throws(
      () => parseLabelEdits(words),
      (e: unknown) => e instanceof UserError && re.test(e.message),
      words.join(' '),
    );
});

test('classify and the verdict: most severe first, singular and plural', () => {
  const st = (ips: string[], announcer: string | null, pool = 'p'): ServiceState => ({ ips, pool, allocation: 'assigned', mode: 'layer2', announcer, bgp: [], why: null });
  assert.deepEqual(classify(st(['1.1.1.1'], 'a'), st([], null)), ['losesAddress', 'losesAnnouncer']);
  assert.deepEqual(classify(st(['1.1.1.1'], 'a'), st(['1.1.1.2'], 'b', 'q')), ['changesAddress', 'changesAnnouncer', 'changesPool']);
  assert.deepEqual(classify(st(['1.1.1.1'], null), st(['1.1.1.1'], 'b')), ['getsAnnouncer']);
  assert.deepEqual(classify(st(['1.1.1.1'], 'a'), st(['1.1.1.1'], 'a')), ['unchanged']);
  assert.deepEqual(classify(null, st([], null)), ['added']);
  const counts = Object.fromEntries(CHANGE_ORDER.map((k) => [k, 0])) as Record<(typeof CHANGE_ORDER)[number], number>;
  assert.equal(verdictText({ ...counts, losesAddress: 3, changesAnnouncer: 5, unchanged: 40 }), '3 Services lose their address, 5 change announcer, 40 unchanged');
  assert.equal(verdictText({ ...counts, losesAnnouncer: 1, unchanged: 1 }), '1 Service loses its announcer, 1 unchanged');
  assert.equal(verdictText(counts), 'no LoadBalancer Service handled by MetalLB');
});

test('command: the verdict first, a table of changed Services only, exit codes 0/1/2/3', { concurrency: 4 }, async (t) => {
  // Subtests run side by side (up to 4): each spawns the CLI.
  const runs: Promise<void>[] = [];
  runs.push(
    t.test('node down: exit 0, verdict and If: line, 6 rows', async () => {
      const r = await runCliAsync(['whatif', '--node-down', 'lab-worker-b', '-f', EXAMPLE]);
      assert.equal(r.status, 0, r.stderr);
      const lines = r.stdout.split('\n');
      assert.equal(lines[0], '6 Services change announcer, 8 unchanged');
      assert.equal(lines[1], 'If: lab-worker-b goes down (7 speakers left alive)');
      assert.match(lines[3]!, /^SERVICE\s+CHANGE\s+EXTERNAL-IP\s+ANNOUNCER\s+WHY$/);
      const rows = lines.slice(4).filter((l) => l !== '');
      assert.equal(rows.length, 6);
      assert.match(rows.find((l) => l.startsWith('shop/frontend'))!, /changes announcer\s+192\.0\.2\.10\s+lab-worker-b → lab-worker-a/);
      assert.equal(r.stderr, '');
    }),
  );
  runs.push(
    t.test('labels removed: exit 1 (the CI case)', async () => {
      const r = await runCliAsync(['whatif', '--label', 'lab-worker-a', 'node-role/worker-', '--label', 'lab-worker-b', 'node-role/worker-', '-f', EXAMPLE]);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stdout, /^10 Services lose their announcer, 4 unchanged\n/);
    }),
  );
  runs.push(
    t.test('--apply a directory, -o json: every Service before and after', async () => {
      const d = mkdtempSync(join(dir, 'apply-'));
      writeFileSync(join(d, 'pool.yaml'), 'apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata:\n  name: lab-pool\n  namespace: metallb-system\nspec:\n  addresses: [192.0.2.10-192.0.2.15]\n');
      const r = await runCliAsync(['whatif', '--apply', d, '-f', EXAMPLE, '-o', 'json']);
      assert.equal(r.status, 1, r.stderr);
      const j = JSON.parse(r.stdout) as WhatIfReport;
      assert.equal(j.verdict, '8 Services lose their address, 6 unchanged');
      assert.equal(j.services.length, 14);
      const kept = j.services.find((s) => s.service === 'shop/frontend')!;
      assert.deepEqual([kept.change, kept.before!.ips, kept.after!.ips, kept.after!.announcer], ['unchanged', ['192.0.2.10'], ['192.0.2.10'], 'lab-worker-b']);
    }),
  );
  runs.push(
    t.test('--ignore-exclude-lb on the trap: exit 0, yaml output', async () => {
      const r = await runCliAsync(['whatif', '--ignore-exclude-lb', '-f', CP_ONLY, '-o', 'yaml']);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^verdict: 10 Services get an announcer, 4 unchanged\n/);
    }),
  );
  const bad: Array<{ name: string; args: string[]; re: RegExp; status?: number }> = [
    { name: 'unknown node', args: ['--node-down', 'nope', '-f', EXAMPLE], re: /--node-down nope: no Node nope in the cluster state/ },
    { name: 'nothing to change', args: ['-f', EXAMPLE], re: /nothing to change/ },
    { name: 'broken --apply file', args: ['--apply', write('broken.yaml', 'kind: IPAddressPool\nmetadata: {name: [\n'), '-f', EXAMPLE], re: /broken\.yaml:\d+: / },
    { name: 'missing --apply file', args: ['--apply', join(dir, 'missing.yaml'), '-f', EXAMPLE], re: /missing\.yaml/ },
    { name: '--apply without objects', args: ['--apply', write('empty.yaml', '# nothing\n'), '-f', EXAMPLE], re: /--apply .*empty\.yaml: no Kubernetes object found/ },
    { name: 'bad label', args: ['--label', 'lab-gpu-a', 'a=b c', '-f', EXAMPLE], re: /--label lab-gpu-a a=b c: invalid label value/ },
    {
      name: 'rejected configuration',
      args: ['--apply', write('bad-pool.yaml', 'apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata: {name: lab-pool, namespace: metallb-system}\nspec: {addresses: [nonsense]}\n'), '-f', EXAMPLE],
      re: /with the change, MetalLB's controller rejects the configuration/,
    },
    {
      name: 'unreachable cluster',
      args: [
        '--node-down',
        'a',
        '--kubeconfig',
        write(
          'kubeconfig',
          'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n',
        ),
        '--no-speaker-discovery',
      ],
      re: /127\.0\.0\.1:1/,
      status: 3,
    },
  ];
  for (const c of bad) {
    runs.push(
      t.test(c.name, async () => {
        const r = await runCliAsync(['whatif', ...c.args]);
        assert.equal(r.status, c.status ?? 2, `${r.stdout}\n${r.stderr}`);
        assert.equal(r.stdout, '');
        const lines = r.stderr.split('\n').filter((l) => l !== '');
        assert.equal(lines.length, 1, r.stderr);
        assert.match(lines[0]!, /^metallb-ts: /);
        assert.match(lines[0]!, c.re);
      }),
    );
  }
  await Promise.all(runs);
});

const INGRESS = join(ROOT, 'test/unit/fixtures/whatif/ingress-local.yaml');

test('ingress-nginx with externalTrafficPolicy Local: its node reboots (exit 1); with a second replica it fails over (exit 0)', async () => {
  const alone = await runCliAsync(['whatif', '--node-down', 'worker-2', '-f', INGRESS]);
  assert.equal(alone.status, 1, alone.stderr);
  assert.match(alone.stdout, /^1 Service loses its announcer, 1 unchanged\nIf: worker-2 goes down \(2 speakers left alive\)\n/);
  assert.match(alone.stdout, /ingress-nginx\/ingress-nginx-controller\s+loses announcer\s+192\.168\.1\.240\s+worker-2 → <none>\s+the Service has no ready or serving endpoint/);
  assert.doesNotMatch(alone.stdout, /home-assistant/, 'unchanged Services are only counted');

  // Combined with a manifest: the EndpointSlice once a second replica runs on worker-1.
  const slice = write(
    'two-replicas.yaml',
    [
      'apiVersion: discovery.k8s.io/v1',
      'kind: EndpointSlice',
      'addressType: IPv4',
      'metadata: {name: ingress-nginx-controller-x7k2p, namespace: ingress-nginx, labels: {kubernetes.io/service-name: ingress-nginx-controller}}',
      'endpoints:',
      '- {addresses: [10.42.2.15], nodeName: worker-2, conditions: {ready: true}}',
      '- {addresses: [10.42.1.30], nodeName: worker-1, conditions: {ready: true}}',
      '',
    ].join('\n'),
  );
  const two = await runCliAsync(['whatif', '--apply', slice, '--node-down', 'worker-2', '-f', INGRESS, '-o', 'json']);
  assert.equal(two.status, 0, two.stderr);
  const j = JSON.parse(two.stdout) as WhatIfReport;
  assert.equal(j.reallocated, false, "an EndpointSlice is not the controller's business");
  const ingress = j.services.find((s) => s.name === 'ingress-nginx-controller')!;
  assert.deepEqual([ingress.change, ingress.before!.announcer, ingress.after!.announcer], ['changesAnnouncer', 'worker-2', 'worker-1']);
  assert.deepEqual(ingress.after!.ips, ['192.168.1.240']);
  // Both workers down: every endpoint is on them, so nobody announces either Service.
  const state = await loadSnapshot([INGRESS]);
  const both = whatIf(state, { nodesDown: ['worker-1', 'worker-2'] });
  assert.equal(both.verdict, '2 Services lose their announcer');
  for (const s of both.services) assert.match(s.after!.why!, /no ready or serving endpoint/);
  // worker-1 down: home-assistant (Cluster) moves to worker-2, the only candidate left; with
  // --ignore-exclude-lb the control-plane node is a candidate too, and first in the hash order.
  const plain = whatIf(state, { nodesDown: ['worker-1'] });
  assert.equal(plain.services.find((s) => s.name === 'home-assistant')!.after!.announcer, 'worker-2');
  const freed = whatIf(state, { nodesDown: ['worker-1'], ignoreExcludeLB: true });
  assert.equal(freed.services.find((s) => s.name === 'home-assistant')!.after!.announcer, 'cp-1');
});
