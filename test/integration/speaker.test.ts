// `metallb-ts speaker` against a real kube-apiserver + etcd (test/integration/setup): three
// simulated nodes (Node objects), Services with IPs in their status and hand-made EndpointSlices,
// an L2Advertisement, and one speaker subprocess per node. What a user would observe: exactly one
// ServiceL2Status per Service, on the node `metallb-ts explain` names; the nodeAssigned Event;
// the announcement moving when the winner loses its endpoints or the advertisement changes; a
// deleted Service's status removed; /metrics, /healthz, /readyz; a clean shutdown.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { CoreV1Api, CustomObjectsApi, DiscoveryV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { REPO_ROOT, startTestCluster, type TestCluster } from './setup/cluster.ts';
import { sleep, waitFor } from './setup/wait.ts';
import { spawnSpeaker, speakerLogs, type SpeakerProc } from './setup/speaker.ts';
import { createMetalLBObject } from './setup/metallb-objects.ts';

const NS = 'metallb-system';
const G = { group: 'metallb.io', version: 'v1beta1' } as const;
const NODES = ['node-a', 'node-b', 'node-c'];
const BIN = join(REPO_ROOT, 'bin/metallb-ts');
const run = promisify(execFile);

describe('metallb-ts speaker on 3 simulated nodes', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let discovery: DiscoveryV1Api;
  const speakers: SpeakerProc[] = [];

  const logs = (): string => speakerLogs(speakers, cluster);

  function startSpeaker(node: string): SpeakerProc {
    return spawnSpeaker(cluster.kubeconfigPath, node, ['--log-level', 'info'], {});
  }

  async function statuses(): Promise<Array<{ name: string; node: string; service: string; labels: Record<string, string>; interfaces: string[] | null }>> {
    const list = (await custom.listNamespacedCustomObject({ ...G, namespace: NS, plural: 'servicel2statuses' })) as { items: any[] };
    return list.items.map((o) => ({
      name: o.metadata.name,
      node: o.status?.node ?? '',
      service: `${o.status?.serviceNamespace}/${o.status?.serviceName}`,
      labels: o.metadata.labels ?? {},
      interfaces: o.status?.interfaces ? o.status.interfaces.map((i: { name: string }) => i.name) : null,
    }));
  }

  /** The node(s) whose ServiceL2Status names `svc`, once settled (same answer twice, 300 ms apart). */
  async function statusNodes(svc: string): Promise<string[]> {
    const a = (await statuses())
      .filter((s) => s.service === svc && s.node)
      .map((s) => s.node)
      .sort();
    await sleep(300);
    const b = (await statuses())
      .filter((s) => s.service === svc && s.node)
      .map((s) => s.node)
      .sort();
    return JSON.stringify(a) === JSON.stringify(b) ? b : [];
  }

  async function explain(svc: string): Promise<{ announcer: string | null; nodes: Array<{ node: string; decision: string; interfaces: unknown }> }> {
    const [ns, name] = svc.split('/');
    const r = await run(BIN, ['explain', `svc/${name}`, '-n', ns!, '--kubeconfig', cluster.kubeconfigPath, '-o', 'json'], { encoding: 'utf8' }).catch(
      (e: { stdout?: string; code?: number; stderr?: string }) => {
        if (e.code === 1 && e.stdout) return { stdout: e.stdout }; // exit 1: nobody announces
        throw new Error(`explain ${svc} failed: ${e.stderr}`);
      },
    );
    return JSON.parse(r.stdout);
  }

  /** Waits until exactly one ServiceL2Status names `svc`, on the node explain names; returns it. */
  async function settledOn(svc: string, not?: string): Promise<string> {
    return waitFor(
      `one ServiceL2Status for ${svc}${not ? ` not on ${not}` : ''} agreeing with explain`,
      async () => {
        const nodes = await statusNodes(svc);
        if (nodes.length !== 1 || nodes[0] === not) return undefined;
        const e = await explain(svc);
        return e.announcer === nodes[0] ? nodes[0] : undefined;
      },
      logs,
    );
  }

  async function createService(name: string, ip: string, policy: 'Cluster' | 'Local', endpointNodes: string[]): Promise<void> {
    await core.createNamespacedService({
      namespace: 'default',
      body: {
        metadata: { name, labels: { app: name } },
        spec: { type: 'LoadBalancer', externalTrafficPolicy: policy, ports: [{ name: 'http', port: 80, protocol: 'TCP' }], selector: { app: name } },
      },
    });
    await core.patchNamespacedServiceStatus({ namespace: 'default', name, body: { status: { loadBalancer: { ingress: [{ ip, ipMode: 'VIP' }] } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await putSlice(name, endpointNodes);
  }

  async function putSlice(service: string, nodes: string[]): Promise<void> {
    const body = {
      metadata: { name: `${service}-slice`, namespace: 'default', labels: { 'kubernetes.io/service-name': service, 'endpointslice.kubernetes.io/managed-by': 'metallb-ts-test' } },
      addressType: 'IPv4' as const,
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' as const }],
      endpoints: nodes.map((n, i) => ({ addresses: [`10.244.${NODES.indexOf(n) + 1}.${i + 10}`], nodeName: n, conditions: { ready: true, serving: true, terminating: false } })),
    };
    try {
      await discovery.replaceNamespacedEndpointSlice({ namespace: 'default', name: body.metadata.name, body });
    } catch {
      await discovery.createNamespacedEndpointSlice({ namespace: 'default', body });
    }
  }

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    discovery = cluster.kubeConfig.makeApiClient(DiscoveryV1Api);
    for (const n of NODES) {
      await core.createNode({ body: { metadata: { name: n, labels: { 'kubernetes.io/hostname': n, 'kubernetes.io/os': 'linux' } } } });
    }
    await createMetalLBObject(custom, 'IPAddressPool', 'lab', { addresses: ['192.0.2.0/24'] });
    await createMetalLBObject(custom, 'L2Advertisement', 'l2', { ipAddressPools: ['lab'] });
    await createService('web-a', '192.0.2.10', 'Cluster', NODES);
    await createService('web-b', '192.0.2.11', 'Cluster', NODES);
    await createService('web-local', '192.0.2.12', 'Local', NODES);
    for (const n of NODES) speakers.push(startSpeaker(n));
    await waitFor('every speaker ready', async () => (speakers.every((s) => s.lines.some((l) => l.msg === 'speaker ready')) ? true : undefined), logs, 60_000);
  });

  after(async () => {
    for (const s of speakers) if (s.proc.exitCode === null) s.proc.kill('SIGKILL');
    await cluster?.stop();
  });

  test('exactly one ServiceL2Status per Service, on the node explain names, as MetalLB writes it', async () => {
    for (const svc of ['default/web-a', 'default/web-b', 'default/web-local']) {
      const winner = await settledOn(svc);
      const [st] = (await statuses()).filter((s) => s.service === svc);
      assert.match(st!.name, /^l2-/);
      const name = svc.split('/')[1];
      assert.deepEqual(st!.labels, { 'metallb.io/node': winner, 'metallb.io/service-name': name, 'metallb.io/service-namespace': 'default' });
      assert.equal(st!.interfaces, null, 'announced on all interfaces: no list');
      const announcedBy = speakers.filter((s) => s.lines.some((l) => l.event === 'serviceAnnounced' && l.service === svc)).map((s) => s.node);
      assert.deepEqual(announcedBy, [winner], `${svc}: only the winner logs serviceAnnounced`);
      const line = speakers.find((s) => s.node === winner)!.lines.find((l) => l.event === 'serviceAnnounced' && l.service === svc)!;
      assert.equal(line.level, 'info');
      assert.equal(line.protocol, 'layer2');
      assert.equal(line.pool, 'lab');
      assert.equal(line.msg, 'service has IP, announcing');
      assert.ok(Array.isArray(line.ips));
    }
  });

  test('the nodeAssigned Event names the winner, from metallb-speaker', async () => {
    const winner = await settledOn('default/web-a');
    const ev = await waitFor(
      'nodeAssigned event on web-a',
      async () => {
        const list = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'involvedObject.kind=Service,involvedObject.name=web-a' });
        return list.items.find((e) => e.reason === 'nodeAssigned');
      },
      logs,
    );
    assert.equal(ev.type, 'Normal');
    assert.equal(ev.message, `announcing from node "${winner}" with protocol "layer2"`);
    assert.equal(ev.source?.component, 'metallb-speaker');
    // controller-runtime's recorder (GetEventRecorderFor) gives MetalLB's events no source host.
    assert.equal(ev.source?.host, undefined);
  });

  test("removing the winner's endpoint (externalTrafficPolicy Local) moves the announcement", async () => {
    const first = await settledOn('default/web-local');
    await putSlice(
      'web-local',
      NODES.filter((n) => n !== first),
    );
    const second = await settledOn('default/web-local', first);
    assert.notEqual(second, first);
    const withdrawn = speakers.find((s) => s.node === first)!.lines.find((l) => l.event === 'serviceWithdrawn' && l.service === 'default/web-local');
    assert.equal(withdrawn?.reason, 'notOwner');
  });

  test('changing the L2Advertisement moves the announcement and the status lists its interfaces', async () => {
    const first = await settledOn('default/web-a');
    const others = NODES.filter((n) => n !== first);
    await custom.patchNamespacedCustomObject(
      {
        ...G,
        namespace: NS,
        plural: 'l2advertisements',
        name: 'l2',
        body: { spec: { nodeSelectors: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: others }] }], interfaces: ['eth0'] } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const second = await settledOn('default/web-a', first);
    assert.ok(others.includes(second));
    const st = await waitFor(
      'interfaces in the status',
      async () => {
        const s = (await statuses()).find((x) => x.service === 'default/web-a');
        return s?.interfaces ? s : undefined;
      },
      logs,
    );
    assert.deepEqual(st.interfaces, ['eth0']);
    const e = await explain('default/web-a');
    assert.deepEqual(e.nodes.find((n) => n.node === second)?.interfaces, ['eth0']);
    const withdrawn = speakers
      .find((s) => s.node === first)!
      .lines.filter((l) => l.event === 'serviceWithdrawn' && l.service === 'default/web-a')
      .at(-1);
    assert.equal(withdrawn?.reason, 'noMatchingAdvertisement');
  });

  test('a deleted Service loses its ServiceL2Status', async () => {
    await settledOn('default/web-b');
    await core.deleteNamespacedService({ namespace: 'default', name: 'web-b' });
    await waitFor('no ServiceL2Status for web-b', async () => ((await statuses()).some((s) => s.service === 'default/web-b') ? undefined : true), logs);
    const reasons = speakers.flatMap((s) => s.lines.filter((l) => l.event === 'serviceWithdrawn' && l.service === 'default/web-b').map((l) => l.reason));
    assert.deepEqual(reasons, ['serviceDeleted']);
  });

  test('/metrics, /healthz and /readyz', async () => {
    const winner = await settledOn('default/web-a');
    const s = speakers.find((x) => x.node === winner)!;
    assert.ok(s.metrics && s.health, 'the startup log names both addresses');
    const text = await (await fetch(`http://${s.metrics}/metrics`)).text();
    assert.match(text, new RegExp(`metallb_speaker_announced\\{ip="192\\.0\\.2\\.10",node="${winner}",protocol="layer2",service="default/web-a"\\} 1`));
    assert.match(text, /metallb_k8s_client_config_loaded_bool 1/);
    assert.equal((await fetch(`http://${s.health}/healthz`)).status, 200);
    assert.equal((await fetch(`http://${s.health}/readyz`)).status, 200);
    // memberlist off: /debug/members lists every Node as alive.
    assert.deepEqual(await (await fetch(`http://${s.metrics}/debug/members`)).json(), { memberlist: false, alive: NODES });
    const loser = speakers.find((x) => x.node !== winner)!;
    const other = await (await fetch(`http://${loser.metrics}/metrics`)).text();
    assert.doesNotMatch(other, /metallb_speaker_announced\{[^}]*service="default\/web-a"/);
  });

  test('SIGTERM withdraws everything: exit 0 and no ServiceL2Status left', async () => {
    for (const s of speakers) s.proc.kill('SIGTERM');
    const codes = await Promise.all(speakers.map((s) => s.exit));
    assert.deepEqual(codes, [0, 0, 0], logs());
    assert.deepEqual(await statuses(), []);
    assert.ok(speakers.some((s) => s.lines.some((l) => l.event === 'serviceWithdrawn' && l.reason === 'shutdown')));
  });
});

