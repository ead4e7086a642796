/**
 * The speaker's BGP side (frr-k8s mode) and its own configuration path, without an API server:
 * speakerConfig (namespace, node filtering before parsing, rejections), the Speaker with an
 * in-memory FRRConfiguration and ServiceBGPStatus store that feeds its writes back as the watch
 * would (create, update, revert, delete, keep the last accepted configuration), the Go duration
 * printer, the BGP type check and `speaker --dry-run` through the CLI.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { clusterStateFromObjects, namespacedName, type ClusterState, type KubeObject, type ServiceBGPStatus } from '../../src/core/kube.ts';
import { speakerConfig } from '../../src/core/speaker/config.ts';
import { formatDurationNs, parseDurationNs } from '../../src/core/config/duration.ts';
import { specsEqual, withCRDDefaults } from '../../src/core/frrk8s/config.ts';
import type { FRRConfiguration } from '../../src/core/frrk8s/types.ts';
import type { BGPStatusBody } from '../../src/core/bgp/status.ts';
import { Speaker } from '../../src/speaker/speaker.ts';
import { FakeSource } from '../helpers/fake-source.ts';
import type { FRRConfigurationApi } from '../../src/speaker/frrk8s.ts';
import type { StatusApi } from '../../src/speaker/status-writer.ts';
import { speakerDryRun } from '../../src/speaker/dry-run.ts';
import { bgpDebounceMs, checkBGPType } from '../../src/commands/speaker.ts';
import { jsonLogger } from '../../src/runtime/log.ts';
import { speakerMetrics } from '../../src/speaker/metrics.ts';
import { runCliAsync } from '../helpers/cli.ts';
import { referencePath } from '../helpers/reference.ts';

const NS = 'mlb-custom'; // not metallb-system: the speaker must read its own namespace

function node(name: string, labels: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } }, status: { conditions: [{ type: 'Ready', status: 'True' }] } };
}
function service(name: string, ips: string[]): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { type: 'LoadBalancer', externalTrafficPolicy: 'Cluster' },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } },
  };
}
function slice(svc: string, nodes: string[]): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${svc}-x`, namespace: 'default', labels: { 'kubernetes.io/service-name': svc } },
    addressType: 'IPv4',
    endpoints: nodes.map((n, i) => ({ addresses: [`10.244.0.${i + 1}`], nodeName: n, conditions: { ready: true } })),
  };
}
const pool = (ns = NS): KubeObject => ({ apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'pool', namespace: ns }, spec: { addresses: ['192.0.2.0/24'], autoAssign: true } });
function peer(name: string, spec: Record<string, unknown>, ns = NS): KubeObject {
  return { apiVersion: 'metallb.io/v1beta2', kind: 'BGPPeer', metadata: { name, namespace: ns }, spec: { myASN: 64500, peerASN: 64501, peerPort: 179, ...spec } };
}
function bgpAd(name: string, spec: Record<string, unknown> = {}, ns = NS): KubeObject {
  return { apiVersion: 'metallb.io/v1beta1', kind: 'BGPAdvertisement', metadata: { name, namespace: ns }, spec: { aggregationLength: 32, aggregationLengthV6: 128, ...spec } };
}

function base(): KubeObject[] {
  return [node('n1', { rack: 'a' }), node('n2', { rack: 'b' }), pool(), peer('router-a', { peerAddress: '10.0.0.1' }), bgpAd('adv'), service('web', ['192.0.2.10']), slice('web', ['n1', 'n2'])];
}

// ---- speakerConfig ----

test('speakerConfig: reads the CRs of its own namespace only', () => {
  const state = clusterStateFromObjects([...base(), pool('metallb-system'), peer('elsewhere', { peerAddress: '10.9.9.9' }, 'metallb-system')]);
  const c = speakerConfig(state, { node: 'n1', namespace: NS });
  assert.ok(c.ok);
  assert.deepEqual([...c.config.pools.keys()], ['pool']);
  assert.deepEqual([...c.config.peers.keys()], ['router-a']);
  const other = speakerConfig(state, { node: 'n1', namespace: 'metallb-system' });
  assert.ok(other.ok);
  assert.deepEqual([...other.config.peers.keys()], ['elsewhere']);
});

test('speakerConfig: BGPPeers and BGPAdvertisements of other nodes are dropped before parsing', () => {
  // A peer for rack b only, with an invalid address: only n2's speaker validates it.
  const bad = peer('rack-b', { peerAddress: 'not-an-ip', nodeSelectors: [{ matchLabels: { rack: 'b' } }] });
  const state = clusterStateFromObjects([...base(), bad]);
  const n1 = speakerConfig(state, { node: 'n1', namespace: NS });
  assert.ok(n1.ok);
  assert.deepEqual(n1.droppedPeers, ['rack-b']);
  const n2 = speakerConfig(state, { node: 'n2', namespace: NS });
  assert.equal(n2.ok, false);
  assert.ok(!n2.ok && n2.stage === 'parse' && /not-an-ip/.test(n2.error.message), !n2.ok ? n2.error.message : '');
});

test('speakerConfig: no Node object, an invalid nodeSelector, bgpextras in frr-k8s mode', () => {
  const state = clusterStateFromObjects(base());
  const missing = speakerConfig(state, { node: 'n9', namespace: NS });
  assert.ok(!missing.ok && missing.stage === 'node');
  const badSel = clusterStateFromObjects([...base(), bgpAd('sel', { nodeSelectors: [{ matchExpressions: [{ key: 'rack', operator: 'Bogus' }] }] })]);
  const sel = speakerConfig(badSel, { node: 'n1', namespace: NS });
  assert.ok(!sel.ok && sel.stage === 'nodeFilter' && /BGPAdvertisement\/sel/.test(sel.error.message), !sel.ok ? sel.error.message : '');
  const extras = clusterStateFromObjects([...base(), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bgpextras', namespace: NS }, data: { extras: 'router bgp 64500\n' } }]);
  const ex = speakerConfig(extras, { node: 'n1', namespace: NS });
  assert.ok(!ex.ok && ex.stage === 'bgpExtras' && /extra info not supported in frr-k8s mode/.test(ex.error.message));
  const emptyExtras = clusterStateFromObjects([...base(), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bgpextras', namespace: NS }, data: {} }]);
  assert.ok(speakerConfig(emptyExtras, { node: 'n1', namespace: NS }).ok);
});

test('the three differential speaker clusters: which speakers reject the configuration', () => {
  const load = (f: string): ClusterState => clusterStateFromObjects(parse(readFileSync(referencePath('differential', f), 'utf8')).cases[0].resources);
  const gap = load('speaker-gap-config-rejected-on-some-speakers.yaml');
  assert.equal(speakerConfig(gap, { node: 'node-a' }).ok, false, 'node-a: its advertisements conflict');
  assert.equal(speakerConfig(gap, { node: 'node-b' }).ok, true);
  const unselected = load('speaker-cause-a-unselected-bgp-ad-invalid-for-pool.yaml');
  for (const n of ['node-a', 'node-b']) assert.equal(speakerConfig(unselected, { node: n }).ok, true, n);
  const dup = load('speaker-fixture-duplicate-node-selectors.yaml');
  for (const n of dup.nodes.map((x) => x.metadata!.name!)) assert.equal(speakerConfig(dup, { node: n }).ok, false, n);
});

// ---- Go durations ----

test('formatDurationNs prints as Go time.Duration.String()', () => {
  const cases: Array<[string, string]> = [
    ['0s', '0s'],
    ['90s', '1m30s'],
    ['30s', '30s'],
    ['1h', '1h0m0s'],
    ['1.5s', '1.5s'],
    ['500ms', '500ms'],
    ['1500us', '1.5ms'],
    ['999ns', '999ns'],
    ['2h3m4.005s', '2h3m4.005s'],
    ['-3s', '-3s'],
    ['20s', '20s'],
    ['3m', '3m0s'],
  ];
  for (const [input, want] of cases) assert.equal(formatDurationNs(parseDurationNs(input)), want, input);
});

test('specsEqual: a spec equals itself once the apiserver added the CRD defaults', () => {
  const spec = {
    bgp: { routers: [{ asn: 64500, neighbors: [{ address: '10.0.0.1', asn: 64501, port: 179, passwordSecret: {}, toAdvertise: { allowed: { prefixes: ['192.0.2.10/32'] } }, toReceive: { allowed: {} } }] }] },
    raw: {},
    nodeSelector: { matchLabels: { 'kubernetes.io/hostname': 'n1' } },
  };
  const stored = structuredClone(spec) as any;
  stored.bgp.routers[0].neighbors[0].toAdvertise.allowed.mode = 'filtered';
  stored.bgp.routers[0].neighbors[0].toReceive.allowed.mode = 'filtered';
  stored.bgp.routers[0].neighbors[0].disableMP = false;
  stored.bgp.routers[0].neighbors[0].dualStackAddressFamily = false;
  delete stored.raw;
  delete stored.bgp.routers[0].neighbors[0].passwordSecret;
  assert.ok(specsEqual(stored, spec));
  stored.bgp.routers[0].neighbors[0].toAdvertise.allowed.prefixes = [];
  assert.ok(!specsEqual(stored, spec));
  assert.deepEqual(withCRDDefaults({ bgp: {} }), {}, 'empty structs are absent');
});

test('checkBGPType: frr-k8s only, one line naming what is supported', () => {
  assert.equal(checkBGPType('frr-k8s'), 'frr-k8s');
  assert.throws(() => checkBGPType('native'), /"native".*not supported.*frr-k8s/);
  assert.throws(() => checkBGPType('frr'), /"frr".*not supported.*frr-k8s/);
  assert.throws(() => checkBGPType('gobgp'), /unknown BGP type "gobgp".*native, frr and frr-k8s/);
});

// ---- the Speaker against an in-memory API ----

/** FakeSource plus in-memory FRRConfiguration and ServiceBGPStatus APIs whose writes come back as watch events. */
class Cluster extends FakeSource {
  writes: string[] = [];
  private n = 0;
  frrApi(): FRRConfigurationApi {
    return {
      get: async (ns, name) => (this.st.frrConfigurations.find((f) => f.metadata?.name === name && f.metadata?.namespace === ns) as FRRConfiguration | undefined) ?? null,
      create: async (obj) => {
        this.writes.push(`create ${obj.metadata.name}`);
        const made = { ...structuredClone(obj), metadata: { ...obj.metadata, resourceVersion: String(++this.n) } };
        setImmediate(() => this.put(made));
        return made;
      },
      update: async (obj) => {
        this.writes.push(`update ${obj.metadata.name}`);
        const made = { ...structuredClone(obj), metadata: { ...obj.metadata, resourceVersion: String(++this.n) } };
        setImmediate(() => this.put(made));
        return made;
      },
      delete: async (ns, name) => {
        this.writes.push(`delete ${name}`);
        const o = this.st.frrConfigurations.find((f) => f.metadata?.name === name && f.metadata?.namespace === ns);
        if (o) setImmediate(() => this.put(o, true));
      },
    };
  }
  bgpStatusApi(): StatusApi<ServiceBGPStatus, BGPStatusBody> {
    return {
      create: async (ns, obj) => {
        const made: ServiceBGPStatus = { ...obj, metadata: { ...obj.metadata, name: `bgp-${++this.n}`, namespace: ns } };
        delete made.metadata!.generateName;
        this.writes.push(`create ServiceBGPStatus ${made.metadata!.name}`);
        this.put(made);
        return made;
      },
      patchStatus: async (ns, name, status) => {
        const o = this.st.serviceBGPStatuses.find((s) => s.metadata?.name === name && s.metadata?.namespace === ns);
        if (!o) throw Object.assign(new Error('not found'), { statusCode: 404 });
        this.writes.push(`patchStatus ${name} ${status.peers.join(',')}`);
        this.put({ ...o, status: { ...status } });
      },
      delete: async (ns, name) => {
        const o = this.st.serviceBGPStatuses.find((s) => s.metadata?.name === name && s.metadata?.namespace === ns);
        this.writes.push(`delete ServiceBGPStatus ${name}`);
        if (o) this.put(o, true);
      },
    };
  }
}

