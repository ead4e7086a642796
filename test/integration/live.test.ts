// Live cluster access against a real kube-apiserver + etcd (test/integration/setup): the example
// cluster's objects are created through the API (statuses through the status subresource), then
//  (a) `explain` live and `explain -f` on `snapshot`'s output agree for every Service, and the live
//      read equals both the snapshot loader's view of that output and a ClusterStateWatcher's state;
//  (a2) `whatif` live and on the example file give the same answer and exit status;
//  (b) a ClusterStateWatcher sees adds, updates and deletes, and catches up after its connections to
//      the API server are cut and the server is unreachable for a while;
//  (c) an unreachable server, (d) a user without RBAC rights: exit 3, one line naming the server and
//      resource; (e) a broken kubeconfig: exit 2.
// Fails (does not skip) when the binaries are missing: run test/integration/setup/build-apiserver.sh.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, startTestCluster, type TestCluster } from './setup/cluster.ts';
import { KIND_TO_LIST, type ClusterState, type KubeObject } from '../../src/core/kube.ts';
import { ClusterUnreachableError } from '../../src/core/errors.ts';
import { isSpeakerPod } from '../../src/core/election/speakers.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { ClusterStateWatcher, readClusterState, type ClusterStateChange, type LogEntry } from '../../src/kube/live.ts';
import { loadSnapshot, parseSnapshotText } from '../../src/kube/snapshot.ts';
import { freePort } from '../helpers/net.ts';

const CLI = join(REPO_ROOT, 'src/cli.ts');
const EXAMPLE = join(REPO_ROOT, 'examples/cluster.yaml');
/** stderr of a successful live command: nothing, or readClusterState's progress lines when the read is slow. */
const QUIET_STDERR = /^(metallb-ts: reading the cluster state from [^\n]*\n)*$/;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env: { ...process.env, KUBECONFIG: '', NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d;
    });
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Runs `fn` over `items` with at most `n` at a time (2 cores are shared). */
async function pool<T, R>(items: readonly T[], n: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const start = Date.now();
  const deadline = start + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
  if (process.env.LIVE_TEST_TIMING) process.stderr.write(`waited ${Date.now() - start} ms for ${what}\n`);
}

/** The collection path of an object's kind. */
function collection(obj: KubeObject): string {
  const plural: Record<string, string> = {
    Namespace: 'namespaces',
    Node: 'nodes',
    Service: 'services',
    EndpointSlice: 'endpointslices',
    Pod: 'pods',
    ConfigMap: 'configmaps',
    Secret: 'secrets',
    Event: 'events',
    IPAddressPool: 'ipaddresspools',
    L2Advertisement: 'l2advertisements',
    BGPAdvertisement: 'bgpadvertisements',
    BGPPeer: 'bgppeers',
    Community: 'communities',
    BFDProfile: 'bfdprofiles',
    ServiceL2Status: 'servicel2statuses',
    ServiceBGPStatus: 'servicebgpstatuses',
  };
  const p = plural[obj.kind!];
  if (!p) throw new Error(`no path for ${obj.kind}`);
  const base = obj.apiVersion!.includes('/') ? `/apis/${obj.apiVersion}` : `/api/${obj.apiVersion}`;
  const ns = obj.metadata?.namespace;
  return ns && obj.kind !== 'Namespace' && obj.kind !== 'Node' ? `${base}/namespaces/${ns}/${p}` : `${base}/${p}`;
}

/** The example's object as a manifest the API accepts: server-set fields and allocated values removed. */
function manifest(obj: KubeObject): KubeObject {
  const o = structuredClone(obj);
  const md = o.metadata!;
  for (const f of ['resourceVersion', 'uid', 'creationTimestamp', 'managedFields', 'generation', 'ownerReferences', 'selfLink']) delete md[f];
  delete o['status'];
  const spec = o['spec'] as Record<string, unknown> | undefined;
  if (o.kind === 'Service' && spec) {
    delete spec['clusterIP'];
    delete spec['clusterIPs'];
    for (const p of (spec['ports'] as Array<Record<string, unknown>> | undefined) ?? []) delete p['nodePort'];
  }
  if (o.kind === 'Pod' && spec) {
    delete spec['serviceAccount'];
    delete spec['serviceAccountName'];
  }
  return o;
}

