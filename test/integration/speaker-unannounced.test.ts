// "Nobody announces" (issue #12 item 7) against a real kube-apiserver + etcd: three simulated
// nodes, one speaker subprocess per node, a Service whose pool's only L2Advertisement selects the
// one node carrying node.kubernetes.io/exclude-from-external-load-balancers (the exclusion-label
// trap). With --no-unannounced-events the speakers log it and record no Event; without, exactly
// one Warning Event `notAnnounced` lands on the Service, from metallb-speaker, naming the label —
// one Event even though three speakers run and resync — and the first speaker's /metrics has the
// gauge. Removing the label makes node-c announce and the gauge go.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, CustomObjectsApi, DiscoveryV1Api, PatchStrategy, setHeaderOptions, type CoreV1Event } from '@kubernetes/client-node';
import { startTestCluster, type TestCluster } from './setup/cluster.ts';
import { sleep, waitFor } from './setup/wait.ts';
import { spawnSpeaker, speakerLogs, type SpeakerProc } from './setup/speaker.ts';
import { createMetalLBObject } from './setup/metallb-objects.ts';

const NODES = ['node-a', 'node-b', 'node-c'];
const EXCL = 'node.kubernetes.io/exclude-from-external-load-balancers';

describe('metallb-ts speaker: the notAnnounced Warning Event, once per cluster', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let speakers: SpeakerProc[] = [];
  const logs = (): string => speakerLogs(speakers, cluster);

  async function warnings(): Promise<CoreV1Event[]> {
    const list = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'involvedObject.kind=Service,involvedObject.name=trapped' });
    return list.items.filter((e) => e.type === 'Warning');
  }

  async function startSpeakers(args: string[]): Promise<void> {
    speakers = NODES.map((n) => spawnSpeaker(cluster.kubeconfigPath, n, ['--log-level', 'info', ...args]));
    await waitFor('every speaker ready', async () => (speakers.every((s) => s.lines.some((l) => l.msg === 'speaker ready')) ? true : undefined), logs, 60_000);
  }

  async function stopSpeakers(): Promise<void> {
    for (const s of speakers) s.proc.kill('SIGTERM');
    await Promise.all(speakers.map((s) => s.exit));
  }

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const discovery = cluster.kubeConfig.makeApiClient(DiscoveryV1Api);
    for (const n of NODES) {
      const labels: Record<string, string> = { 'kubernetes.io/hostname': n };
      if (n === 'node-c') labels[EXCL] = '';
      await core.createNode({ body: { metadata: { name: n, labels } } });
    }
    await createMetalLBObject(custom, 'IPAddressPool', 'lab', { addresses: ['192.0.2.0/24'] });
    await createMetalLBObject(custom, 'L2Advertisement', 'l2-node-c', { ipAddressPools: ['lab'], nodeSelectors: [{ matchLabels: { 'kubernetes.io/hostname': 'node-c' } }] });
    await core.createNamespacedService({
      namespace: 'default',
      body: {
        metadata: { name: 'trapped', labels: { app: 'trapped' } },
        spec: { type: 'LoadBalancer', ports: [{ name: 'http', port: 80, protocol: 'TCP' }], selector: { app: 'trapped' } },
      },
    });
    await core.patchNamespacedServiceStatus(
      { namespace: 'default', name: 'trapped', body: { status: { loadBalancer: { ingress: [{ ip: '192.0.2.20', ipMode: 'VIP' }] } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await discovery.createNamespacedEndpointSlice({
      namespace: 'default',
      body: {
        metadata: { name: 'trapped-slice', namespace: 'default', labels: { 'kubernetes.io/service-name': 'trapped', 'endpointslice.kubernetes.io/managed-by': 'metallb-ts-test' } },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: [{ addresses: ['10.244.1.10'], nodeName: 'node-a', conditions: { ready: true, serving: true, terminating: false } }],
      },
    });
  });

  after(async () => {
    for (const s of speakers) if (s.proc.exitCode === null) s.proc.kill('SIGKILL');
    await cluster?.stop();
  });

  test('--no-unannounced-events: the reporting speaker logs it, no Event is recorded', async () => {
    await startSpeakers(['--no-unannounced-events']);
    const line = await waitFor(
      'the warn line of the reporting speaker',
      async () => speakers.flatMap((s) => s.lines.filter((l) => l.op === 'unannounced' && l.level === 'warn').map((l) => ({ node: s.node, l })))[0],
      logs,
    );
    assert.equal(line.node, 'node-a', 'memberlist off: the first Node in name order reports');
    assert.match(String(line.l.reason), new RegExp(`node-c: labelled ${EXCL}`));
    await sleep(1500); // the recorder writes within milliseconds; give it time to misbehave
    assert.deepEqual(await warnings(), []);
    await stopSpeakers();
  });

  test('exactly one Warning Event notAnnounced with the reason, from metallb-speaker; the gauge on the first speaker', async () => {
    await startSpeakers([]);
    const ev = await waitFor('the notAnnounced Warning Event', async () => (await warnings())[0], logs);
    assert.equal(ev.reason, 'notAnnounced');
    assert.equal(ev.source?.component, 'metallb-speaker');
    assert.equal(ev.message, `no node announces 192.0.2.20: no candidate node (node-c: labelled ${EXCL}; node-a, node-b: no L2Advertisement applying to the service selects it)`);
    // Three speakers, resyncs (a Node label change elsewhere forces a full one): still one Event.
    await core.patchNode({ name: 'node-b', body: { metadata: { labels: { rack: 'r1' } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await sleep(1500);
    const all = await warnings();
    assert.equal(all.length, 1, JSON.stringify(all.map((e) => [e.reason, e.message, e.count])));
    const reporters = speakers.filter((s) => s.lines.some((l) => l.op === 'unannounced' && l.level === 'warn')).map((s) => s.node);
    assert.deepEqual(reporters, ['node-a']);
    const metrics = await (await fetch(`http://${speakers[0]!.metrics}/metrics`)).text();
    assert.match(metrics, /metallb_speaker_unannounced\{service="default\/trapped",ip="192\.0\.2\.20"\} 1/);
    const other = await (await fetch(`http://${speakers[1]!.metrics}/metrics`)).text();
    assert.doesNotMatch(other, /metallb_speaker_unannounced\{/);
  });

  test('the label removed: node-c announces and the gauge goes', async () => {
    await core.patchNode({ name: 'node-c', body: { metadata: { labels: { [EXCL]: null } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await waitFor('node-c announces', async () => (speakers[2]!.lines.some((l) => l.event === 'serviceAnnounced' && l.service === 'default/trapped') ? true : undefined), logs);
    await waitFor(
      'the gauge gone',
      async () => {
        const metrics = await (await fetch(`http://${speakers[0]!.metrics}/metrics`)).text();
        return /metallb_speaker_unannounced\{/.test(metrics) ? undefined : true;
      },
      logs,
    );
    await stopSpeakers();
  });
});