async function startSpeaker(cluster: Cluster, nodeName = 'n1', logs: Array<Record<string, unknown>> = []): Promise<Speaker> {
  const s = new Speaker({
    node: nodeName,
    namespace: NS,
    source: cluster,
    membership: { start: async () => {}, stop: async () => {}, alive: () => null, onChange: () => {} },
    l2: { announce: () => {}, withdraw: () => {} },
    log: jsonLogger({ level: 'debug', write: (l) => logs.push(JSON.parse(l)) }),
    metrics: speakerMetrics(),
    l2StatusApi: { create: async (_ns, o) => ({ ...o, metadata: { ...o.metadata, name: 'l2-1' } }), patchStatus: async () => {}, delete: async () => {} },
    bgpStatusApi: cluster.bgpStatusApi(),
    frrApi: cluster.frrApi(),
    event: () => {},
    owner: { apiVersion: 'v1', kind: 'Pod', name: `speaker-${nodeName}`, uid: 'uid-pod' },
    debounceMs: 1,
    frrDebounceMs: 30,
  });
  await s.start();
  return s;
}

async function settle(s: Speaker): Promise<void> {
  for (let i = 0; i < 8; i++) {
    await new Promise((r) => setTimeout(r, 40));
    await s.frr.flush();
    await s.bgpStatus.idle();
  }
}