describe('live cluster access against a real kube-apiserver', () => {
  let cluster: TestCluster;
  let work: string;
  let adminKubeconfig: string;

  /** An admin request (bearer token of system:masters) returning [status, parsed body]. */
  function api(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<[number, any]> {
    return new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = https.request(
        `${cluster.server}${path}`,
        {
          method,
          ca: cluster.caPem,
          headers: { Authorization: `Bearer ${cluster.adminToken}`, Accept: 'application/json', ...(data ? { 'Content-Type': contentType } : {}) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            text += d;
          });
          res.on('end', () => resolve([res.statusCode ?? 0, text ? JSON.parse(text) : undefined]));
        },
      );
      req.on('error', reject);
      req.end(data);
    });
  }

  async function mustApi(method: string, path: string, body?: unknown, contentType?: string): Promise<any> {
    const [code, res] = await api(method, path, body, contentType);
    if (code < 200 || code >= 300) assert.fail(`${method} ${path}: HTTP ${code}: ${res?.message ?? JSON.stringify(res)}`);
    return res;
  }

  /** Creates the example cluster's objects, then sets every status through the status subresource. */
  async function createExample(): Promise<number> {
    const objects = parseSnapshotText(readFileSync(EXAMPLE, 'utf8'), EXAMPLE);
    const order = [
      'Namespace',
      'Node',
      'ConfigMap',
      'Secret',
      'IPAddressPool',
      'L2Advertisement',
      'BGPAdvertisement',
      'BGPPeer',
      'Community',
      'BFDProfile',
      'Service',
      'EndpointSlice',
      'Pod',
      'ServiceL2Status',
      'ServiceBGPStatus',
      'Event',
    ];
    const sorted = objects.filter((o) => order.includes(o.kind!)).sort((a, b) => order.indexOf(a.kind!) - order.indexOf(b.kind!));
    await pool(order, 1, async (kind) => {
      await pool(
        sorted.filter((o) => o.kind === kind),
        4,
        async (obj) => {
          const path = collection(obj);
          const [code, res] = await api('POST', path, manifest(obj));
          if (code === 409 && obj.kind === 'Namespace') {
            await mustApi('PATCH', `${path}/${obj.metadata!.name}`, { metadata: { labels: obj.metadata!.labels } }, 'application/merge-patch+json');
          } else if (code < 200 || code >= 300) {
            assert.fail(`create ${obj.kind} ${obj.metadata?.namespace ?? ''}/${obj.metadata?.name}: HTTP ${code}: ${res?.message}`);
          }
          const status = obj['status'];
          if (status && obj.kind !== 'Namespace') {
            await mustApi('PATCH', `${path}/${obj.metadata!.name}/status`, { status }, 'application/merge-patch+json');
          }
        },
      );
    });
    return sorted.length;
  }

  before(async () => {
    cluster = await startTestCluster({ users: [{ name: 'nobody' }] });
    work = mkdtempSync(join(tmpdir(), 'metallb-ts-live-'));
    adminKubeconfig = cluster.kubeconfigPath;
    await createExample();
    // The speaker's event for shop/frontend names a node the election does not pick.
    await mustApi('POST', '/api/v1/namespaces/shop/events', {
      metadata: { name: 'frontend.nodeassigned' },
      involvedObject: { kind: 'Service', namespace: 'shop', name: 'frontend', apiVersion: 'v1' },
      reason: 'nodeAssigned',
      type: 'Normal',
      source: { component: 'metallb-speaker' },
      message: 'announcing from node "lab-worker-a" with protocol "layer2"',
      firstTimestamp: '2025-05-12T16:00:00Z',
      lastTimestamp: '2025-05-12T16:00:00Z',
      count: 1,
    });
  });

  after(async () => {
    await cluster?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('(a) explain live and explain -f on snapshot output agree for every Service; the live read equals the snapshot view and a watcher state', async () => {
    const kc = loadKubeConfig({ kubeconfig: adminKubeconfig });
    const live = await readClusterState(kc);
    // every kind of the example arrived, with statuses
    const example = await loadSnapshot([EXAMPLE]);
    for (const list of Object.values(KIND_TO_LIST)) {
      if (list === 'events' || list === 'namespaces' || list === 'services' || list === 'endpointSlices' || list === 'pods') continue;
      assert.equal(live[list].length, example[list].length, list);
    }
    assert.deepEqual(
      live.pods.map((p) => p.metadata?.name),
      example.pods.filter(isSpeakerPod).map((p) => p.metadata?.name),
      'speaker pods only',
    );
    assert.equal(live.services.length, example.services.length + 1, 'the example Services and default/kubernetes');
    for (const svc of live.services) {
      assert.equal(svc.apiVersion, 'v1');
      assert.equal(svc.kind, 'Service');
      assert.equal(typeof svc.metadata?.creationTimestamp, 'string');
      assert.match(svc.metadata!.creationTimestamp!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    assert.ok(
      live.nodes.every((n) => (n.status?.conditions ?? []).some((c) => c.type === 'Ready')),
      'node status was set',
    );
    assert.ok(
      live.serviceL2Statuses.every((s) => typeof s.status?.node === 'string'),
      'ServiceL2Status status was set',
    );
    assert.ok(
      live.events.some((e) => e.reason === 'nodeAssigned'),
      'Service events are read',
    );
    const keys = (xs: KubeObject[]) => xs.map((x) => `${x.metadata?.namespace ?? ''}/${x.metadata?.name}`);
    assert.deepEqual(keys(live.services), [...keys(live.services)].sort(), 'API order');

    // the snapshot command dumps what the commands read; the loader gives back the same objects
    const snap = await cli(['snapshot', '-o', 'yaml', '--kubeconfig', adminKubeconfig]);
    assert.equal(snap.status, 0, snap.stderr);
    assert.match(snap.stderr, QUIET_STDERR);
    const dumpFile = join(work, 'dump.yaml');
    writeFileSync(dumpFile, snap.stdout);
    const replay = await loadSnapshot([dumpFile]);
    const noManaged = (s: ClusterState): ClusterState => JSON.parse(JSON.stringify(s, (k, v) => (k === 'managedFields' ? undefined : v)));
    const liveNow = await readClusterState(kc);
    assert.deepEqual(noManaged(replay), noManaged(liveNow), 'snapshot -o yaml replays to the live state');

    // a watcher's synced state is the same
    const watcher = new ClusterStateWatcher(kc, { kinds: Object.values(KIND_TO_LIST) });
    try {
      await watcher.start();
      assert.deepEqual(watcher.state(), liveNow, 'ClusterStateWatcher.state() equals readClusterState');
    } finally {
      watcher.stop();
    }

    // explain, every Service, live and replayed, as CLI subprocesses
    const fields = ['service', 'mode', 'allocation', 'nodes', 'hashOrder', 'announcer', 'bgpAnnouncers', 'speakers', 'findings', 'l2', 'bgp'];
    const exampleFrontend = JSON.parse((await cli(['explain', 'svc/frontend', '-n', 'shop', '-o', 'json', '-f', EXAMPLE])).stdout);
    const results = await pool(live.services, 2, async (svc) => {
      const target = `${svc.metadata!.namespace}/${svc.metadata!.name}`;
      const [l, f] = await Promise.all([
        // The example's speaker pods have addresses outside this machine: ask none of them (the
        // API server would dial them); test/integration/speaker-view.test.ts covers asking.
        cli(['explain', target, '-o', 'json', '--kubeconfig', adminKubeconfig, '--no-speaker-discovery']),
        cli(['explain', target, '-o', 'json', '-f', dumpFile]),
      ]);
      return { target, l, f };
    });
    for (const { target, l, f } of results) {
      assert.match(l.stderr, QUIET_STDERR, `${target} live stderr`);
      assert.equal(l.status, f.status, `${target}: exit status`);
      const lj = JSON.parse(l.stdout);
      const fj = JSON.parse(f.stdout);
      assert.deepEqual(lj.source, { kind: 'live', server: cluster.server });
      assert.deepEqual(fj.source, { kind: 'files', files: [dumpFile] });
      for (const k of fields) assert.deepEqual(lj[k], fj[k], `${target}: ${k}`);
    }
    const frontend = JSON.parse(results.find((r) => r.target === 'shop/frontend')!.l.stdout);
    assert.equal(frontend.announcer, exampleFrontend.announcer, 'same winner as the example snapshot');
    assert.deepEqual(frontend.allocation.ips, exampleFrontend.allocation.ips);
    assert.ok(
      frontend.findings.some((x: { id: string }) => x.id === 'nodeassigned-event-disagrees'),
      JSON.stringify(frontend.findings),
    );
    const udp = JSON.parse(results.find((r) => r.target === 'ingest/ingest-udp')!.l.stdout);
    assert.equal(udp.announcer, null, 'ingest-udp has no ready endpoint: nobody announces, as from the example');

    const table = await cli(['explain', 'svc/frontend', '-n', 'shop', '--kubeconfig', adminKubeconfig, '--no-speaker-discovery']);
    assert.match(table.stdout, new RegExp(`Source: +live cluster ${cluster.server}`));
  });

  test('(a2) whatif live answers as whatif -f on the example: same verdict, Services and exit status', async () => {
    // Runs before (b), which edits the cluster: the live objects are still the example's.
    for (const args of [
      ['--node-down', 'lab-worker-b'],
      ['--node-down', 'lab-worker-a,lab-worker-b'],
    ]) {
      const [l, f] = await Promise.all([cli(['whatif', ...args, '-o', 'json', '--kubeconfig', adminKubeconfig, '--no-speaker-discovery']), cli(['whatif', ...args, '-o', 'json', '-f', EXAMPLE])]);
      assert.match(l.stderr, QUIET_STDERR, l.stderr);
      assert.equal(l.status, f.status, `${args.join(' ')}: exit status`);
      const lj = JSON.parse(l.stdout);
      const fj = JSON.parse(f.stdout);
      assert.equal(lj.verdict, fj.verdict);
      assert.deepEqual(lj.services, fj.services);
      assert.deepEqual(lj.speakers, fj.speakers);
    }
    const down = await cli(['whatif', '--node-down', 'lab-worker-a,lab-worker-b', '--kubeconfig', adminKubeconfig, '--no-speaker-discovery']);
    assert.equal(down.status, 1, down.stderr);
    assert.match(down.stdout, /^10 Services lose their announcer, 4 unchanged\n/);
  });

  test('(b) a ClusterStateWatcher sees adds, updates and deletes, and resumes after the connection to the API server is lost', async () => {
    // A TCP proxy in front of the API server: cutting it looks like an API server restart to the client.
    const target = new URL(cluster.server);
    const sockets = new Set<Socket>();
    let proxy: Server | undefined;
    const listen = (port: number): Promise<number> =>
      new Promise((resolve, reject) => {
        proxy = createServer((down) => {
          const up = connect(Number(target.port), '127.0.0.1');
          sockets.add(down).add(up);
          down.pipe(up).pipe(down);
          const close = () => {
            down.destroy();
            up.destroy();
            sockets.delete(down);
            sockets.delete(up);
          };
          down.on('error', close).on('close', close);
          up.on('error', close).on('close', close);
        });
        proxy.on('error', reject);
        proxy.listen(port, '127.0.0.1', () => resolve((proxy!.address() as { port: number }).port));
      });
    const port = await listen(0);
    const proxied = join(work, 'proxied-kubeconfig');
    writeFileSync(proxied, readFileSync(adminKubeconfig, 'utf8').replace(cluster.server, `https://127.0.0.1:${port}`));
    const kc = loadKubeConfig({ kubeconfig: proxied });
    const logs: LogEntry[] = [];
    const watcher = new ClusterStateWatcher(kc, { log: (e) => logs.push(e), backoffMs: 200, maxBackoffMs: 1000 });
    const changes: ClusterStateChange[] = [];
    watcher.onChange((c) => changes.push(c));
    const svcPath = '/api/v1/namespaces/default/services';
    const svc = (name: string) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, labels: { test: 'watch' } }, spec: { type: 'LoadBalancer', ports: [{ port: 80 }] } });
    const names = () => watcher.state().services.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`);
    const seen = (list: string, type: string, name: string) => changes.some((c) => c.list === list && c.type === type && c.object.metadata?.name === name);
    try {
      await watcher.start();
      assert.ok(watcher.synced);
      assert.ok(names().includes('shop/frontend'));
      const initialAdds = changes.length;
      assert.ok(initialAdds > 0 && changes.every((c) => c.type === 'add'), 'the initial list arrives as adds');

      await mustApi('POST', svcPath, svc('watch-a'));
      await waitFor('add of watch-a', () => seen('services', 'add', 'watch-a'));
      const added = changes.find((c) => c.type === 'add' && c.object.metadata?.name === 'watch-a')!;
      assert.equal(added.object.kind, 'Service');
      assert.equal(added.object.apiVersion, 'v1');
      assert.ok(names().includes('default/watch-a'));

      await mustApi('PATCH', `${svcPath}/watch-a/status`, { status: { loadBalancer: { ingress: [{ ip: '192.0.2.99' }] } } }, 'application/merge-patch+json');
      await waitFor('update of watch-a', () => seen('services', 'update', 'watch-a'));
      const upd = changes.find((c) => c.type === 'update' && c.object.metadata?.name === 'watch-a')!;
      assert.deepEqual((upd.object as any).status.loadBalancer.ingress, [{ ip: '192.0.2.99', ipMode: 'VIP' }]);
      assert.deepEqual((upd.old as any).status.loadBalancer, {});

      await mustApi('DELETE', `${svcPath}/watch-a`);
      await waitFor('delete of watch-a', () => seen('services', 'delete', 'watch-a'));
      assert.ok(!names().includes('default/watch-a'));

      // Cut every connection and refuse new ones for a while; meanwhile the cluster changes.
      const closed = new Promise<void>((r) => proxy!.close(() => r()));
      for (const s of sockets) s.destroy();
      await closed;
      await mustApi('POST', svcPath, svc('watch-b'));
      await mustApi('POST', svcPath, svc('watch-c'));
      await mustApi('DELETE', `${svcPath}/watch-c`);
      await waitFor('a logged watch error', () => logs.some((l) => l.level === 'error'), 10_000);
      await sleep(1500);
      assert.ok(!names().includes('default/watch-b'), 'no change arrives while the server is unreachable');
      await listen(port);
      await waitFor('watch-b after the reconnect', () => names().includes('default/watch-b'), 20_000);
      // watch-c, added and deleted meanwhile, is gone once the resumed watch has replayed its events
      // (its ADDED and DELETED may come in a later chunk than watch-b's ADDED)
      await waitFor('watch-c gone after the reconnect', () => !names().includes('default/watch-c'), 20_000);
      await mustApi('POST', svcPath, svc('watch-d'));
      await waitFor('watch-d after the reconnect', () => names().includes('default/watch-d'), 20_000);
      const err = logs.find((l) => l.level === 'error')!;
      assert.equal(err.server, `https://127.0.0.1:${port}`);
      assert.equal(typeof err.resource, 'string');
      assert.equal(typeof err.retryInMs, 'number');
      // the recovery is logged once, with the outage's length (issue #15); the sync age is 0 again
      await waitFor('the recovery line', () => logs.some((l) => l.msg.startsWith('list/watch recovered')), 60_000);
      const recovered = logs.find((l) => l.msg.startsWith('list/watch recovered'))!;
      assert.equal(recovered.level, 'info');
      assert.ok(Number(recovered.outageMs) >= 1500, JSON.stringify(recovered));
      assert.ok(Array.isArray(recovered.resources) && recovered.resources.includes('v1 services'), JSON.stringify(recovered));
      assert.equal(watcher.syncAgeSeconds(), 0);
    } finally {
      watcher.stop();
      const closed = new Promise<void>((r) => (proxy?.listening ? proxy.close(() => r()) : r()));
      for (const s of sockets) s.destroy();
      await closed;
    }
  });

  test('(b) a ClusterStateWatcher of a user without rights fails start() with ClusterUnreachableError', async () => {
    const kc = cluster.kubeConfigForToken(cluster.userTokens['nobody']!, 'nobody');
    const watcher = new ClusterStateWatcher(kc, { log: () => {} });
    await assert.rejects(watcher.start(), (err: unknown) => {
      assert.ok(err instanceof ClusterUnreachableError, String(err));
      assert.match(err.message, new RegExp(`^cannot list v1 services at ${cluster.server}: forbidden: `));
      return true;
    });
  });

  test('(c) an unreachable server: exit 3, one line naming the server and what failed', async () => {
    const port = await freePort();
    const server = `https://127.0.0.1:${port}`;
    const file = join(work, 'closed-kubeconfig');
    writeFileSync(file, readFileSync(adminKubeconfig, 'utf8').replace(cluster.server, server));
    for (const args of [['explain', 'svc/frontend', '-n', 'shop'], ['snapshot'], ['validate']]) {
      const r = await cli([...args, '--kubeconfig', file]);
      assert.equal(r.status, 3, `${args[0]}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, `metallb-ts: cannot list v1 services at ${server}: connection refused\n`);
    }
  });

  test('(d) a token user without RBAC rights: exit 3, forbidden, naming the resource', async () => {
    const file = join(work, 'nobody-kubeconfig');
    writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: test',
        '  cluster:',
        `    server: ${cluster.server}`,
        `    certificate-authority-data: ${Buffer.from(cluster.caPem).toString('base64')}`,
        'users:',
        '- name: nobody',
        '  user:',
        `    token: ${cluster.userTokens['nobody']}`,
        'contexts:',
        '- name: nobody',
        '  context:',
        '    cluster: test',
        '    user: nobody',
        'current-context: nobody',
        '',
      ].join('\n'),
    );
    const r = await cli(['explain', 'svc/frontend', '-n', 'shop', '--kubeconfig', file]);
    assert.equal(r.status, 3, r.stderr);
    const lines = r.stderr.trimEnd().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, new RegExp(`^metallb-ts: cannot list v1 services at ${cluster.server}: forbidden: .*User "nobody" cannot list resource "services"`));
  });

  test('(e) a broken kubeconfig or unknown context: exit 2, one line naming it', async () => {
    const broken = join(work, 'broken-kubeconfig');
    writeFileSync(broken, 'clusters: [\n');
    const cases: Array<[string[], RegExp]> = [
      [['--kubeconfig', broken], /^metallb-ts: kubeconfig .*broken-kubeconfig: invalid: /],
      [['--kubeconfig', join(work, 'missing')], /^metallb-ts: kubeconfig .*missing: no such file$/],
      [['--kubeconfig', adminKubeconfig, '--context', 'prod'], /^metallb-ts: context "prod" not found in kubeconfig .* \(contexts: metallb-ts-test\)$/],
      [['--kubeconfig', adminKubeconfig, '-f', EXAMPLE], /give one or the other/],
    ];
    for (const [args, re] of cases) {
      const r = await cli(['explain', 'svc/frontend', '-n', 'shop', ...args]);
      assert.equal(r.status, 2, r.stderr);
      const lines = r.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      assert.match(lines[0]!, re);
    }
  });
});
