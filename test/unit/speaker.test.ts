/**
 * The speaker loop without an API server: a fake cluster watch, fake data planes and an
 * in-memory ServiceL2Status store. What MetalLB v0.16.1's speaker would do on each change: the
 * announce/withdraw decisions (from the core), the log events with their reasons, the
 * nodeAssigned Event, the metrics and the ServiceL2Status objects.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { namespacedName, type ClusterState, type KubeObject, type ServiceL2Status } from '../../src/core/kube.ts';
import { diagnosticConfig } from '../../src/core/explain/index.ts';
import { buildElectionIndex, electL2 } from '../../src/core/election/index.ts';
import type { InterfaceSet } from '../../src/core/election/types.ts';
import type { Membership, MembershipListener } from '../../src/core/membership/types.ts';
import { Speaker, filteredByClass } from '../../src/speaker/speaker.ts';
import { FakeSource } from '../helpers/fake-source.ts';
import { jsonLogger, rfc3339 } from '../../src/runtime/log.ts';
import { speakerMetrics } from '../../src/speaker/metrics.ts';
import { planL2Status, desiredL2Status, type L2StatusApi, type L2StatusBody } from '../../src/speaker/l2status.ts';
import { SpeakerEvents } from '../../src/speaker/events.ts';
import type { EventSink as KubeEventSink, KubeEvent } from '../../src/kube/events.ts';
import { memberlistSettings } from '../../src/commands/speaker.ts';
import { speakerPodIPs } from '../../src/speaker/membership-speakerlist.ts';
import { metallbNamespaceOf as speakerNamespace } from '../../src/commands/runtime-options.ts';

// ---- builders ----

const NS = 'metallb-system';

function node(name: string, labels: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } }, status: { conditions: [{ type: 'Ready', status: 'True' }] } };
}

function service(name: string, ips: string[], extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { type: 'LoadBalancer', externalTrafficPolicy: 'Cluster', ...extra },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } },
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

const NODES = ['n1', 'n2', 'n3'];

/** The node the core elects for `svc` in `state` (the expected announcer). */
function winnerOf(state: ClusterState, svc: string): string | null {
  const { config } = diagnosticConfig(state);
  const s = state.services.find((x) => namespacedName(x) === svc)!;
  return electL2({ config, state, service: s, speakers: null, ignoreExcludeLB: false, index: buildElectionIndex(state, null) }).winner;
}

// ---- fakes ----

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

/** ServiceL2Status objects in memory, shown to the source as the watch would. */
function fakeStatusApi(source: FakeSource): L2StatusApi & { objects: Map<string, ServiceL2Status> } {
  const objects = new Map<string, ServiceL2Status>(source.st.serviceL2Statuses.map((s) => [s.metadata!.name!, s]));
  let n = 0;
  return {
    objects,
    async create(namespace, obj) {
      const made: ServiceL2Status = { ...obj, metadata: { ...obj.metadata, name: `l2-${++n}`, namespace } };
      delete made.metadata!.generateName;
      objects.set(made.metadata!.name!, made);
      source.put(made);
      return made;
    },
    async patchStatus(_ns, name, status: L2StatusBody) {
      const o = objects.get(name);
      if (!o) throw new Error(`servicel2statuses ${name} not found`);
      const next = { ...o, status: { ...status } };
      objects.set(name, next);
      source.put(next);
    },
    async delete(_ns, name) {
      const o = objects.get(name);
      if (!o) return;
      objects.delete(name);
      source.put(o, true);
    },
  };
}

interface Rig {
  source: FakeSource;
  membership: FakeMembership;
  speakers: Map<string, Speaker>;
  statuses: ReturnType<typeof fakeStatusApi>;
  logs: Array<Record<string, unknown>>;
  events: Array<{ node: string; service: string; reason: string; message: string }>;
  l2: Array<[string, string, string, readonly string[] | null, InterfaceSet | null]>;
  settle(): Promise<void>;
  stop(): Promise<void>;
}

