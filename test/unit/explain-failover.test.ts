/**
 * The failover budget of `explain` (issue #12 item 10): memberlist's suspicion formula with its own
 * figures (DefaultLANConfig, DefaultWANConfig, a config file), the memberlist configuration read
 * from the speaker pods of a snapshot (MetalLB's manifests: METALLB_ML_BIND_ADDR from the pod IP,
 * METALLB_ML_LABELS; --ml-wan-config; the ConfigMap at /etc/metallb/memberlist), and `no-failover`
 * when the speakers run without memberlist.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clusterStateFromObjects, type KubeObject } from '../../src/core/kube.ts';
import { diagnosticContext, explainService } from '../../src/core/explain/index.ts';
import { failoverBudget, failoverFindings, memberlistInForce, suspicionBounds } from '../../src/core/explain/failover.ts';
import { LAN_CONFIG, WAN_CONFIG } from '../../src/core/membership/config.ts';
import { explainText } from '../../src/render/explain.ts';

test('suspicionBounds: SuspicionMult × max(1, log10(max(1, n))) × ProbeInterval, ×SuspicionMaxTimeoutMult without confirmations', () => {
  const cases: Array<[string, typeof LAN_CONFIG, number, number, number, number]> = [
    // name, config, n, min ms, max ms, confirmations
    ['LAN, 1 member', LAN_CONFIG, 1, 4000, 4000, 0],
    ['LAN, 3 members: n − 2 < SuspicionMult − 2, the timer is min', LAN_CONFIG, 3, 4000, 4000, 0],
    ['LAN, 4 members: 2 confirmations bring it from 24 s to 4 s', LAN_CONFIG, 4, 4000, 24000, 2],
    ['LAN, 10 members: log10 = 1', LAN_CONFIG, 10, 4000, 24000, 2],
    ['LAN, 50 members: log10 50 = 1.698', LAN_CONFIG, 50, 6792, 40752, 2],
    ['LAN, 100 members: log10 = 2', LAN_CONFIG, 100, 8000, 48000, 2],
    ['LAN, 500 members: log10 500 = 2.698', LAN_CONFIG, 500, 10792, 64752, 2],
    ['WAN, 5 members: n − 2 < 4', WAN_CONFIG, 5, 30000, 30000, 0],
    ['WAN, 10 members: 6 × 1 × 5 s, max × 6', WAN_CONFIG, 10, 30000, 180000, 4],
  ];
  for (const [name, config, n, min, max, k] of cases) {
    assert.deepEqual(suspicionBounds(config, n), { minMs: min, maxMs: max, confirmations: k }, name);
  }
});

const NS = 'metallb-system';

function speakerPod(node: string, env: Array<Record<string, unknown>>, extra: { args?: string[]; mounts?: unknown[]; volumes?: unknown[] } = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `speaker-${node}`, namespace: NS, labels: { app: 'metallb', component: 'speaker' } },
    spec: {
      nodeName: node,
      containers: [{ name: 'speaker', image: 'quay.io/metallb/speaker:v0.16.1', args: ['--port=7472', '--log-level=info', ...(extra.args ?? [])], env, volumeMounts: extra.mounts ?? [] }],
      volumes: extra.volumes ?? [],
    },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [{ name: 'speaker', restartCount: 0, ready: true }] },
  };
}
/** MetalLB v0.16.1's manifests (config/manifests/metallb-native.yaml): memberlist on. */
const ML_ENV = [
  { name: 'METALLB_ML_BIND_ADDR', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
  { name: 'METALLB_ML_LABELS', value: 'app=metallb,component=speaker' },
  { name: 'METALLB_ML_SECRET_KEY_PATH', value: '/etc/ml_secret_key' },
];
const FILE = {
  TCPTimeout: '10s',
  IndirectChecks: 3,
  RetransmitMult: 4,
  SuspicionMult: 3,
  SuspicionMaxTimeoutMult: 6,
  PushPullInterval: '30s',
  ProbeTimeout: '200ms',
  ProbeInterval: '500ms',
  DisableTcpPings: false,
  AwarenessMaxMultiplier: 8,
  GossipNodes: 3,
  GossipInterval: '200ms',
  GossipToTheDeadTime: '30s',
  GossipVerifyIncoming: true,
  GossipVerifyOutgoing: true,
  EnableCompression: true,
  HandoffQueueDepth: 1024,
  UDPBufferSize: 1400,
  QueueCheckInterval: '30s',
};

test('memberlistInForce: from the speaker pods (flags, env, the config file ConfigMap), or assumed', () => {
  const state = (objs: KubeObject[]) => clusterStateFromObjects(objs);
  const on = memberlistInForce(state([speakerPod('n1', ML_ENV)]), NS);
  assert.equal(on.enabled, true);
  assert.equal(on.profile, 'LAN');
  assert.equal(on.config, LAN_CONFIG);
  assert.match(on.source, /speaker pod metallb-system\/speaker-n1: METALLB_ML_BIND_ADDR and METALLB_ML_LABELS set, no config file/);

  const off = memberlistInForce(state([speakerPod('n1', [ML_ENV[1]!])]), NS);
  assert.equal(off.enabled, false);
  assert.match(off.source, /has no --ml-bindaddr \/ METALLB_ML_BIND_ADDR$/);
  assert.equal(memberlistInForce(state([speakerPod('n1', [], { args: ['--ml-bindaddr=$(POD_IP)', '--ml-labels', 'app=metallb'] })]), NS).enabled, true);

  const wan = memberlistInForce(state([speakerPod('n1', ML_ENV, { args: ['--ml-wan-config'] })]), NS);
  assert.deepEqual([wan.profile, wan.config.probeIntervalMs], ['WAN', 5000]);

  const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'memberlist-config', namespace: NS }, data: { 'config.json': JSON.stringify(FILE) } };
  const mounted = speakerPod('n1', ML_ENV, {
    mounts: [{ name: 'ml-config', mountPath: '/etc/metallb/memberlist' }],
    volumes: [{ name: 'ml-config', configMap: { name: 'memberlist-config' } }],
  });
  const file = memberlistInForce(state([mounted, cm]), NS);
  assert.equal(file.profile, 'file');
  assert.deepEqual([file.config.probeIntervalMs, file.config.probeTimeoutMs, file.config.suspicionMult], [500, 200, 3]);
  assert.match(file.source, /config file ConfigMap metallb-system\/memberlist-config key config\.json/);

  const broken: KubeObject = { ...cm, data: { 'config.json': '{"ProbeInterval": "1s"}' } };
  const bad = memberlistInForce(state([mounted, broken]), NS);
  assert.equal(bad.profile, 'LAN');
  assert.match(bad.source, /is invalid .*: the speakers do not start with it/);

  const trimmed = memberlistInForce(state([{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'speaker-x', namespace: NS, labels: { component: 'speaker' } }, spec: { nodeName: 'n1' } }]), NS);
  assert.equal(trimmed.enabled, null, 'a pod without its container spec says nothing');
  const none = memberlistInForce(state([]), NS);
  assert.equal(none.enabled, null);
  assert.match(none.source, /MetalLB's manifests assumed/);
  assert.equal(memberlistInForce(state([]), NS, 'memberlist-disabled').enabled, false);
});

