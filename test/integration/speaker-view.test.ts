// `explain` and `members` asking a running speaker for its memberlist view, against a real
// kube-apiserver: two speakers (ml-a, ml-b) gossip over memberlist on 127.0.32.x; a third Node,
// ml-c, has no speaker. The Service's IP is chosen so ml-c comes first in the hash order: counting
// every Node (the derivation without a speaker) names ml-c, the speakers' own election cannot.
//
// (a) `explain --speaker 127.0.0.1:PORT`: the speaker's memberlist view, ml-c dropped, the winner
//     is the node whose ServiceL2Status the speakers wrote, and the output says where the view came from.
// (c) no speaker pod, MetalLB's own speaker pods (never asked), a speaker pod the API server cannot
//     reach, or one that trickles its answer (given up after 2 s): the derived view and the reason.
// (b) the API server's pod proxy: kube-apiserver refuses to proxy to loopback pod IPs, so a speaker
//     pod gets 192.0.2.250 inside a network namespace this test creates (veth to the host, /32 routes
//     only: the host's own network may be 192.0.2.0/24), where a relay forwards to a unix socket,
//     and a relay in this process forwards that to ml-b's metrics port on 127.0.0.1. `explain` and
//     `members` without `--speaker` find the pod and read the view through the API server.
// Speakers run with `--l2-data-plane log` (the host's network namespace: nothing on the wire).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, DiscoveryV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { startTestCluster, type TestCluster } from './setup/cluster.ts';
import { waitFor } from './setup/wait.ts';
import { spawnSpeaker, speakerLogs, type SpeakerProc } from './setup/speaker.ts';
import { electionDigestHex } from '../../src/core/election/index.ts';
import { runCliAsync } from '../helpers/cli.ts';
import { createMetalLBObject } from './setup/metallb-objects.ts';

const NS = 'metallb-system';
const G = { group: 'metallb.io', version: 'v1beta1' } as const;
const MEMBERS = [
  { node: 'ml-a', ip: '127.0.32.1' },
  { node: 'ml-b', ip: '127.0.32.2' },
];
const NODES = ['ml-a', 'ml-b', 'ml-c'];
/** The speaker pod behind the pod proxy: inside the test's namespace. */
const POD_IP = '192.0.2.250';
const POD_PORT = 9120;

/** The first 192.0.2.x whose hash order puts ml-c (no speaker) first, and the winner among the speakers. */
function pickIP(): { ip: string; winner: string } {
  for (let i = 10; i < 250; i++) {
    const ip = `192.0.2.${i}`;
    const order = [...NODES].sort((a, b) => (electionDigestHex(a, ip) < electionDigestHex(b, ip) ? -1 : 1));
    if (order[0] === 'ml-c') return { ip, winner: order[1]! };
  }
  throw new Error('no IP puts ml-c first');
}