function frrOf(c: Cluster, name = 'metallb-n1'): FRRConfiguration | undefined {
  return c.st.frrConfigurations.find((f) => f.metadata?.name === name) as FRRConfiguration | undefined;
}

test('speaker in a custom namespace: writes metallb-<node> and the ServiceBGPStatus, there', async () => {
  const c = new Cluster(base());
  const s = await startSpeaker(c);
  await settle(s);
  const frr = frrOf(c);
  assert.ok(frr, `no FRRConfiguration; writes: ${c.writes.join('; ')}`);
  assert.equal(frr.metadata.namespace, NS);
  assert.deepEqual(frr.spec.bgp.routers?.[0]?.neighbors?.[0]?.toAdvertise.allowed.prefixes, ['192.0.2.10/32']);
  const statuses = c.st.serviceBGPStatuses;
  assert.equal(statuses.length, 1);
  assert.equal(statuses[0]!.metadata?.namespace, NS);
  assert.deepEqual(statuses[0]!.status, { node: 'n1', serviceName: 'web', serviceNamespace: 'default', peers: ['router-a'] });
  assert.deepEqual(statuses[0]!.metadata?.ownerReferences, [{ apiVersion: 'v1', kind: 'Pod', name: 'speaker-n1', uid: 'uid-pod' }]);
  // Nothing more to write once converged: the stored spec (with our own fields) equals the desired one.
  const before = c.writes.length;
  c.put({ ...service('web', ['192.0.2.10']), metadata: { name: 'web', namespace: 'default', uid: 'uid-web', labels: { touched: 'yes' } } });
  await settle(s);
  assert.deepEqual(c.writes.slice(before), []);
  await s.stop();
});