test('failoverBudget: detection, suspicion, gossip, resync; none without memberlist', () => {
  const ml = memberlistInForce(clusterStateFromObjects([speakerPod('n1', ML_ENV)]), NS);
  const three = failoverBudget({ announcer: 'n2', next: 'n1', memberlist: ml, members: 3 });
  assert.deepEqual(three.detection, { minMs: 1000, maxMs: 2000 });
  assert.deepEqual(three.suspicion, { minMs: 4000, maxMs: 4000, confirmations: 0 });
  assert.deepEqual(three.total, { minMs: 1000 + 4000 + 20, maxMs: 2000 + 4000 + 200 + 20 });
  assert.equal(three.text, 'n1 answers 5–6.2 s after n2 dies: detection 1–2 s, suspicion 4 s (3 members), then gratuitous ARP/NDP (memberlist LAN: probe 1 s/500 ms)');
  assert.deepEqual(three.gratuitous, { intervalMs: 1100, windowMs: 5000 });
  assert.deepEqual(failoverFindings(three), []);

  const ten = failoverBudget({ announcer: 'n2', next: 'n7', memberlist: ml, members: 10 });
  assert.deepEqual(ten.total, { minMs: 5020, maxMs: 2000 + 24000 + 200 + 20 });
  assert.match(ten.text, /^n7 answers 5–26\.2 s after n2 dies: detection 1–2 s, suspicion 4–24 s \(4 s if 2 confirm; 10 members\)/);

  const off = memberlistInForce(clusterStateFromObjects([speakerPod('n1', [])]), NS);
  const none = failoverBudget({ announcer: 'n2', next: 'n1', memberlist: off, members: 3 });
  assert.equal(none.total, null);
  assert.match(none.text, /^none: memberlist is off, every Node counts as alive: if n2 dies, nobody takes over until its Node object is deleted$/);
  const [f] = failoverFindings(none);
  assert.equal(f?.id, 'no-failover');
  assert.equal(f?.severity, 'warning');
  assert.match(f!.fix, /--ml-bindaddr .*--ml-labels/);
});

