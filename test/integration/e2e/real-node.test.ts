// deploy/ on real nodes: two kubelets on Debian's containerd 1.6 + runc (each in its own network
// and mount namespace), kube-apiserver, kube-controller-manager and kube-scheduler built from
// k8s.io/kubernetes (test/integration/setup/node-cluster.ts), and the metallb-ts image from `npm
// run image` imported into each node's containerd as docker.io/library/metallb-ts:0.1.0.
//
// `kubectl apply -k deploy` as it is (with MetalLB's CRDs from test/reference/crds first: deploy/crds
// names them by URL and there is no network), then a Layer 2 Service: the controller and both
// speakers Ready, the Service addressed, arping from a client namespace on the nodes' segment
// answered with the announcing node's MAC; the announcing node's speaker pod deleted, then
// separately the announcing node stopped (kubelet, containerd and every container process killed):
// the address moves, the client's neighbour entry follows. `metallb-ts explain` live agrees with the
// ServiceL2Status objects (and with ARP) at every settled point. Last, the teardown leaves the
// host's sysctls, mounts, cgroups and network namespaces as they were.
//
// Needs root, Go (for the first build: see README "Real-node tests"), and runs alone with
// `npm run test:e2e`. The failover times are printed as diagnostics; `npm run bench real-node`
// measures them again.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { RBAC_REFUSAL } from '../setup/cluster.ts';
import { hostMountPoints, hostSysctls, pathExists, realNodeSkipReason, startNodeCluster, type NodeCluster, type RealNode } from '../setup/node-cluster.ts';
import {
  METALLB_NS,
  NeighbourWatch,
  createL2Service,
  describeObservation,
  installMetallb,
  metallbImageArchive,
  containerLogs,
  podSummary,
  speakerPodOn,
  touch,
  untilAgreed,
  untilValue,
  type Observation,
} from '../setup/node-metallb.ts';

const skip = realNodeSkipReason();
const SVC = { namespace: 'e2e', name: 'web', ip: '' };
const log = (l: string): void => {
  if (process.env.METALLB_TS_E2E_VERBOSE) process.stderr.write(`[real-node] ${l}\n`);
};