/** One fake cluster and a speaker per node in `speakerNodes`, all started. */
async function rig(objects: KubeObject[], speakerNodes: string[] = NODES, nodeInterfaces?: readonly string[]): Promise<Rig> {
  const source = new FakeSource(objects);
  const membership = new FakeMembership();
  const statuses = fakeStatusApi(source);
  const logs: Rig['logs'] = [];
  const events: Rig['events'] = [];
  const l2: Rig['l2'] = [];
  const speakers = new Map<string, Speaker>();
  for (const n of speakerNodes) {
    const log = jsonLogger({
      level: 'debug',
      write: (line) => {
        if (process.env.SPK_DEBUG) process.stderr.write(line);
        logs.push({ node: n, ...JSON.parse(line) });
      },
    });
    speakers.set(
      n,
      new Speaker({
        node: n,
        namespace: NS,
        source,
        membership,
        log,
        metrics: speakerMetrics(),
        l2StatusApi: statuses,
        l2: {
          announce: (s, ips, ifs) => l2.push([n, 'announce', s, ips, ifs]),
          withdraw: (s) => l2.push([n, 'withdraw', s, null, null]),
          ...(nodeInterfaces ? { nodeInterfaces: () => nodeInterfaces } : {}),
        },
        bgpStatusApi: { create: async (_ns, o) => ({ ...o, metadata: { ...o.metadata, name: 'bgp-1' } }), patchStatus: async () => {}, delete: async () => {} },
        frrApi: { get: async () => null, create: async (o) => o, update: async (o) => o, delete: async () => {} },
        event: (svc, _type, reason, message) => events.push({ node: n, service: namespacedName(svc), reason, message }),
        owner: { apiVersion: 'v1', kind: 'Pod', name: `speaker-${n}`, uid: `pod-${n}` },
        debounceMs: 1,
      }),
    );
  }
  for (const s of speakers.values()) await s.start();
  const settle = async () => {
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 10));
      for (const s of speakers.values()) await s.l2Status.idle();
    }
  };
  await settle();
  return {
    source,
    membership,
    speakers,
    statuses,
    logs,
    events,
    l2,
    settle,
    stop: async () => {
      for (const s of speakers.values()) await s.stop();
    },
  };
}

function statusNodes(r: Rig, svc = 'default/web'): string[] {
  return [...r.statuses.objects.values()].filter((s) => `${s.status?.serviceNamespace}/${s.status?.serviceName}` === svc).map((s) => s.status?.node ?? '?');
}

function baseObjects(): KubeObject[] {
  return [...NODES.map((n) => node(n)), POOL, l2ad(), service('web', ['192.0.2.10']), slice('web', NODES)];
}

// ---- tests ----

test('exactly one speaker announces, with the log line, event, metric and ServiceL2Status MetalLB writes', async () => {
  const r = await rig(baseObjects());
  try {
    const winner = winnerOf(r.source.state(), 'default/web');
    assert.ok(winner);
    assert.deepEqual(
      r.l2.filter((x) => x[1] === 'announce').map((x) => x[0]),
      [winner],
    );
    assert.deepEqual(statusNodes(r), [winner]);
    const st = [...r.statuses.objects.values()][0]!;
    assert.equal(st.metadata?.namespace, NS);
    assert.deepEqual(st.metadata?.labels, { 'metallb.io/node': winner, 'metallb.io/service-name': 'web', 'metallb.io/service-namespace': 'default' });
    assert.deepEqual(st.metadata?.ownerReferences, [{ apiVersion: 'v1', kind: 'Pod', name: `speaker-${winner}`, uid: `pod-${winner}` }]);
    assert.deepEqual(st.status, { node: winner, serviceName: 'web', serviceNamespace: 'default' });
    const announced = r.logs.filter((l) => l.event === 'serviceAnnounced');
    assert.equal(announced.length, 1);
    assert.deepEqual(
      { ...announced[0], ts: undefined },
      { node: winner, event: 'serviceAnnounced', ips: ['192.0.2.10'], level: 'info', msg: 'service has IP, announcing', pool: 'lab', protocol: 'layer2', service: 'default/web', ts: undefined },
    );
    assert.deepEqual(r.events, [{ node: winner, service: 'default/web', reason: 'nodeAssigned', message: `announcing from node "${winner}" with protocol "layer2"` }]);
    const metrics = await r.speakers.get(winner)!['o'].metrics.registry.getSingleMetricAsString('metallb_speaker_announced');
    assert.match(metrics, new RegExp(`metallb_speaker_announced\\{ip="192.0.2.10",node="${winner}",protocol="layer2",service="default/web"\\} 1`));
  } finally {
    await r.stop();
  }
});