test('a rejected configuration is logged and the previous one stays in force', async () => {
  const c = new Cluster(base());
  const logs: Array<Record<string, unknown>> = [];
  const s = await startSpeaker(c, 'n1', logs);
  await settle(s);
  const before = JSON.stringify(frrOf(c)?.spec);
  // Break it: the same BGPPeer address twice with different router IDs cannot share one FRR (DiscardNativeOnly).
  c.put(peer('router-b', { peerAddress: '10.0.0.2', routerID: '10.1.1.1' }));
  c.put(peer('router-c', { peerAddress: '10.0.0.3', routerID: '10.2.2.2' }));
  c.put(service('api', ['192.0.2.11']));
  c.put(slice('api', ['n1']));
  await settle(s);
  assert.equal(s.configuration?.ok, false, 'the new configuration must be rejected');
  assert.ok(
    logs.some((l) => l.op === 'setConfig' && /keeping the previous one/.test(String(l.msg))),
    'logged',
  );
  // The old configuration still announces the new service with the old peer only.
  const after = frrOf(c)!;
  assert.notEqual(JSON.stringify(after.spec), before);
  assert.deepEqual(
    after.spec.bgp.routers?.flatMap((r) => r.neighbors ?? []).map((n) => n.address),
    ['10.0.0.1'],
  );
  assert.deepEqual(after.spec.bgp.routers?.[0]?.prefixes, ['192.0.2.10/32', '192.0.2.11/32']);
  await s.stop();
});

