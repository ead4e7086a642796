/**
 * "Nobody announces" (issue #12 item 7): the core decision (unannouncedService, reportingSpeaker)
 * on the traps MetalLB's users report — the exclusion label on the only advertised node, an
 * L2Advertisement selecting no node with a speaker, Local endpoints only where no speaker runs,
 * BGP without a session — and the speaker loop: three speakers, exactly one Warning Event from
 * the first live speaker, the gauge, none with the flag off, cleared once announced.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clusterStateFromObjects, namespacedName, type ClusterState, type KubeObject } from '../../src/core/kube.ts';
import { diagnosticConfig } from '../../src/core/explain/index.ts';
import { buildElectionIndex, electL2, evaluateBGP } from '../../src/core/election/index.ts';
import { reportingSpeaker, unannouncedService } from '../../src/core/speaker/unannounced.ts';
import type { Membership, MembershipListener } from '../../src/core/membership/types.ts';
import { Speaker } from '../../src/speaker/speaker.ts';
import { speakerMetrics } from '../../src/speaker/metrics.ts';
import { jsonLogger } from '../../src/runtime/log.ts';
import { FakeSource } from '../helpers/fake-source.ts';

const NS = 'metallb-system';
const EXCL = 'node.kubernetes.io/exclude-from-external-load-balancers';

function node(name: string, labels: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } } };
}
function service(name: string, ip: string, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { type: 'LoadBalancer', externalTrafficPolicy: 'Cluster', ...extra },
    status: { loadBalancer: { ingress: [{ ip }] } },
  };
}
function slice(svc: string, nodes: string[]): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${svc}-abc`, namespace: 'default', labels: { 'kubernetes.io/service-name': svc } },
    addressType: 'IPv4',
    endpoints: nodes.map((n, i) => ({ addresses: [`10.244.0.${i + 1}`], nodeName: n, conditions: { ready: true } })),
  };
}
const POOL: KubeObject = { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'lab', namespace: NS }, spec: { addresses: ['192.0.2.0/24'] } };
function l2ad(spec: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: { name: 'l2', namespace: NS }, spec: { ipAddressPools: ['lab'], ...spec } };
}
function bgpad(spec: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'metallb.io/v1beta1', kind: 'BGPAdvertisement', metadata: { name: 'bgp', namespace: NS }, spec: { ipAddressPools: ['lab'], ...spec } };
}
function peer(name: string, spec: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'metallb.io/v1beta2', kind: 'BGPPeer', metadata: { name, namespace: NS }, spec: { myASN: 64500, peerASN: 64501, peerAddress: '172.18.0.5', ...spec } };
}
const onlyC = { nodeSelectors: [{ matchLabels: { 'kubernetes.io/hostname': 'node-c' } }] };

/** The core's verdict for `default/web` in the cluster `objects`, with `speakers` alive. */
function verdict(objects: KubeObject[], speakers: string[] | null = null) {
  const state: ClusterState = clusterStateFromObjects(objects);
  const { config } = diagnosticConfig(state);
  const svc = state.services.find((s) => namespacedName(s) === 'default/web')!;
  const index = buildElectionIndex(state, speakers);
  const l2 = electL2({ config, state, service: svc, speakers, ignoreExcludeLB: false, index });
  const pool = l2.pool ? config.pools.get(l2.pool) : undefined;
  const hasBGP = (pool?.bgpAdvertisements.length ?? 0) > 0;
  const bgp = hasBGP ? evaluateBGP({ config, state, service: svc, ignoreExcludeLB: false, index }) : null;
  return unannouncedService({ l2, pool, bgp, hasBGP, speakers });
}

const NODES = ['node-a', 'node-b', 'node-c'].map((n) => node(n));