test('the winner losing its endpoint (Local policy) moves the announcement and the ServiceL2Status', async () => {
  const objs = baseObjects().map((o) => (o.kind === 'Service' ? service('web', ['192.0.2.10'], { externalTrafficPolicy: 'Local' }) : o));
  const r = await rig(objs);
  try {
    const first = winnerOf(r.source.state(), 'default/web')!;
    assert.deepEqual(statusNodes(r), [first]);
    r.source.put(
      slice(
        'web',
        NODES.filter((n) => n !== first),
      ),
    );
    await r.settle();
    const second = winnerOf(r.source.state(), 'default/web')!;
    assert.notEqual(second, first);
    assert.deepEqual(statusNodes(r), [second]);
    const withdrawn = r.logs.filter((l) => l.event === 'serviceWithdrawn');
    assert.deepEqual(
      withdrawn.map((l) => [l.node, l.reason, l.protocol, l.ip]),
      [[first, 'notOwner', 'layer2', ['192.0.2.10']]],
    );
  } finally {
    await r.stop();
  }
});

test("an advertisement's interfaces missing on the elected node: announceFailed per address, nothing on the wire, no ServiceL2Status, still nodeAssigned (MetalLB's layer2 SetBalancer)", async () => {
  const r = await rig([...baseObjects().filter((o) => o.kind !== 'L2Advertisement'), l2ad({ interfaces: ['eth9'] })], NODES, ['lo', 'eth0']);
  try {
    await r.settle();
    const winner = winnerOf(r.source.state(), 'default/web')!;
    assert.deepEqual(
      r.events.map((e) => [e.node, e.reason, e.message]),
      [
        [winner, 'announceFailed', `the interfaces specified by LB IP "192.0.2.10" doesn't exist in assigned node "${winner}" with protocol "layer2"`],
        [winner, 'nodeAssigned', `announcing from node "${winner}" with protocol "layer2"`],
      ],
    );
    const warn = r.logs.find((l) => l.op === 'SetBalancer')!;
    assert.equal(warn.level, 'warn');
    assert.equal(warn.msg, "the specified interfaces used to announce LB IP don't exist");
    assert.deepEqual(warn.localIfs, ['lo', 'eth0']);
    assert.deepEqual(
      r.l2.filter((x) => x[1] === 'announce'),
      [],
    );
    assert.deepEqual(statusNodes(r), []);
  } finally {
    await r.stop();
  }
});

test('an advertisement whose interfaces one exists on the node announces on it (no announceFailed)', async () => {
  const r = await rig([...baseObjects().filter((o) => o.kind !== 'L2Advertisement'), l2ad({ interfaces: ['eth9', 'eth0'] })], NODES, ['lo', 'eth0']);
  try {
    await r.settle();
    const winner = winnerOf(r.source.state(), 'default/web')!;
    assert.deepEqual(
      r.events.map((e) => e.reason),
      ['nodeAssigned'],
    );
    assert.deepEqual(
      r.l2.filter((x) => x[1] === 'announce'),
      [[winner, 'announce', 'default/web', ['192.0.2.10'], ['eth0', 'eth9']]],
    );
    assert.deepEqual(statusNodes(r), [winner]);
  } finally {
    await r.stop();
  }
});