test('edits by others are reverted, a deleted FRRConfiguration is recreated, labels of others are kept', async () => {
  const c = new Cluster(base());
  const s = await startSpeaker(c);
  await settle(s);
  const mine = frrOf(c)!;
  const edited = structuredClone(mine) as FRRConfiguration;
  edited.metadata.labels = { team: 'net' };
  edited.spec.bgp.routers![0]!.neighbors![0]!.toAdvertise.allowed.prefixes = ['203.0.113.0/24'];
  c.put(edited);
  await settle(s);
  const reverted = frrOf(c)!;
  assert.deepEqual(reverted.spec.bgp.routers?.[0]?.neighbors?.[0]?.toAdvertise.allowed.prefixes, ['192.0.2.10/32']);
  assert.deepEqual(reverted.metadata.labels, { team: 'net' }, 'only the spec is written');
  c.put(reverted, true);
  await settle(s);
  assert.ok(frrOf(c), 'recreated after a delete');
  await s.stop();
});

test('no session and no BFD profile: a leftover metallb-<node> is deleted; once produced it is kept with no routers', async () => {
  const leftover: KubeObject = { apiVersion: 'frrk8s.metallb.io/v1beta1', kind: 'FRRConfiguration', metadata: { name: 'metallb-n1', namespace: NS }, spec: { bgp: {} } };
  const noPeer = base().filter((o) => o.kind !== 'BGPPeer');
  const c = new Cluster([...noPeer, leftover]);
  const s = await startSpeaker(c);
  await settle(s);
  assert.equal(frrOf(c), undefined, `writes: ${c.writes.join('; ')}`);
  await s.stop();

  const c2 = new Cluster(base());
  const s2 = await startSpeaker(c2);
  await settle(s2);
  assert.ok(frrOf(c2));
  c2.put(peer('router-a', { peerAddress: '10.0.0.1' }), true);
  await settle(s2);
  const kept = frrOf(c2);
  assert.ok(kept, 'MetalLB never deletes a configuration it produced');
  assert.equal(kept.spec.bgp.routers, undefined);
  assert.equal(c2.st.serviceBGPStatuses.length, 0, 'the service reaches no peer: its status is deleted');
  await s2.stop();
});

test('a peer that stops selecting the node (label change) drops its neighbor and the status peers', async () => {
  const objects = [...base(), peer('rack-a', { peerAddress: '10.0.0.9', nodeSelectors: [{ matchLabels: { rack: 'a' } }] })];
  const c = new Cluster(objects);
  const s = await startSpeaker(c);
  await settle(s);
  assert.deepEqual(c.st.serviceBGPStatuses[0]?.status?.peers, ['rack-a', 'router-a']);
  c.put(node('n1', { rack: 'z' }));
  await settle(s);
  assert.deepEqual(
    frrOf(c)!.spec.bgp.routers?.[0]?.neighbors?.map((n) => n.address),
    ['10.0.0.1'],
  );
  assert.deepEqual(c.st.serviceBGPStatuses[0]?.status?.peers, ['router-a']);
  await s.stop();
});

test('more than 63 communities: that service is refused, the others are still advertised', async () => {
  const many = Array.from({ length: 64 }, (_, i) => `65000:${i}`);
  const objects = [
    ...base(),
    { ...pool(), metadata: { name: 'many', namespace: NS, labels: { many: 'yes' } }, spec: { addresses: ['198.51.100.0/24'] } },
    bgpAd('adv-many', { ipAddressPools: ['many'], communities: many }),
    service('big', ['198.51.100.5']),
    slice('big', ['n1']),
  ];
  // adv (no pool list) applies to every pool: keep it to the first pool only.
  objects[4] = bgpAd('adv', { ipAddressPools: ['pool'] });
  const c = new Cluster(objects);
  const logs: Array<Record<string, unknown>> = [];
  const s = await startSpeaker(c, 'n1', logs);
  await settle(s);
  assert.equal(s.controller.verdict('default/big')?.bgp, 'syncError');
  assert.equal(s.controller.verdict('default/web')?.bgp, 'announce');
  assert.deepEqual(frrOf(c)!.spec.bgp.routers?.[0]?.prefixes, ['192.0.2.10/32']);
  assert.ok(logs.some((l) => /max supported communities is 63, got 64/.test(String(l.error))));
  await s.stop();
});

// ---- dry run ----

