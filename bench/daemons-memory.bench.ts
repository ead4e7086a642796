/**
 * Memory and start-up of the daemons (issue #14), metallb-ts beside MetalLB v0.16.1's own binaries
 * (test/setup.d/55-metallb-binaries.sh), one after the other against the same test API server
 * (test/integration/setup: real kube-apiserver + etcd on loopback), at each size of SIZES
 * (`BENCH_SIZES=20,1000,5000` to change it).
 *
 * Controller, per size: N new LoadBalancer Services (no address yet) in one pool; from the
 * controller's start, the time until every Service holds an address (convergence, API polled every
 * 250 ms), its peak resident memory (VmHWM) and its resident memory at rest (VmRSS 5 s later).
 * The Services are deleted and created again before the other controller runs.
 * Speaker, per size and per node count of NODES (`BENCH_NODES=1,100`, default 1): the N Services
 * with their addresses and one ready endpoint each on the speaker's Node, the other Nodes (a
 * kubelet's labels, addresses, conditions and capacity, no endpoints; the L2Advertisement selects the
 * speaker's Node only, as memberlist is off) only in its watch cache; the
 * speaker alone in a network namespace (no memberlist: it announces all), from its start: the
 * first `serviceAnnounced` line (start-up to the first decision), the N-th (every decision), peak
 * and resident memory at rest 5 s after the last. After each speaker its ServiceL2Status objects are
 * deleted, as the garbage collector does with its Pod (there is none here), so that the next speaker
 * creates its own as the first did.
 * `BENCH_ROLES=speaker` (or `controller`) runs one daemon only; the speakers then find the Services
 * with addresses only if a controller ran before on the same API server (so: both by default).
 * Memory is read from /proc/PID/status every 100 ms. Prints figures; asserts nothing but
 * convergence. Needs root (network namespaces) and the binaries (fails without them).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { corePath, metallbPath } from '../src/controller/api.ts';
import { KubeClient } from '../src/kube/client.ts';
import type { Service } from '../src/core/kube.ts';
import { startTestCluster } from '../test/integration/setup/cluster.ts';
import { L2Testbed } from '../test/integration/setup/l2-testbed.ts';
import { onProcessExit } from '../test/integration/setup/wait.ts';
import { ApiRelay, NS, SPEAKER_LABELS, createPod, deletePod, metallbBinariesMissing, startController, startSpeaker, type Component, type Kind } from '../test/e2e/setup/metallb.ts';

const SIZES = (process.env['BENCH_SIZES'] ?? '20,1000').split(',').map(Number);
const NODES = (process.env['BENCH_NODES'] ?? '1').split(',').map(Number);
const ROLES = new Set((process.env['BENCH_ROLES'] ?? 'controller,speaker').split(','));
const KINDS: Kind[] = ['metallb-ts', 'metallb'];
const SVC_NS = 'bench';
const NODE = 'n1';
const MiB = (kb: number): string => `${(kb / 1024).toFixed(1)} MiB`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const missing = metallbBinariesMissing();
if (missing) throw new Error(missing);

/** VmRSS and VmHWM of `pid` in KiB (0 once it is gone). */
function memoryOf(pid: number): { rss: number; hwm: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s)?.[1] ?? 0);
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

/** Samples `c`'s memory every 100 ms until stopped; `peak` is the highest VmHWM seen. */
function sampler(c: Component): { peak: () => number; rss: () => number; stop: () => void } {
  let peak = 0;
  const t = setInterval(() => {
    peak = Math.max(peak, memoryOf(c.proc.pid!).hwm);
  }, 100);
  return { peak: () => Math.max(peak, memoryOf(c.proc.pid!).hwm), rss: () => memoryOf(c.proc.pid!).rss, stop: () => clearInterval(t) };
}

/**
 * After a daemon's run: waits 5 s at rest, reads its resident memory then (KiB) and the peak its
 * sampler saw, stops the sampler and the daemon, and deletes its Pod.
 */
async function settleAndStop(c: Component, mem: ReturnType<typeof sampler>, podName: string): Promise<{ rest: number; peak: number }> {
  await sleep(5000);
  const rest = mem.rss();
  const peak = mem.peak();
  mem.stop();
  await c.stop();
  await deletePod(api, podName);
  return { rest, peak };
}