test('an advertisement limited to interfaces and nodes: status lists the interfaces; the others withdraw', async () => {
  const r = await rig(baseObjects());
  try {
    const first = winnerOf(r.source.state(), 'default/web')!;
    const other = NODES.find((n) => n !== first)!;
    r.source.put(l2ad({ nodeSelectors: [{ matchLabels: { 'kubernetes.io/hostname': other } }], interfaces: ['eth1', 'eth0'] }));
    await r.settle();
    assert.equal(winnerOf(r.source.state(), 'default/web'), other);
    assert.deepEqual(statusNodes(r), [other]);
    const st = [...r.statuses.objects.values()][0]!;
    assert.deepEqual(st.status?.interfaces, [{ name: 'eth0' }, { name: 'eth1' }]);
    assert.deepEqual(
      r.logs.filter((l) => l.event === 'serviceWithdrawn').map((l) => [l.node, l.reason]),
      [[first, 'noMatchingAdvertisement']],
    );
    assert.deepEqual(r.l2.filter((x) => x[1] === 'announce').at(-1), [other, 'announce', 'default/web', ['192.0.2.10'], ['eth0', 'eth1']]);
  } finally {
    await r.stop();
  }
});

test('an IP change is a withdraw (loadBalancerIPChanged) then a fresh announcement; deleting the service removes its status', async () => {
  const r = await rig(baseObjects());
  try {
    r.source.put(service('web', ['192.0.2.77']));
    await r.settle();
    const w = winnerOf(r.source.state(), 'default/web')!;
    const reasons = r.logs.filter((l) => l.event === 'serviceWithdrawn').map((l) => l.reason);
    assert.ok(reasons.includes('loadBalancerIPChanged'), JSON.stringify(reasons));
    const lastAnnounce = r.logs.filter((l) => l.event === 'serviceAnnounced').at(-1)!;
    assert.deepEqual([lastAnnounce.node, lastAnnounce.ips], [w, ['192.0.2.77']]);
    assert.deepEqual(statusNodes(r), [w]);
    r.source.put(service('web', ['192.0.2.77']), true);
    await r.settle();
    assert.deepEqual(statusNodes(r), []);
    assert.equal(r.logs.filter((l) => l.event === 'serviceWithdrawn').at(-1)!.reason, 'serviceDeleted');
  } finally {
    await r.stop();
  }
});

test('service-level reasons: not LoadBalancer, no IP, IP outside every pool', async () => {
  const cases: Array<[string, KubeObject, string]> = [
    ['type ClusterIP', { ...service('web', ['192.0.2.10']), spec: { type: 'ClusterIP' } }, 'notLoadBalancer'],
    ['ingress emptied', service('web', []), 'noIPAllocated'],
    ['IP outside the pools', service('web', ['198.51.100.1']), 'ipNotAllowed'],
  ];
  for (const [name, svc, reason] of cases) {
    const r = await rig(baseObjects());
    try {
      r.source.put(svc);
      await r.settle();
      assert.deepEqual(
        r.logs.filter((l) => l.event === 'serviceWithdrawn').map((l) => l.reason),
        [reason],
        name,
      );
      assert.deepEqual(statusNodes(r), [], name);
    } finally {
      await r.stop();
    }
  }
});

test('membership change resyncs every service; a speaker not alive never announces', async () => {
  const r = await rig(baseObjects());
  try {
    const first = winnerOf(r.source.state(), 'default/web')!;
    r.membership.set(NODES.filter((n) => n !== first));
    await r.settle();
    const now = statusNodes(r);
    assert.equal(now.length, 1);
    assert.notEqual(now[0], first);
  } finally {
    await r.stop();
  }
});