describe('metallb-ts speaker with memberlist (--ml-bindaddr, --ml-labels)', () => {
  let cluster: TestCluster;
  const procs: SpeakerProc[] = [];
  const MEMBERS = [
    { node: 'ml-a', ip: '127.0.31.1' },
    { node: 'ml-b', ip: '127.0.31.2' },
  ];
  const LABELS = { app: 'metallb', component: 'speaker' };

  before(async () => {
    cluster = await startTestCluster();
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    for (const { node, ip } of MEMBERS) {
      await core.createNode({ body: { metadata: { name: node, labels: { 'kubernetes.io/hostname': node } } } });
      await core.createNamespacedPod({
        namespace: NS,
        body: {
          metadata: { name: `speaker-${node}`, labels: LABELS },
          spec: { nodeName: node, automountServiceAccountToken: false, containers: [{ name: 'speaker', image: 'metallb-ts:0.1.0' }] },
        },
      });
      await core.patchNamespacedPodStatus(
        { namespace: NS, name: `speaker-${node}`, body: { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
  });

  after(async () => {
    for (const p of procs) if (p.proc.exitCode === null) p.proc.kill('SIGKILL');
    await cluster?.stop();
  });

  test('two speakers find each other through the speaker pods and gossip', async () => {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = createServer();
      srv.once('error', reject);
      srv.listen(0, MEMBERS[0]!.ip, () => {
        const p = (srv.address() as AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    for (const { node, ip } of MEMBERS) {
      const s = spawnSpeaker(cluster.kubeconfigPath, node, ['--ml-bindaddr', ip, '--ml-bindport', String(port), '--ml-labels', 'app=metallb,component=speaker'], { METALLB_ML_SECRET_KEY_PATH: '' });
      procs.push(s);
    }
    const detail = () =>
      procs
        .map(
          (s) =>
            `--- ${s.node}\n${s.lines
              .slice(-20)
              .map((l) => JSON.stringify(l))
              .join('\n')}\n${s.stderr.join('').slice(-800)}`,
        )
        .join('\n');
    const both = MEMBERS.map((m) => m.node).sort();
    for (const s of procs) {
      await waitFor(
        `${s.node} sees both speakers in memberlist`,
        async () => {
          const last = s.lines.filter((l) => l.op === 'memberDiscovery' && Array.isArray(l.alive)).at(-1);
          return last && JSON.stringify(last.alive) === JSON.stringify(both) ? true : undefined;
        },
        detail,
      );
    }
    // /debug/members on the metrics port, and `metallb-ts members` reading it.
    for (const s of procs) {
      const metrics = s.lines.find((l) => l.op === 'startup' && typeof l.metrics === 'string')?.metrics as string | undefined;
      assert.ok(metrics, `${s.node}: the startup log names the metrics address\n${detail()}`);
      s.metrics = metrics;
      const view = (await (await fetch(`http://${metrics}/debug/members`)).json()) as { self: string; members: Array<{ name: string; address: string; port: number; state: string; incarnation: number }> };
      assert.equal(view.self, s.node);
      assert.deepEqual(
        view.members.map((m) => [m.name, m.address, m.port, m.state]),
        MEMBERS.map((m) => [m.node, m.ip, port, 'alive']),
        JSON.stringify(view),
      );
      for (const m of view.members) assert.ok(Number.isInteger(m.incarnation) && m.incarnation >= 1, JSON.stringify(m));
    }
    const table = await run(BIN, ['members', '--speaker', procs[0]!.metrics!]);
    assert.equal(table.stderr, '');
    const rows = table.stdout
      .trimEnd()
      .split('\n')
      .map((l) => l.split(/\s+/));
    assert.deepEqual(rows[0], ['NAME', 'ADDRESS', 'STATE', 'INCARNATION']);
    assert.deepEqual(
      rows.slice(1).map((r) => r.slice(0, 3)),
      MEMBERS.map((m) => [m.node, m.ip, 'alive']),
      table.stdout,
    );
    const json = JSON.parse((await run(BIN, ['members', '--speaker', procs[1]!.metrics!, '-o', 'json'])).stdout) as { self: string; members: Array<{ name: string; state: string }> };
    assert.equal(json.self, MEMBERS[1]!.node);
    assert.deepEqual(
      json.members.map((m) => [m.name, m.state]),
      MEMBERS.map((m) => [m.node, 'alive']),
    );
    for (const s of procs) s.proc.kill('SIGTERM');
    for (const s of procs) assert.equal(await s.exit, 0, detail());
  });
});