describe('deploy/ on two real nodes (kubelet, containerd, runc)', { skip: skip ?? false, timeout: 30 * 60_000 }, () => {
  let c: NodeCluster | undefined;
  let watch: NeighbourWatch | undefined;
  let announcer: RealNode;
  let other: RealNode;
  const sysctlsBefore = hostSysctls();
  const mountsBefore = hostMountPoints();
  const netnsBefore = readdirSync('/run/netns').sort();

  const cluster = (): NodeCluster => {
    assert.ok(c, 'no cluster (its start-up failed)');
    return c;
  };
  const nodeNamed = (name: string): RealNode => cluster().nodes.find((n) => n.name === name)!;
  const agreed = async (ms: number, node?: string): Promise<Observation> => {
    try {
      return (await untilAgreed(cluster(), SVC, ms, node)).agreed;
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${await podSummary(cluster())}`);
    }
  };

  before(async () => {
    const image = metallbImageArchive(log);
    c = await startNodeCluster({ nodes: 2, images: [image], log });
    const t = c.timings;
    console.log(
      `# real nodes: ${c.nodes.length} nodes Ready in ${(t.total! / 1000).toFixed(1)} s (network ${t.network} ms, pki ${t.pki} ms, containerd ${t.containerd} ms, apiserver ${t.apiserver} ms, image imports ${t.images} ms, kubelets to Ready ${t['nodes Ready']} ms)`,
    );
  });

  after(async () => {
    watch?.stop();
    await c?.stop();
  });

  test('kubectl apply -k deploy: the controller and a speaker per node become Ready', async () => {
    const c = cluster();
    let times: { apply: number; ready: number };
    try {
      times = await installMetallb(c);
    } catch (e) {
      assert.fail(`${(e as Error).message}\n${await podSummary(c)}\n${c.logTail(20)}`);
    }
    console.log(`# deploy/ applied in ${times.apply} ms, controller and speakers Ready ${(times.ready / 1000).toFixed(1)} s later`);
    const pods = await c.kubectlJson<{ items: any[] }>(['-n', METALLB_NS, 'get', 'pods']);
    const speakers = pods.items.filter((p) => p.metadata.labels?.component === 'speaker');
    assert.deepEqual(speakers.map((p) => p.spec.nodeName).sort(), c.nodes.map((n) => n.name).sort(), 'one speaker pod per node');
    for (const p of speakers) {
      assert.equal(p.spec.hostNetwork, true);
      assert.equal(p.status.podIP, nodeNamed(p.spec.nodeName).ip, "a hostNetwork speaker has its node's IP");
    }
    const secret = await c.kubectlJson<any>(['-n', METALLB_NS, 'get', 'secret', 'memberlist']);
    assert.equal(secret.metadata.ownerReferences?.[0]?.kind, 'Deployment', 'the controller created the memberlist Secret, owned by its Deployment');
  });

  test("a LoadBalancer Service gets its address; arping from the client gets the announcing node's MAC; explain agrees", async () => {
    const c = cluster();
    SVC.ip = await createL2Service(c, { ...SVC, pool: 'e2e-pool', addresses: '192.0.2.200-192.0.2.209' });
    assert.match(SVC.ip, /^192\.0\.2\.20\d$/);
    const o = await agreed(90_000);
    announcer = nodeNamed(o.explain.announcer!);
    other = c.nodes.find((n) => n !== announcer)!;
    assert.equal(o.explain.speakers.source, 'memberlist', `explain reads a speaker's memberlist view: ${describeObservation(o)}`);
    assert.deepEqual([...(o.explain.speakers.nodes ?? [])].sort(), c.nodes.map((n) => n.name).sort(), 'both speakers alive in memberlist');
    console.log(`# ${SVC.ip} announced by ${announcer.name} (${announcer.mac}): ${describeObservation(o)}`);
    watch = await NeighbourWatch.start(c);
    assert.equal(await touch(c, SVC.ip), announcer.mac, 'the client resolved the address to the announcing node');
  });

  test("the announcing node's speaker pod deleted: the address moves to the other node and back, the neighbour entry follows, explain agrees", async () => {
    const c = cluster();
    assert.ok(watch && announcer, 'needs the previous test');
    const pod = await speakerPodOn(c, announcer.name);
    assert.ok(pod, `a speaker pod on ${announcer.name}`);
    const t0 = Date.now();
    await c.kubectl(['-n', METALLB_NS, 'delete', 'pod', pod.name, '--wait=false']);
    const moved = await watch.waitFor(SVC.ip, other.mac, t0, 60_000);
    console.log(`# speaker pod deleted → the client's neighbour entry has ${other.name}'s MAC: ${moved - t0} ms`);
    // Until the DaemonSet's replacement pod runs, every side names the other node. That pod can
    // start within seconds, faster than one observation on an idle machine: its node's kubelet is
    // paused (SIGSTOP) meanwhile, so the state is observed whatever the machine's speed.
    const paused = Date.now();
    announcer.pauseKubelet();
    let during: Observation;
    try {
      during = await agreed(60_000, other.name);
    } finally {
      announcer.resumeKubelet();
    }
    const pausedMs = Date.now() - paused;
    console.log(`# during: ${describeObservation(during)}`);
    // the new pod joins memberlist: the hash winner announces again
    const back = await watch.waitFor(SVC.ip, announcer.mac, moved, 120_000);
    console.log(`# replacement speaker joined → the neighbour entry has ${announcer.name}'s MAC again ${back - t0} ms after the deletion (its kubelet paused ${pausedMs} ms of it)`);
    const after = await agreed(60_000, announcer.name);
    const replacement = await untilValue('the replacement speaker pod Ready', 60_000, async () => {
      const p = await speakerPodOn(c, announcer.name);
      return p?.ready && p.uid !== pod.uid ? p : undefined;
    });
    assert.notEqual(replacement.name, pod.name);
    console.log(`# after: ${describeObservation(after)}`);
  });

  test('the announcing node stopped (kubelet, containerd, containers killed): the address moves, the neighbour entry follows, explain agrees', async () => {
    assert.ok(watch && announcer, 'needs the previous tests');
    const before = await agreed(30_000, announcer.name);
    assert.ok(before);
    const t0 = Date.now();
    await announcer.stop();
    const killed = Date.now();
    assert.deepEqual(announcer.containerPids(), [], 'no container process of the stopped node is left');
    const moved = await watch.waitFor(SVC.ip, other.mac, t0, 90_000);
    console.log(`# node stopped (every process killed in ${killed - t0} ms) → the client's neighbour entry has ${other.name}'s MAC: ${moved - t0} ms (memberlist's failure detection, then the announcement)`);
    const o = await agreed(90_000, other.name);
    assert.equal(o.explain.speakers.source, 'memberlist');
    assert.deepEqual(o.explain.speakers.nodes, [other.name], `the surviving speaker's memberlist view: ${describeObservation(o)}`);
    console.log(`# after: ${describeObservation(o)}`);
  });

  // What the components logged, read from the nodes' pod log files (also the stopped node's).
  const EVENTS_PATCH = /cannot patch resource \\?"events\\?"/;
  test('the controller and speakers met no permission error (RBAC of deploy/) other than an Events patch (the next test)', () => {
    const lines = containerLogs(cluster()).filter((l) => RBAC_REFUSAL.test(l.text) && !EVENTS_PATCH.test(l.text));
    assert.deepEqual(
      lines.map((l) => `${l.pod} (${l.node}): ${l.text}`),
      [],
    );
  });

  test("the speaker may patch its Events, as MetalLB's may (a re-announcement bumps the nodeAssigned Event's count)", () => {
    const lines = containerLogs(cluster()).filter((l) => EVENTS_PATCH.test(l.text));
    assert.deepEqual(
      lines.map((l) => `${l.pod} (${l.node}): ${l.text}`),
      [],
    );
  });

  test('the controller and speakers logged no error', () => {
    const lines = containerLogs(cluster()).filter((l) => l.json?.level === 'error');
    assert.deepEqual(
      lines.map((l) => `${l.pod} (${l.node}): ${l.text}`),
      [],
    );
  });

  test('teardown leaves the host as it was: sysctls, mounts, cgroups, network namespaces', async () => {
    const c = cluster();
    watch?.stop();
    const roots = c.nodes.map((n) => n.cgroupRoot);
    const t0 = Date.now();
    await c.stop();
    console.log(`# teardown: ${Date.now() - t0} ms`);
    assert.deepEqual(hostSysctls(), sysctlsBefore, 'kubelet wrote only the fake sysctl files');
    const mounts = hostMountPoints();
    assert.deepEqual(
      mounts.filter((m) => m.includes('mlbe2e') || m.startsWith('/var/lib/kubelet') || m.startsWith('/var/lib/cni')),
      [],
      'no mount of the nodes is visible on the host',
    );
    const newMounts = mounts.filter((m) => !mountsBefore.includes(m) && /mlbe2e|kubelet|containerd|cni|netns/.test(m));
    assert.deepEqual(newMounts, []);
    for (const r of roots) {
      for (const h of ['memory', 'cpu', 'pids', 'cpuset', 'unified']) assert.equal(pathExists(`/sys/fs/cgroup/${h}${r}`), false, `cgroup ${h}${r} removed`);
    }
    assert.deepEqual(
      readdirSync('/run/netns').filter((n) => n.includes('mlbe2e') && !netnsBefore.includes(n)),
      [],
      'the network namespaces are gone',
    );
  });
});