test('a Node status heartbeat does not resync; a label change does', async () => {
  const r = await rig(baseObjects());
  try {
    const before = r.logs.length;
    const n1 = r.source.state().nodes.find((n) => n.metadata?.name === 'n1')!;
    r.source.put({ ...n1, status: { conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: 'x' }] } });
    await r.settle();
    assert.equal(r.logs.length, before);
    r.source.put({ ...n1, metadata: { ...n1.metadata, labels: { ...n1.metadata?.labels, zone: 'a' } } });
    await r.settle();
    assert.ok(r.logs.length > before, 'the winner logs serviceAnnounced again after the forced sync');
  } finally {
    await r.stop();
  }
});

test('stale ServiceL2Status objects of this node are removed at start; a deleted own status is recreated', async () => {
  const stale: ServiceL2Status = {
    apiVersion: 'metallb.io/v1beta1',
    kind: 'ServiceL2Status',
    metadata: { name: 'l2-old', namespace: NS, labels: { 'metallb.io/node': 'n1', 'metallb.io/service-name': 'gone', 'metallb.io/service-namespace': 'default' } },
    status: { node: 'n1', serviceName: 'gone', serviceNamespace: 'default' },
  };
  const r = await rig([...baseObjects(), stale]);
  try {
    assert.equal(r.statuses.objects.has('l2-old'), false);
    const w = winnerOf(r.source.state(), 'default/web')!;
    const mine = [...r.statuses.objects.values()].find((s) => s.status?.node === w)!;
    await r.statuses.delete(NS, mine.metadata!.name!);
    await r.settle();
    assert.deepEqual(statusNodes(r), [w]);
  } finally {
    await r.stop();
  }
});

test('graceful shutdown withdraws everything and removes the ServiceL2Status', async () => {
  const r = await rig(baseObjects());
  const w = winnerOf(r.source.state(), 'default/web')!;
  await r.stop();
  assert.deepEqual(statusNodes(r), []);
  assert.deepEqual(
    r.logs.filter((l) => l.event === 'serviceWithdrawn').map((l) => [l.node, l.reason]),
    [[w, 'shutdown']],
  );
  assert.deepEqual(r.l2.at(-1), [w, 'withdraw', 'default/web', null, null]);
});

test('planL2Status: MetalLB reconciler cases', () => {
  const mk = (name: string, node: string, status?: L2StatusBody): ServiceL2Status => ({
    apiVersion: 'metallb.io/v1beta1',
    kind: 'ServiceL2Status',
    metadata: { name, namespace: NS, labels: { 'metallb.io/node': node, 'metallb.io/service-name': 'web', 'metallb.io/service-namespace': 'default' } },
    ...(status ? { status: { ...status } } : {}),
  });
  const base = { node: 'n1', namespace: NS, serviceNamespace: 'default', serviceName: 'web', owner: null };
  const cases: Array<{ name: string; desired: InterfaceSet | undefined; existing: ServiceL2Status[]; deletes: string[]; create: boolean; patch: string | null | 'new' }> = [
    { name: 'not announcing, nothing there', desired: null, existing: [], deletes: [], create: false, patch: null },
    { name: 'not announcing: delete only ours', desired: null, existing: [mk('a', 'n1'), mk('b', 'n2')], deletes: ['a'], create: false, patch: null },
    { name: 'announcing, none: create then write status', desired: 'all', existing: [], deletes: [], create: true, patch: 'new' },
    { name: 'announcing: delete the others', desired: 'all', existing: [mk('b', 'n2'), mk('a', 'n1', desiredL2Status('n1', 'default', 'web', 'all'))], deletes: ['b'], create: false, patch: null },
    { name: 'announcing: duplicate of ours deleted', desired: 'all', existing: [mk('a', 'n1', desiredL2Status('n1', 'default', 'web', 'all')), mk('c', 'n1')], deletes: ['c'], create: false, patch: null },
    { name: 'interfaces changed: status rewritten', desired: ['eth0'], existing: [mk('a', 'n1', desiredL2Status('n1', 'default', 'web', 'all'))], deletes: [], create: false, patch: 'a' },
    { name: 'created but no status yet', desired: 'all', existing: [mk('a', 'n1')], deletes: [], create: false, patch: 'a' },
  ];
  for (const c of cases) {
    const plan = planL2Status({ ...base, desired: c.desired, existing: c.existing });
    assert.deepEqual(plan.deletes, c.deletes, c.name);
    assert.equal(plan.create !== null, c.create, c.name);
    assert.equal(plan.patch === null ? null : (plan.patch.name ?? 'new'), c.patch, c.name);
  }
  assert.deepEqual(desiredL2Status('n1', 'default', 'web', ['eth0']), { node: 'n1', serviceName: 'web', serviceNamespace: 'default', interfaces: [{ name: 'eth0' }] });
});