test('speakerDryRun reports a configuration rejected on this node only, and writes nothing but records', async () => {
  const state = clusterStateFromObjects(parse(readFileSync(referencePath('differential', 'speaker-gap-config-rejected-on-some-speakers.yaml'), 'utf8')).cases[0].resources);
  const a = await speakerDryRun(state, { node: 'node-a' });
  assert.equal(a.configuration.accepted, false);
  assert.ok(a.services.every((s) => s.bgp === 'noConfig' && s.layer2 === 'noConfig'));
  const b = await speakerDryRun(state, { node: 'node-b' });
  assert.equal(b.configuration.accepted, true);
  // node-b elects node-a (which has no configuration) for the L2 service: it does not announce.
  assert.ok(
    b.services.every((s) => s.layer2 !== 'announce'),
    JSON.stringify(b.services),
  );
});

test('speaker --dry-run through the CLI: text, yaml, exit codes, bad input in one line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mlbts-dry-'));
  const file = join(dir, 'cluster.yaml');
  writeFileSync(
    file,
    base()
      .map((o) => stringify(o))
      .join('---\n'),
  );
  const text = await runCliAsync(['speaker', '--node-name', 'n1', '--namespace', NS, '--dry-run', '-f', file]);
  assert.equal(text.status, 0, text.stderr);
  assert.match(text.stdout, /^Speaker on node n1 \(dry run: nothing was written\)\nConfiguration: accepted\nFRRConfiguration mlb-custom\/metallb-n1: create\n/);
  assert.match(text.stdout, /default\/web\s+announce/);
  const yaml = await runCliAsync(['speaker', '--node-name', 'n2', '--namespace', NS, '--dry-run', '-f', file, '-o', 'yaml']);
  assert.equal(yaml.status, 0, yaml.stderr);
  const doc = parse(yaml.stdout);
  assert.equal(doc.frrConfiguration.metadata.name, 'metallb-n2');
  assert.deepEqual(
    doc.serviceBGPStatuses.map((s: ServiceBGPStatus) => s.status?.peers),
    [['router-a']],
  );
  assert.deepEqual(
    doc.events.map((e: { reason: string }) => e.reason),
    ['nodeAssigned'],
  );
  const wrongNs = await runCliAsync(['speaker', '--node-name', 'n1', '--dry-run', '-f', file, '-o', 'json']);
  assert.equal(wrongNs.status, 0);
  assert.equal(JSON.parse(wrongNs.stdout).frrConfiguration, null, 'metallb-system holds no configuration: nothing to write');
  const noNode = await runCliAsync(['speaker', '--node-name', 'n9', '--dry-run', '-f', file]);
  assert.equal(noNode.status, 2);
  assert.match(noNode.stderr, /^metallb-ts: no Node "n9" in the snapshot \(nodes: n1, n2\)\n$/);
  const native = await runCliAsync(['speaker', '--node-name', 'n1', '--bgp-type', 'native', '--dry-run', '-f', file]);
  assert.equal(native.status, 2);
  assert.match(native.stderr, /not supported: metallb-ts runs BGP through frr-k8s only/);
  const notDry = await runCliAsync(['speaker', '--node-name', 'n1', '-f', file]);
  assert.equal(notDry.status, 2);
  assert.match(notDry.stderr, /--filename is only for --dry-run/);
  const rejected = join(dir, 'rejected.yaml');
  writeFileSync(rejected, [...base(), peer('bad', { peerAddress: 'nope' })].map((o) => stringify(o)).join('---\n'));
  const rej = await runCliAsync(['speaker', '--node-name', 'n1', '--namespace', NS, '--dry-run', '-f', rejected]);
  assert.equal(rej.status, 1);
  assert.match(rej.stdout, /Configuration: REJECTED by this speaker \(parse\): .*BGPPeer\/bad/);
  assert.equal(namespacedName({ metadata: { name: 'x', namespace: 'y' } }), 'y/x');
});