function sh(...cmd: string[]): string {
  const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd.join(' ')}: ${r.stderr || r.error?.message}`);
  return r.stdout;
}

/**
 * Removes namespaces (and their host-side veth) left by earlier runs of this file whose process is
 * gone, e.g. killed by SIGKILL before its cleanup ran. Names carry the pid: mlts-sv<pid>.
 */
function reapStaleNetns(): void {
  const list = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '';
  for (const m of list.matchAll(/^mlts-sv(\d+)\b/gm)) {
    const pid = Number(m[1]);
    if (pid === process.pid) continue;
    try {
      process.kill(pid, 0);
    } catch {
      spawnSync('ip', ['netns', 'del', m[0]]);
      spawnSync('ip', ['link', 'del', `svh${pid % 100000}`]);
    }
  }
}

/** Pipes two sockets into each other; closing one closes the other. */
function splice(a: Socket, b: Socket): void {
  a.pipe(b).pipe(a);
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
}

describe("explain and members use a running speaker's memberlist view", () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  const speakers: SpeakerProc[] = [];
  const { ip: IP, winner: WINNER } = pickIP();
  const netns = `mlts-sv${process.pid}`;
  const vethHost = `svh${process.pid % 100000}`;
  const vethNs = `svn${process.pid % 100000}`;
  let netnsMade = false;
  let nsRelay: ChildProcess | undefined;
  let hostRelay: Server | undefined;
  let dir = '';

  const logs = (): string => speakerLogs(speakers, cluster);
  const cli = (args: string[]) => runCliAsync([...args, '--kubeconfig', cluster.kubeconfigPath]);
  const explainJSON = async (args: string[] = []) => {
    const r = await cli(['explain', 'svc/web', '-n', 'default', '-o', 'json', ...args]);
    assert.ok(r.status === 0 || r.status === 1, `explain exit ${r.status}: ${r.stderr}`);
    return { out: JSON.parse(r.stdout) as { announcer: string | null; speakers: Record<string, unknown>; l2: { trace: Array<{ step: string; dropped: Array<{ node: string }> }> } }, stderr: r.stderr };
  };

  function cleanupNetns(): void {
    nsRelay?.kill('SIGKILL');
    if (netnsMade) spawnSync('ip', ['netns', 'del', netns]);
    spawnSync('ip', ['link', 'del', vethHost]); // gone with the namespace's end; only if it survived
    netnsMade = false;
  }

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const discovery = cluster.kubeConfig.makeApiClient(DiscoveryV1Api);
    for (const n of NODES) await core.createNode({ body: { metadata: { name: n, labels: { 'kubernetes.io/hostname': n } } } });
    await createMetalLBObject(custom, 'IPAddressPool', 'lab', { addresses: ['192.0.2.0/24'] });
    await createMetalLBObject(custom, 'L2Advertisement', 'l2', { ipAddressPools: ['lab'] });
    await core.createNamespacedService({
      namespace: 'default',
      body: {
        metadata: { name: 'web' },
        spec: { type: 'LoadBalancer', ports: [{ name: 'http', port: 80, protocol: 'TCP' }], selector: { app: 'web' } },
      },
    });
    await core.patchNamespacedServiceStatus(
      { namespace: 'default', name: 'web', body: { status: { loadBalancer: { ingress: [{ ip: IP, ipMode: 'VIP' }] } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await discovery.createNamespacedEndpointSlice({
      namespace: 'default',
      body: {
        metadata: { name: 'web-slice', labels: { 'kubernetes.io/service-name': 'web' } },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: NODES.map((n, i) => ({ addresses: [`10.244.${i + 1}.10`], nodeName: n, conditions: { ready: true, serving: true, terminating: false } })),
      },
    });
    // The pods the speakers join through (--ml-labels app=ml-join): not speaker pods by label, so
    // neither discovery nor the derivation from the state sees them.
    for (const { node, ip } of MEMBERS) {
      await core.createNamespacedPod({
        namespace: NS,
        body: {
          metadata: { name: `join-${node}`, labels: { app: 'ml-join' } },
          spec: { nodeName: node, automountServiceAccountToken: false, containers: [{ name: 'speaker', image: 'metallb-ts:0.1.0' }] },
        },
      });
      await core.patchNamespacedPodStatus(
        { namespace: NS, name: `join-${node}`, body: { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
    const port = await new Promise<number>((resolve, reject) => {
      const srv = createServer();
      srv.once('error', reject);
      srv.listen(0, MEMBERS[0]!.ip, () => {
        const p = (srv.address() as AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    for (const { node, ip } of MEMBERS) {
      speakers.push(spawnSpeaker(cluster.kubeconfigPath, node, ['--log-level', 'info', '--ml-bindaddr', ip, '--ml-bindport', String(port), '--ml-labels', 'app=ml-join'], { METALLB_ML_SECRET_KEY_PATH: '' }));
    }
    for (const s of speakers) {
      await waitFor(
        `${s.node} sees both speakers in memberlist`,
        async () => {
          if (!s.metrics) return undefined;
          const v = (await (await fetch(`http://${s.metrics}/debug/members`)).json()) as { members: Array<{ name: string; state: string }> };
          return v.members.filter((m) => m.state === 'alive').length === 2 ? true : undefined;
        },
        logs,
        60_000,
      );
    }
  });

  after(async () => {
    for (const s of speakers) if (s.proc.exitCode === null) s.proc.kill('SIGKILL');
    cleanupNetns();
    hostRelay?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await cluster?.stop();
  });

  test("(a) explain --speaker HOST:PORT: the speaker's memberlist decides, ml-c (no speaker) is out, and the speakers agree", async () => {
    const a = speakers.find((s) => s.node === 'ml-a')!;
    const { out, stderr } = await explainJSON(['--speaker', a.metrics!]);
    assert.equal(stderr, '');
    assert.deepEqual(out.speakers, { source: 'memberlist', nodes: ['ml-a', 'ml-b'], from: { via: 'address', address: a.metrics, pod: null, node: 'ml-a' } });
    const dropped = out.l2.trace.find((t) => t.step === 'speakers')!.dropped.map((d) => d.node);
    assert.deepEqual(dropped, ['ml-c']);
    assert.equal(out.announcer, WINNER);
    // What the speakers themselves decided: the ServiceL2Status they wrote names the same node.
    const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const statusNode = await waitFor(
      'a ServiceL2Status for default/web',
      async () => {
        const list = (await custom.listNamespacedCustomObject({ ...G, namespace: NS, plural: 'servicel2statuses' })) as { items: Array<{ status?: { node?: string; serviceName?: string } }> };
        const nodes = list.items.filter((o) => o.status?.serviceName === 'web').map((o) => o.status?.node);
        return nodes.length === 1 ? nodes[0] : undefined;
      },
      logs,
    );
    assert.equal(statusNode, out.announcer);
    const text = await cli(['explain', 'svc/web', '-n', 'default', '--speaker', a.metrics!]);
    assert.match(text.stdout, new RegExp(`^Speakers: +2 alive \\(memberlist of speaker ${a.metrics!.replace(/\./g, '\\.')} \\(node ml-a\\)\\): ml-a, ml-b$`, 'm'));
    const whois = JSON.parse((await cli(['whois', IP, '-o', 'json', '--speaker', a.metrics!])).stdout);
    assert.equal(whois.holders[0].announcer, WINNER);
    assert.equal(whois.speakers.source, 'memberlist');
  });

  test('(c) no speaker pod: the derived view (every Node, so ml-c "wins") and the reason; an unreachable --speaker is exit 3', async () => {
    const { out } = await explainJSON();
    assert.deepEqual(out.speakers, { source: 'all-nodes', nodes: null, fallback: `no speaker reachable: no Running speaker pod matches component=speaker in ${NS}` });
    assert.equal(out.announcer, 'ml-c');
    const text = await cli(['explain', 'svc/web', '-n', 'default']);
    assert.match(text.stdout, /^Speakers: +every node \(all-nodes; no speaker reachable: no Running speaker pod matches component=speaker in metallb-system\)$/m);
    const none = await cli(['members']);
    assert.equal(none.status, 3);
    assert.equal(none.stderr, `metallb-ts: no speaker reachable: no Running speaker pod matches component=speaker in ${NS}\n`);
    const bad = await cli(['explain', 'svc/web', '-n', 'default', '--speaker-selector', 'a b c']);
    assert.equal(bad.status, 2, bad.stderr);
    assert.match(bad.stderr, /^metallb-ts: invalid --speaker-selector "a b c": HTTP 400: [^\n]*\n$/);
    const closed = await new Promise<number>((r) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as AddressInfo).port;
        s.close(() => r(p));
      });
    });
    const gone = await cli(['explain', 'svc/web', '-n', 'default', '--speaker', `127.0.0.1:${closed}`]);
    assert.equal(gone.status, 3);
    assert.equal(gone.stderr, `metallb-ts: cannot reach speaker 127.0.0.1:${closed}: ECONNREFUSED\n`);
    // The unknown Service is reported first (exit 2), not the unreachable speaker (exit 3).
    const unknown = await cli(['explain', 'svc/nonexistent', '-n', 'default', '--speaker', `127.0.0.1:${closed}`]);
    assert.equal(unknown.status, 2, unknown.stderr);
    assert.equal(unknown.stderr, 'metallb-ts: service default/nonexistent not found in the cluster state\n');
  });

  test('(c) MetalLB v0.16.1 speaker pods (HTTPS metrics on 9120, no /debug/members) are not asked: the reason says so', async () => {
    // Two pods as MetalLB's native manifest makes them (its DaemonSet's container and ports).
    const names = ['speaker-mlb-a', 'speaker-mlb-b'];
    for (const [i, name] of names.entries()) {
      await core.createNamespacedPod({
        namespace: NS,
        body: {
          metadata: { name, labels: { app: 'metallb', component: 'speaker' } },
          spec: {
            nodeName: NODES[i]!,
            automountServiceAccountToken: false,
            containers: [
              {
                name: 'speaker',
                image: 'quay.io/metallb/speaker:v0.16.1',
                args: ['--port=9120', '--log-level=info'],
                ports: [
                  { name: 'metricshttps', containerPort: 9120 },
                  { name: 'memberlist-tcp', containerPort: 7946 },
                  { name: 'memberlist-udp', containerPort: 7946, protocol: 'UDP' },
                ],
              },
            ],
          },
        },
      });
      await core.patchNamespacedPodStatus(
        {
          namespace: NS,
          name,
          body: {
            status: {
              phase: 'Running',
              podIP: `198.51.100.${i + 1}`,
              podIPs: [{ ip: `198.51.100.${i + 1}` }],
              conditions: [{ type: 'Ready', status: 'True' }],
            },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
    try {
      const reason = `no speaker reachable: pods ${NS}/speaker-mlb-a (node ml-a), ${NS}/speaker-mlb-b (node ml-b): a MetalLB speaker serves no memberlist view`;
      const { out, stderr } = await explainJSON();
      assert.equal(stderr, '');
      assert.deepEqual(out.speakers, { source: 'speaker-pods', nodes: ['ml-a', 'ml-b'], fallback: reason });
      const members = await cli(['members']);
      assert.equal(members.status, 3);
      assert.equal(members.stderr, `metallb-ts: ${reason}\n`);
      const sel = await cli(['members', '--speaker-selector', 'app=metallb', '--node', 'ml-b']);
      assert.equal(sel.stderr, `metallb-ts: no speaker reachable: pod ${NS}/speaker-mlb-b (node ml-b): a MetalLB speaker serves no memberlist view\n`);
    } finally {
      for (const name of names) await core.deleteNamespacedPod({ namespace: NS, name, gracePeriodSeconds: 0 });
      await waitFor(
        'the MetalLB speaker pods are gone',
        async () => {
          const list = await core.listNamespacedPod({ namespace: NS, labelSelector: 'app=metallb' });
          return list.items.length === 0 ? true : undefined;
        },
        logs,
      );
    }
  });

  describe("through the API server's pod proxy (needs root and iproute2: a network namespace for the pod IP)", () => {
    before(async () => {
      assert.equal(process.getuid?.(), 0, 'this test creates a network namespace: run it as root (CI does)');
      reapStaleNetns();
      process.once('exit', cleanupNetns);
      for (const sig of ['SIGINT', 'SIGTERM'] as const) {
        process.once(sig, () => {
          cleanupNetns();
          process.exit(128 + (sig === 'SIGINT' ? 2 : 15));
        });
      }
      dir = mkdtempSync(join(tmpdir(), 'mlts-sv-'));
      // netns + veth; the host side has no address of its own and one /32 route to the pod IP (the
      // host's network may be 192.0.2.0/24: no prefix route, no host address in it).
      sh('ip', 'netns', 'add', netns);
      netnsMade = true;
      sh('ip', 'link', 'add', vethHost, 'type', 'veth', 'peer', 'name', vethNs, 'netns', netns);
      sh('ip', '-n', netns, 'link', 'set', 'lo', 'up');
      sh('ip', '-n', netns, 'addr', 'add', `${POD_IP}/32`, 'dev', vethNs);
      sh('ip', '-n', netns, 'link', 'set', vethNs, 'up');
      sh('ip', '-n', netns, 'route', 'add', 'default', 'dev', vethNs);
      sh('ip', 'link', 'set', vethHost, 'up');
      sh('ip', 'route', 'add', `${POD_IP}/32`, 'dev', vethHost);
      // The speaker pod on ml-b, as a DaemonSet pod looks once it runs.
      await core.createNamespacedPod({
        namespace: NS,
        body: {
          metadata: { name: 'speaker-ml-b', labels: { app: 'metallb-ts', component: 'speaker' } },
          spec: {
            nodeName: 'ml-b',
            automountServiceAccountToken: false,
            containers: [{ name: 'speaker', image: 'metallb-ts:0.1.0', args: ['speaker', `--port=${POD_PORT}`], ports: [{ name: 'monitoring', containerPort: POD_PORT }] }],
          },
        },
      });
      await core.patchNamespacedPodStatus(
        {
          namespace: NS,
          name: 'speaker-ml-b',
          body: {
            status: {
              phase: 'Running',
              podIP: POD_IP,
              podIPs: [{ ip: POD_IP }],
              conditions: [{ type: 'Ready', status: 'True' }],
            },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    });

    test('(c) a speaker pod nobody listens for: connection refused through the API server, the derived view (its Ready pod)', async () => {
      const { out } = await explainJSON();
      assert.equal(out.speakers.source, 'speaker-pods');
      assert.deepEqual(out.speakers.nodes, ['ml-b']);
      assert.match(
        String(out.speakers.fallback),
        new RegExp(`^no speaker reachable: pod ${NS}/speaker-ml-b \\(node ml-b\\) port ${POD_PORT}: HTTP 503: .*${POD_IP.replace(/\./g, '\\.')}:${POD_PORT}.*connection refused`),
        String(out.speakers.fallback),
      );
    });

    test("(b) explain and members without --speaker read the speaker pod's view through the pod proxy", async () => {
      const b = speakers.find((s) => s.node === 'ml-b')!;
      const [, metricsPort] = b.metrics!.split(':');
      const sock = join(dir, 'relay.sock');
      hostRelay = createServer((down) => splice(down, connect(Number(metricsPort), '127.0.0.1')));
      await new Promise<void>((r) => hostRelay!.listen(sock, () => r()));
      const script = `const net = require('node:net');
        net.createServer((c) => { const u = net.connect(process.env.SOCK); c.pipe(u).pipe(c); c.on('error', () => u.destroy()); u.on('error', () => c.destroy()); })
          .listen(Number(process.env.PORT), process.env.HOST, () => console.log('listening'));`;
      nsRelay = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SOCK: sock, PORT: String(POD_PORT), HOST: POD_IP } });
      await new Promise<void>((resolve, reject) => {
        nsRelay!.stdout!.once('data', () => resolve());
        nsRelay!.once('exit', (code) => reject(new Error(`relay in ${netns} exited ${code}`)));
      });

      const { out, stderr } = await explainJSON();
      assert.equal(stderr, '');
      assert.deepEqual(out.speakers, { source: 'memberlist', nodes: ['ml-a', 'ml-b'], from: { via: 'pod-proxy', address: `${POD_IP}:${POD_PORT}`, pod: `${NS}/speaker-ml-b`, node: 'ml-b' } });
      assert.equal(out.announcer, WINNER);
      const text = await cli(['explain', 'svc/web', '-n', 'default']);
      assert.match(text.stdout, new RegExp(`^Speakers: +2 alive \\(memberlist of the speaker on node ml-b \\(pod ${NS}/speaker-ml-b, through the API server\\)\\): ml-a, ml-b$`, 'm'));

      const table = await cli(['members']);
      assert.equal(table.status, 0, table.stderr);
      const lines = table.stdout.trimEnd().split('\n');
      assert.equal(lines[0], `speaker pod ${NS}/speaker-ml-b on node ml-b (${POD_IP}:${POD_PORT}, through the API server)`);
      assert.deepEqual(
        lines.slice(2).map((l) => l.split(/\s+/).slice(0, 3)),
        MEMBERS.map((m) => [m.node, m.ip, 'alive']),
      );
      const json = JSON.parse((await cli(['members', '--node', 'ml-b', '-o', 'json'])).stdout) as { self: string };
      assert.equal(json.self, 'ml-b');
      const elsewhere = await cli(['members', '--node', 'ml-a']);
      assert.equal(elsewhere.status, 3);
      assert.equal(elsewhere.stderr, `metallb-ts: no speaker reachable: no Running speaker pod matches component=speaker in ${NS} on node ml-a\n`);
      // --no-speaker-discovery: the derivation from the state, no fallback reason.
      const off = await explainJSON(['--no-speaker-discovery']);
      assert.deepEqual(off.out.speakers, { source: 'speaker-pods', nodes: ['ml-b'] });
    });

    test('(c) a speaker pod that trickles its answer through the API server: given up after 2 s, not waited for forever', { timeout: 60_000 }, async () => {
      // A "speaker" in the namespace that answers 200 and then one byte every 300 ms, forever: the
      // API server's proxy flushes the bytes on, so the connection is never idle.
      const port = POD_PORT + 1;
      const script = `require('node:http').createServer((req, res) => { res.writeHead(200, { 'Content-Type': 'application/json' });
          const t = setInterval(() => res.write(' '), 300); res.on('close', () => clearInterval(t)); })
        .listen(Number(process.env.PORT), process.env.HOST, () => console.log('listening'));`;
      const trickler = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PORT: String(port), HOST: POD_IP } });
      try {
        await new Promise<void>((resolve, reject) => {
          trickler.stdout!.once('data', () => resolve());
          trickler.once('exit', (code) => reject(new Error(`trickler in ${netns} exited ${code}`)));
        });
        await core.createNamespacedPod({
          namespace: NS,
          body: {
            metadata: { name: 'speaker-trickle', labels: { app: 'metallb-ts', component: 'speaker' } },
            spec: {
              nodeName: 'ml-a',
              automountServiceAccountToken: false,
              containers: [{ name: 'speaker', image: 'metallb-ts:0.1.0', args: ['speaker', `--port=${port}`], ports: [{ name: 'monitoring', containerPort: port }] }],
            },
          },
        });
        await core.patchNamespacedPodStatus(
          {
            namespace: NS,
            name: 'speaker-trickle',
            body: {
              status: {
                phase: 'Running',
                podIP: POD_IP,
                podIPs: [{ ip: POD_IP }],
                conditions: [{ type: 'Ready', status: 'True' }],
              },
            },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        const t0 = Date.now();
        const r = await cli(['members', '--node', 'ml-a']);
        const took = Date.now() - t0;
        assert.equal(r.status, 3, r.stderr);
        assert.match(r.stderr, new RegExp(`no speaker reachable: pod ${NS}/speaker-trickle \\(node ml-a\\) port ${port}: no answer within 2000 ms\\n$`), r.stderr);
        assert.ok(took < 8000, `members gave up after ${took} ms`);
      } finally {
        trickler.kill('SIGKILL');
        await core.deleteNamespacedPod({ namespace: NS, name: 'speaker-trickle', gracePeriodSeconds: 0 }).catch(() => {});
      }
    });
  });
});