test("events are recorded as MetalLB's speaker records them: metallb-speaker, no host; a burst of identical events is one Event", async () => {
  const created: KubeEvent[] = [];
  const patched: Array<[string, number]> = [];
  const sink: KubeEventSink = {
    create: async (ev) => {
      created.push(ev);
      return { ...ev, metadata: { ...ev.metadata, resourceVersion: '1' } };
    },
    patch: async (ev, p) => {
      patched.push([ev.metadata.name, p.count]);
      return { ...ev, count: p.count };
    },
  };
  const events = new SpeakerEvents(sink, jsonLogger({ level: 'error', write: () => {} }), () => 1_700_000_000_123);
  const svc = service('web', ['192.0.2.10']) as never;
  for (let i = 0; i < 3; i++) events.sink(svc, 'Normal', 'nodeAssigned', 'announcing from node "n1" with protocol "layer2"');
  await events.idle();
  assert.equal(created.length, 1);
  assert.deepEqual(created[0]!.source, { component: 'metallb-speaker' });
  assert.deepEqual(created[0]!.involvedObject, { apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'web', uid: 'uid-web' });
  assert.equal(created[0]!.firstTimestamp, '2023-11-14T22:13:20Z');
  assert.deepEqual(
    patched.map(([, c]) => c),
    [2, 3],
  );
  await events.close();
});

test('flags: memberlist on only with bind address and labels, namespace defaults, load-balancer class filter, log format', () => {
  assert.equal(memberlistSettings({ mlBindport: '7946' }), null);
  assert.equal(memberlistSettings({ mlBindaddr: '10.0.0.1', mlBindport: '7946' }), null, 'no labels: memberlist off (MetalLB)');
  assert.equal(memberlistSettings({ mlLabels: 'app=metallb', mlSecretKeyPath: '/etc/ml_secret_key' }), null, 'no bind address: memberlist off (MetalLB)');
  assert.deepEqual(memberlistSettings({ mlBindaddr: '10.0.0.1', mlBindport: '8000', mlLabels: 'app=metallb' }), { bindAddr: '10.0.0.1', bindPort: 8000, labels: 'app=metallb', wan: false });
  assert.deepEqual(memberlistSettings({ mlBindaddr: '10.0.0.1', mlLabels: 'app=metallb', mlNamespace: 'ns', mlSecretKeyPath: '/s', mlWanConfig: true }), {
    bindAddr: '10.0.0.1',
    bindPort: 7946,
    labels: 'app=metallb',
    namespace: 'ns',
    secretKeyPath: '/s',
    wan: true,
  });
  assert.throws(() => memberlistSettings({ mlBindaddr: '10.0.0.1', mlBindport: 'x', mlLabels: 'a=b' }), /--ml-bindport: not a port number: x/);
  assert.throws(() => memberlistSettings({ mlBindaddr: '10.0.0.1', mlBindport: '70000', mlLabels: 'a=b' }), /--ml-bindport/);
  assert.throws(() => memberlistSettings({ mlBindaddr: 'node-1', mlLabels: 'a=b' }), /--ml-bindaddr: not an IP address/);
  assert.equal(speakerNamespace('x', {}), 'x');
  assert.equal(speakerNamespace(undefined, { METALLB_NAMESPACE: 'mlb' }), 'mlb');
  assert.equal(speakerNamespace(undefined, {}, '/nonexistent'), 'metallb-system');
  const svc = (cls?: string) => service('s', [], cls ? { loadBalancerClass: cls } : {}) as never;
  assert.equal(filteredByClass(svc(), undefined), false);
  assert.equal(filteredByClass(svc('other'), undefined), true);
  assert.equal(filteredByClass(svc(), 'mine'), true);
  assert.equal(filteredByClass(svc('mine'), 'mine'), false);
  assert.equal(rfc3339(Date.UTC(2025, 0, 2, 3, 4, 5, 678)), '2025-01-02T03:04:05Z');
  const lines: string[] = [];
  jsonLogger({ level: 'warn', write: (l) => lines.push(l), now: () => 0 })
    .with({ b: 1 })
    .info({ a: 2 });
  assert.equal(lines.length, 0);
  const debugLines: string[] = [];
  jsonLogger({ level: 'debug', write: (l) => debugLines.push(l), now: () => 0 })
    .with({ b: 1 })
    .debug({ a: 2, u: undefined });
  assert.deepEqual(debugLines, ['{"a":2,"b":1,"level":"debug","ts":"1970-01-01T00:00:00Z"}\n']);
});