test('explain: the Failover line in the detail and `failover` in JSON; the no-failover warning when speakers run without memberlist', () => {
  const objects = (env: Array<Record<string, unknown>>): KubeObject[] => [
    ...['n1', 'n2', 'n3'].map((n) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: n, labels: { 'kubernetes.io/hostname': n } } })),
    ...['n1', 'n2', 'n3'].map((n) => speakerPod(n, env)),
    { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'lab', namespace: NS }, spec: { addresses: ['192.0.2.0/24'] } },
    { apiVersion: 'metallb.io/v1beta1', kind: 'L2Advertisement', metadata: { name: 'l2', namespace: NS }, spec: { ipAddressPools: ['lab'] } },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default' },
      spec: { type: 'LoadBalancer', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [{ port: 80 }] },
      status: { loadBalancer: { ingress: [{ ip: '192.0.2.10' }] } },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'web-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.244.0.1'], nodeName: 'n1', conditions: { ready: true } }],
    },
  ];
  const run = (env: Array<Record<string, unknown>>) => {
    const state = clusterStateFromObjects(objects(env));
    const ctx = diagnosticContext(state);
    return explainService({ ...ctx, service: state.services[0]! });
  };
  const e = run(ML_ENV);
  assert.ok(e.announcer);
  assert.equal(e.failover?.announcer, e.announcer);
  assert.equal(e.failover?.next, e.hashOrder[1]?.node);
  assert.equal(e.failover?.members, 3);
  assert.deepEqual(e.failover?.total, { minMs: 5020, maxMs: 6220 });
  assert.ok(!e.findings.some((f) => f.id === 'no-failover'));
  const text = explainText(e, false);
  const line = text.split('\n').find((l) => l.startsWith('Failover:'));
  assert.equal(line, `Failover:     ${e.failover!.text}`);
  assert.ok(line!.length <= 200);
  assert.equal(JSON.parse(JSON.stringify(e)).failover.suspicion.minMs, 4000);

  const d = run([]);
  assert.equal(d.failover?.total, null);
  const f = d.findings.find((x) => x.id === 'no-failover');
  assert.ok(f);
  assert.equal(f.message, `no failover: memberlist is off: if ${d.announcer} dies, nobody takes over until its Node object is deleted`);
  assert.match(f.fix, /^speaker pod metallb-system\/speaker-n1 has no --ml-bindaddr \/ METALLB_ML_BIND_ADDR and --ml-labels \/ METALLB_ML_LABELS: run the speakers with memberlist/);
  assert.match(explainText(d, false), /^Warning: +no-failover: /m);
});