async function pool<T>(items: readonly T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

const nameOf = (i: number): string => `svc-${String(i).padStart(4, '0')}`;

const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-mem-'));
const bed = new L2Testbed(`mlmem${process.pid % 10000}`, 1, { extraInterfaces: false, nodeIPv4: () => '192.0.2.11' });
onProcessExit(() => bed.destroy());
bed.create();
const cluster = await startTestCluster({ namespaces: [NS, SVC_NS] });
const api = new KubeClient(cluster.kubeConfig, { maxSockets: 16 });
const relay = new ApiRelay(cluster, join(dir, 'api.sock'));
const rows: string[] = [];
try {
  await relay.start();
  await relay.into(bed.speakers[0]!);
  const post = (path: string, body: unknown): Promise<unknown> => api.request({ method: 'POST', path, body });
  await post('/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE, 'kubernetes.io/os': 'linux' } } });
  await post(metallbPath(NS, 'ipaddresspools'), { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: 'bench' }, spec: { addresses: ['10.100.0.0/16'] } });
  await post(metallbPath(NS, 'l2advertisements'), {
    apiVersion: 'metallb.io/v1beta1',
    kind: 'L2Advertisement',
    metadata: { name: 'bench' },
    // n1 only: with memberlist off every Node is a candidate (MetalLB speakersForAds), so the other Nodes would win most Services
    spec: { ipAddressPools: ['bench'], nodeSelectors: [{ matchLabels: { 'kubernetes.io/hostname': NODE } }] },
  });

  let created = 0;
  const createServices = async (n: number): Promise<void> => {
    const t0 = performance.now();
    await pool(
      [...Array(n - created).keys()].map((k) => k + created),
      16,
      async (i) => {
        await post(corePath(SVC_NS, 'services'), {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: nameOf(i) },
          spec: { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false, ports: [{ name: 'http', port: 80, protocol: 'TCP' }], selector: { app: nameOf(i) } },
        });
        await post(`/apis/discovery.k8s.io/v1/namespaces/${SVC_NS}/endpointslices`, {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: { name: `${nameOf(i)}-1`, labels: { 'kubernetes.io/service-name': nameOf(i) } },
          addressType: 'IPv4',
          ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
          endpoints: [{ addresses: [`10.244.${i >> 8}.${i & 255}`], nodeName: NODE, conditions: { ready: true, serving: true, terminating: false } }],
        }).catch(() => {}); // kept from an earlier round
      },
    );
    created = n;
    console.log(`setup: ${n} services (${(performance.now() - t0).toFixed(0)} ms)`);
  };
  const deleteServices = async (): Promise<void> => {
    const items = (await api.request<{ items: Service[] }>({ method: 'GET', path: corePath(SVC_NS, 'services') })).items;
    await pool(items, 16, (s) => api.request({ method: 'DELETE', path: corePath(SVC_NS, 'services', s.metadata!.name!) }).catch(() => {}));
    for (;;) {
      const left = (await api.request<{ items: Service[] }>({ method: 'GET', path: corePath(SVC_NS, 'services') })).items.length;
      if (left === 0) break;
      await sleep(250);
    }
    created = 0;
  };
  /** Speakers only: the Services created and given addresses as a controller would (status written here). */
  const createServicesWithAddresses = async (n: number): Promise<void> => {
    await createServices(n);
    const items = (await api.request<{ items: Service[] }>({ method: 'GET', path: corePath(SVC_NS, 'services') })).items;
    await pool(
      items.filter((s) => !(s.status?.loadBalancer?.ingress ?? []).length),
      16,
      async (s) => {
        const i = Number(s.metadata!.name!.slice(4));
        await api.request({
          method: 'PATCH',
          path: corePath(SVC_NS, 'services', s.metadata!.name!),
          contentType: 'application/merge-patch+json',
          body: { metadata: { annotations: { 'metallb.io/ip-allocated-from-pool': 'bench' } } },
        });
        await api.request({
          method: 'PATCH',
          path: `${corePath(SVC_NS, 'services', s.metadata!.name!)}/status`,
          contentType: 'application/merge-patch+json',
          body: { status: { loadBalancer: { ingress: [{ ip: `10.100.${i >> 8}.${i & 255}`, ipMode: 'VIP' }] } } },
        });
      },
    );
  };
  const withAddress = async (): Promise<number> =>
    (await api.request<{ items: Service[] }>({ method: 'GET', path: corePath(SVC_NS, 'services') })).items.filter((s) => (s.status?.loadBalancer?.ingress ?? []).length > 0).length;

  let nodes = 1;
  /**
   * Nodes n2..n`k` (none has an endpoint): what a kubelet registers, minus images (dropped by the
   * caches anyway). Those past `k`, left by a larger count before, are deleted first (a 1,000-Service
   * run after a 100-Node one ran beside 100 Nodes while it printed 3).
   */
  const createNodes = async (k: number): Promise<void> => {
    await pool(
      [...Array(Math.max(0, nodes - k)).keys()].map((j) => j + k + 1),
      16,
      (j) => api.request({ method: 'DELETE', path: `/api/v1/nodes/n${j}` }).catch(() => {}),
    );
    nodes = Math.min(nodes, Math.max(k, 1));
    await pool(
      [...Array(Math.max(0, k - nodes)).keys()].map((j) => j + nodes + 1),
      16,
      (j) =>
        post('/api/v1/nodes', {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: {
            name: `n${j}`,
            labels: {
              'kubernetes.io/hostname': `n${j}`,
              'kubernetes.io/os': 'linux',
              'kubernetes.io/arch': 'amd64',
              'node.kubernetes.io/instance-type': 'm5.large',
              'topology.kubernetes.io/zone': `zone-${j % 3}`,
            },
          },
          spec: { podCIDR: `10.244.${j}.0/24`, podCIDRs: [`10.244.${j}.0/24`] },
          status: {
            addresses: [
              { type: 'InternalIP', address: `192.0.2.${10 + j}` },
              { type: 'Hostname', address: `n${j}` },
            ],
            capacity: { cpu: '2', memory: '8Gi', pods: '110' },
            allocatable: { cpu: '2', memory: '7Gi', pods: '110' },
            conditions: ['MemoryPressure', 'DiskPressure', 'PIDPressure']
              .map((type) => ({ type, status: 'False', reason: `KubeletHas${type === 'MemoryPressure' ? 'SufficientMemory' : 'No' + type}`, message: 'kubelet is posting ready status' }))
              .concat([{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }]),
            nodeInfo: { kubeletVersion: 'v1.33.0', containerRuntimeVersion: 'containerd://2.0.0', kernelVersion: '6.8.0', osImage: 'Ubuntu 24.04', architecture: 'amd64', operatingSystem: 'linux' },
          },
        }).catch(() => {}),
    );
    nodes = Math.max(nodes, k);
  };

  for (const n of SIZES) {
    // --- controllers
    for (const kind of ROLES.has('controller') ? KINDS : []) {
      await deleteServices();
      await createServices(n);
      const podName = `controller-${kind}-${n}`;
      await createPod(api, { name: podName, labels: { app: 'metallb', component: 'controller' }, podIP: '10.244.0.5' });
      const start = performance.now();
      // Each on its default metrics address, every address of the machine (MetalLB's: --port=0, no
      // --host; metallb-ts's 0.0.0.0): with an IP literal Node would load node:dns (0.85 MiB).
      const c = startController(kind, cluster, { podName, extraArgs: kind === 'metallb-ts' ? ['--metrics-bind-address=0.0.0.0'] : [] });
      const mem = sampler(c);
      let converged = 0;
      while (performance.now() - start < 600_000) {
        if (!c.running) throw new Error(`${c.label} exited\n${c.tail()}`);
        if ((await withAddress()) === n) {
          converged = performance.now() - start;
          break;
        }
        await sleep(250);
      }
      if (!converged) throw new Error(`${c.label}: not converged in 600 s\n${c.tail()}`);
      const { rest, peak } = await settleAndStop(c, mem, podName);
      rows.push(`controller ${kind.padEnd(10)} ${String(n).padStart(5)} services: converged ${(converged / 1000).toFixed(1)} s, peak ${MiB(peak)}, at rest ${MiB(rest)}`);
      console.log(rows.at(-1));
    }
    // --- speakers (the Services hold the addresses the last controller gave them)
    if (!ROLES.has('controller')) await createServicesWithAddresses(n);
    for (const [k, kind] of ROLES.has('speaker') ? NODES.flatMap((k) => KINDS.map((kind) => [k, kind] as const)) : []) {
      await createNodes(k);
      const podName = `speaker-${kind}-${n}-${k}`;
      await createPod(api, { name: podName, nodeName: NODE, labels: { ...SPEAKER_LABELS }, podIP: '192.0.2.11' });
      const start = performance.now();
      const c = startSpeaker(kind, cluster, { node: NODE, podName, netns: bed.speakers[0]!, logLevel: 'info' });
      const mem = sampler(c);
      const announced = (): number => c.lines.filter((l) => l.includes('"serviceAnnounced"')).length;
      await c.waitLine(/"serviceAnnounced"/, 120_000);
      const first = performance.now() - start;
      while (announced() < n && performance.now() - start < 600_000) {
        if (!c.running) throw new Error(`${c.label} exited\n${c.tail()}`);
        await sleep(100);
      }
      const all = performance.now() - start;
      const { rest, peak } = await settleAndStop(c, mem, podName);
      await api.request({ method: 'DELETE', path: metallbPath(NS, 'servicel2statuses') });
      rows.push(
        `speaker    ${kind.padEnd(10)} ${String(n).padStart(5)} services, ${String(k).padStart(3)} nodes: first decision ${(first / 1000).toFixed(2)} s, ${announced()}/${n} announced ${(all / 1000).toFixed(1)} s, peak ${MiB(peak)}, at rest ${MiB(rest)}`,
      );
      console.log(rows.at(-1));
    }
  }
  console.log(`--- daemons' memory (VmHWM/VmRSS), metallb-ts beside MetalLB v0.16.1:\n${rows.join('\n')}`);
} finally {
  api.close();
  await relay.stop();
  await cluster.stop();
  bed.destroy();
  rmSync(dir, { recursive: true, force: true });
}