test('speakerPodIPs: pods by label selector in the namespace, Running with a podIP, without this speaker', async () => {
  const calls: Array<[string, Record<string, string>]> = [];
  const pod = (phase: string, podIP?: string) => ({ metadata: { name: `p-${podIP}` }, status: { phase, ...(podIP ? { podIP } : {}) } });
  const get = async (path: string, query: Record<string, string>) => {
    calls.push([path, query]);
    return { items: [pod('Running', '10.0.0.3'), pod('Running', '10.0.0.1'), pod('Pending', '10.0.0.4'), pod('Running'), pod('Failed', '10.0.0.5'), pod('Running', '10.0.0.2'), pod('Running', '10.0.0.3'), {}] };
  };
  assert.deepEqual(await speakerPodIPs(get, 'metallb system', 'app=metallb,component=speaker', '10.0.0.2'), ['10.0.0.1', '10.0.0.3']);
  assert.deepEqual(calls, [['/api/v1/namespaces/metallb%20system/pods', { labelSelector: 'app=metallb,component=speaker' }]]);
  assert.deepEqual(await speakerPodIPs(async () => ({ items: [pod('Running', '10.0.0.2')] }), 'ns', 'a=b'), ['10.0.0.2'], 'no self IP: nothing excluded');
  await assert.rejects(
    speakerPodIPs(
      async () => {
        throw new Error('forbidden');
      },
      'ns',
      'a=b',
    ),
    /forbidden/,
  );
});

test('nodeChangeMatters: MetalLB NodeReconciler predicate (create, delete, labels, NetworkUnavailable; not heartbeats)', async () => {
  const { nodeChangeMatters } = await import('../../src/speaker/speaker.ts');
  const n = (labels: Record<string, string>, netUnavailable?: string): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n1', labels, resourceVersion: String(Math.random()) },
    status: { conditions: [{ type: 'Ready', status: 'True' }, ...(netUnavailable ? [{ type: 'NetworkUnavailable', status: netUnavailable }] : [])] },
  });
  assert.equal(nodeChangeMatters({ type: 'add', object: n({}) }), true);
  assert.equal(nodeChangeMatters({ type: 'delete', object: n({}) }), true);
  assert.equal(nodeChangeMatters({ type: 'update', object: n({ a: '1' }), old: n({ a: '1' }) }), false, 'a heartbeat');
  assert.equal(nodeChangeMatters({ type: 'update', object: n({ a: '2' }), old: n({ a: '1' }) }), true);
  assert.equal(nodeChangeMatters({ type: 'update', object: n({}, 'True'), old: n({}, 'False') }), true);
  assert.equal(nodeChangeMatters({ type: 'update', object: n({}, 'False'), old: n({}) }), false, 'absent and False are the same');
});