test('dry run: the ConfigurationState it would report, and BGP passwords retracted in the command output', async () => {
  const secret: KubeObject = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'auth', namespace: NS }, type: 'kubernetes.io/basic-auth', data: { password: Buffer.from('s3cret').toString('base64') } };
  const objects = [...base().filter((o) => o.kind !== 'BGPPeer'), secret, peer('router-a', { peerAddress: '10.0.0.1', passwordSecret: { name: 'auth', namespace: NS } })];
  const state = clusterStateFromObjects(objects);
  // frr-k8s elsewhere: the password is converted to clear text in what the speaker writes...
  const r = await speakerDryRun(state, { node: 'n1', namespace: NS, frrk8sNamespace: 'frr-k8s-system' });
  assert.equal(r.frrConfiguration?.spec.bgp.routers?.[0]?.neighbors?.[0]?.password, 's3cret');
  assert.deepEqual(
    r.writes.filter((w) => w.kind === 'ConfigurationState').map((w) => [w.verb, w.name]),
    [
      ['create', 'speaker-n1'],
      ['patchStatus', 'speaker-n1'],
    ],
  );
  // ...and retracted in what the command prints.
  const dir = mkdtempSync(join(tmpdir(), 'mlbts-dry-'));
  const file = join(dir, 'cluster.yaml');
  writeFileSync(file, objects.map((o) => stringify(o)).join('---\n'));
  const out = await runCliAsync(['speaker', '--node-name', 'n1', '--namespace', NS, '--frrk8s-namespace', 'frr-k8s-system', '--dry-run', '-f', file, '-o', 'json']);
  assert.equal(out.status, 0, out.stderr);
  assert.ok(!out.stdout.includes('s3cret'), 'no clear-text password in the output');
  const doc = JSON.parse(out.stdout);
  assert.equal(doc.frrConfiguration.spec.bgp.routers[0].neighbors[0].password, '<retracted>');
  // Already valid in the cluster: nothing to report.
  const valid: KubeObject = { apiVersion: 'metallb.io/v1beta1', kind: 'ConfigurationState', metadata: { name: 'speaker-n1', namespace: NS }, status: { result: 'Valid' } };
  const again = await speakerDryRun(clusterStateFromObjects([...objects, valid]), { node: 'n1', namespace: NS });
  assert.deepEqual(
    again.writes.filter((w) => w.kind === 'ConfigurationState'),
    [],
  );
});

test("bgpDebounceMs: MetalLB's --bgp-debounce-timeout, a positive integer of milliseconds", () => {
  assert.equal(bgpDebounceMs(undefined), undefined);
  assert.equal(bgpDebounceMs(''), undefined);
  assert.equal(bgpDebounceMs('500'), 500);
  for (const bad of ['0', '-1', '1.5', 'abc', '3s']) assert.throws(() => bgpDebounceMs(bad), /positive integer of milliseconds/, bad);
});

test('a membership change before the watch has synced does not load the configuration from a half-listed cluster', async () => {
  const c = new Cluster(base());
  let release!: () => void;
  const listed = new Promise<void>((r) => {
    release = r;
  });
  const listeners: Array<(ch: { alive: string[] | null }) => void> = [];
  const logs: Array<Record<string, unknown>> = [];
  const full = c.st;
  c.st = clusterStateFromObjects([]); // nothing listed yet
  c.start = async () => {
    await listed;
    c.st = full;
  };
  const s = new Speaker({
    node: 'n1',
    namespace: NS,
    source: c,
    membership: {
      start: async () => {
        for (const l of listeners) l({ alive: ['n1'] });
      },
      stop: async () => {},
      alive: () => ['n1'],
      onChange: (cb) => listeners.push(cb),
    },
    l2: { announce: () => {}, withdraw: () => {} },
    log: jsonLogger({ level: 'debug', write: (l) => logs.push(JSON.parse(l)) }),
    metrics: speakerMetrics(),
    l2StatusApi: { create: async (_ns, o) => ({ ...o, metadata: { ...o.metadata, name: 'l2-1' } }), patchStatus: async () => {}, delete: async () => {} },
    bgpStatusApi: c.bgpStatusApi(),
    frrApi: c.frrApi(),
    event: () => {},
    owner: null,
    debounceMs: 1,
    frrDebounceMs: 30,
  });
  const started = s.start();
  await new Promise((r) => setTimeout(r, 50)); // longer than the debounce: a pass would have run
  release();
  await started;
  assert.deepEqual(
    logs.filter((l) => l.level === 'error').map((l) => l.error),
    [],
    'no configuration error at start-up',
  );
  assert.equal(s.configuration?.ok, true);
  await s.stop();
});