test('unannouncedService: the reports users file, each with the reason from the election trace', () => {
  const cases: Array<{ name: string; objects: KubeObject[]; speakers?: string[]; reason: RegExp | null; protocols?: string[] }> = [
    { name: 'announced: nothing to report', objects: [...NODES, POOL, l2ad(), service('web', '192.0.2.10'), slice('web', ['node-a'])], reason: null },
    {
      name: 'exclusion-label trap: the only advertised node carries the label',
      objects: [node('node-a'), node('node-b'), node('node-c', { [EXCL]: '' }), POOL, l2ad(onlyC), service('web', '192.0.2.10'), slice('web', ['node-a'])],
      reason: new RegExp(`^no candidate node \\(node-c: labelled ${EXCL.replace(/\./g, '\\.')}; node-a, node-b: no L2Advertisement applying to the service selects it\\)$`),
      protocols: ['layer2'],
    },
    {
      name: 'the L2Advertisement selects only a node without a live speaker',
      objects: [...NODES, POOL, l2ad(onlyC), service('web', '192.0.2.10'), slice('web', ['node-a'])],
      speakers: ['node-a', 'node-b'],
      reason: /^no candidate node \(node-c: no live speaker on the node \(not a memberlist member\); node-a, node-b: no L2Advertisement applying to the service selects it\)$/,
    },
    {
      name: 'externalTrafficPolicy Local, every endpoint on a node without a speaker',
      objects: [...NODES, POOL, l2ad(), service('web', '192.0.2.10', { externalTrafficPolicy: 'Local' }), slice('web', ['node-c'])],
      speakers: ['node-a', 'node-b'],
      reason: /node-c: no live speaker on the node.*node-a, node-b: no usable endpoint on the node \(externalTrafficPolicy: Local\)/,
    },
    {
      name: 'serviceSelectors of every L2Advertisement miss the Service',
      objects: [...NODES, POOL, l2ad({ serviceSelectors: [{ matchLabels: { expose: 'yes' } }] }), service('web', '192.0.2.10'), slice('web', ['node-a'])],
      reason: /^no L2Advertisement of IPAddressPool "lab" selects the Service/,
    },
    {
      name: 'pool without any advertisement',
      objects: [...NODES, POOL, service('web', '192.0.2.10'), slice('web', ['node-a'])],
      reason: /^IPAddressPool "lab" has no L2Advertisement and no BGPAdvertisement/,
      protocols: [],
    },
    {
      name: 'BGP: the only BGPPeer selects no node',
      objects: [...NODES, POOL, bgpad(), peer('tor', { nodeSelectors: [{ matchLabels: { rack: 'r9' } }] }), service('web', '192.0.2.10'), slice('web', ['node-a'])],
      reason: /^no live speaker advertises it to a BGP peer \(node-a, node-b, node-c: eligible, but no BGP session/,
      protocols: ['bgp'],
    },
    { name: 'BGP with a session: announced', objects: [...NODES, POOL, bgpad(), peer('tor'), service('web', '192.0.2.10'), slice('web', ['node-a'])], reason: null },
    {
      name: 'layer2 and BGP: nobody only when both fail, both reasons named',
      objects: [node('node-a'), node('node-b'), node('node-c', { [EXCL]: 'true' }), POOL, l2ad(onlyC), bgpad(onlyC), peer('tor'), service('web', '192.0.2.10'), slice('web', ['node-a'])],
      reason: /^layer2: no candidate node .*; bgp: no live speaker advertises it to a BGP peer \(node-a, node-b: notOwner .*node-c: nodeLabeledExcludeBalancers/,
      protocols: ['layer2', 'bgp'],
    },
    { name: 'no usable endpoint at all: the workload, not the announcement', objects: [...NODES, POOL, l2ad(), service('web', '192.0.2.10'), slice('web', [])], reason: null },
    { name: 'address outside every pool: the controller reports it', objects: [...NODES, POOL, l2ad(), service('web', '198.51.100.1'), slice('web', ['node-a'])], reason: null },
  ];
  for (const c of cases) {
    const v = verdict(c.objects, c.speakers ?? null);
    if (c.reason === null) {
      assert.equal(v, null, `${c.name}: ${v?.message}`);
      continue;
    }
    assert.ok(v, `${c.name}: expected a report`);
    assert.match(v.reason, c.reason, c.name);
    assert.equal(v.message, `no node announces 192.0.2.10: ${v.reason}`, c.name);
    assert.equal(v.pool, 'lab');
    if (c.protocols) assert.deepEqual(v.protocols, c.protocols, c.name);
  }
});

test('reportingSpeaker: the first live speaker in name order, else the first Node; none without either', () => {
  assert.equal(reportingSpeaker(['node-c', 'node-b'], ['node-a', 'node-b', 'node-c']), 'node-b');
  assert.equal(reportingSpeaker(null, ['node-c', 'node-a']), 'node-a');
  assert.equal(reportingSpeaker([], ['node-a']), null);
  assert.equal(reportingSpeaker(null, []), null);
});

class FakeMembership implements Membership {
  value: string[] | null = null;
  private cbs: MembershipListener[] = [];
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  alive(): string[] | null {
    return this.value;
  }
  onChange(cb: MembershipListener): void {
    this.cbs.push(cb);
  }
  set(v: string[] | null): void {
    this.value = v;
    for (const cb of this.cbs) cb({ alive: v });
  }
}

async function threeSpeakers(objects: KubeObject[], unannouncedEvents = true) {
  const source = new FakeSource(objects);
  const membership = new FakeMembership();
  const events: Array<{ node: string; type: string; reason: string; message: string }> = [];
  const logs: Array<Record<string, unknown>> = [];
  const speakers = new Map<string, Speaker>();
  for (const n of ['node-a', 'node-b', 'node-c']) {
    speakers.set(
      n,
      new Speaker({
        node: n,
        namespace: NS,
        source,
        membership,
        metrics: speakerMetrics(),
        unannouncedEvents,
        log: jsonLogger({ level: 'debug', write: (line) => logs.push({ node: n, ...JSON.parse(line) }) }),
        l2: { announce: () => {}, withdraw: () => {} },
        l2StatusApi: { create: async (_ns, o) => ({ ...o, metadata: { ...o.metadata, name: `l2-${n}` } }), patchStatus: async () => {}, delete: async () => {} },
        bgpStatusApi: { create: async (_ns, o) => ({ ...o, metadata: { ...o.metadata, name: 'bgp-1' } }), patchStatus: async () => {}, delete: async () => {} },
        frrApi: { get: async () => null, create: async (o) => o, update: async (o) => o, delete: async () => {} },
        event: (_svc, type, reason, message) => events.push({ node: n, type, reason, message }),
        owner: null,
        debounceMs: 1,
      }),
    );
  }
  for (const s of speakers.values()) await s.start();
  const settle = () => new Promise((r) => setTimeout(r, 40));
  await settle();
  const gauge = async (n: string) => await speakers.get(n)!['o'].metrics.registry.getSingleMetricAsString('metallb_speaker_unannounced');
  return {
    source,
    membership,
    events,
    logs,
    speakers,
    settle,
    gauge,
    stop: async () => {
      for (const s of speakers.values()) await s.stop();
    },
  };
}

const TRAP = [node('node-a'), node('node-b'), node('node-c', { [EXCL]: '' }), POOL, l2ad(onlyC), service('web', '192.0.2.10'), slice('web', ['node-a'])];

test('speakers: exactly one Warning Event, from the first live speaker, with the gauge; cleared once announced', async () => {
  const r = await threeSpeakers(TRAP);
  try {
    const warnings = r.events.filter((e) => e.type === 'Warning');
    assert.equal(warnings.length, 1, JSON.stringify(r.events));
    assert.equal(warnings[0]!.node, 'node-a');
    assert.equal(warnings[0]!.reason, 'notAnnounced');
    assert.match(warnings[0]!.message, new RegExp(`^no node announces 192\\.0\\.2\\.10: no candidate node \\(node-c: labelled ${EXCL.replace(/\./g, '\\.')}`));
    assert.match(await r.gauge('node-a'), /metallb_speaker_unannounced\{service="default\/web",ip="192\.0\.2\.10"\} 1/);
    assert.doesNotMatch(await r.gauge('node-b'), /default\/web/);
    assert.equal(r.logs.filter((l) => l.op === 'unannounced' && l.level === 'warn').length, 1);

    // A resync with nothing changed: no second event.
    r.membership.set(['node-a', 'node-b', 'node-c']);
    await r.settle();
    assert.equal(r.events.filter((e) => e.type === 'Warning').length, 1);

    // node-a leaves memberlist: node-b takes over the report, whose reason now names node-a too.
    r.membership.set(['node-b', 'node-c']);
    await r.settle();
    const after = r.events.filter((e) => e.type === 'Warning');
    assert.deepEqual(
      after.map((e) => e.node),
      ['node-a', 'node-b'],
    );
    assert.match(after[1]!.message, /node-a: no live speaker on the node \(not a memberlist member\); node-c: labelled/);
    assert.doesNotMatch(await r.gauge('node-a'), /default\/web/);
    assert.match(await r.gauge('node-b'), /service="default\/web"/);

    // The label removed: node-c announces, the gauge goes.
    r.source.put(node('node-c'));
    await r.settle();
    assert.doesNotMatch(await r.gauge('node-b'), /default\/web/);
    assert.ok(r.events.some((e) => e.reason === 'nodeAssigned' && e.node === 'node-c'));
    assert.equal(r.events.filter((e) => e.type === 'Warning').length, 2);
  } finally {
    await r.stop();
  }
});

test('speakers with --no-unannounced-events: no Event; the log line and the gauge stay', async () => {
  const r = await threeSpeakers(TRAP, false);
  try {
    assert.deepEqual(r.events, []);
    assert.match(await r.gauge('node-a'), /service="default\/web"/);
    assert.equal(r.logs.filter((l) => l.op === 'unannounced' && l.level === 'warn').length, 1);
  } finally {
    await r.stop();
  }
});
